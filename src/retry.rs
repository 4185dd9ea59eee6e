//! Retries: which faults are worth another attempt, and how long to wait before it.
//!
//! Only transient faults are retried: timeouts, refused or reset connections, DNS
//! failures, and the statuses that say "not now" (408, 429, 500, 502, 503, 504). The wait
//! is exponential with full jitter (a uniform random wait up to base * 2^attempt), so many
//! URLs failing together do not come back together. A 429 or 503 also pauses the whole
//! host: its `Retry-After` (capped) when present, else the same backoff.

use std::time::{Duration, SystemTime};

use crate::fetch::FetchError;

/// The longest backoff between two attempts, whatever the base and attempt count.
pub const MAX_BACKOFF: Duration = Duration::from_secs(600);

/// Retry settings from the configuration.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    /// Attempts per URL, the first included.
    pub max_attempts: u32,
    /// Base of the exponential backoff.
    pub base: Duration,
    /// Cap on a server's `Retry-After`.
    pub max_retry_after: Duration,
}

impl RetryPolicy {
    /// Whether a URL that has had `attempts` attempts (this one included) may have another.
    pub fn may_retry(&self, attempts: u32) -> bool {
        attempts < self.max_attempts
    }

    /// A random wait before attempt number `attempts + 1`.
    pub fn backoff(&self, attempts: u32) -> Duration {
        let ceiling = self
            .base
            .saturating_mul(1u32.checked_shl(attempts.min(31)).unwrap_or(u32::MAX))
            .min(MAX_BACKOFF);
        let ms = ceiling.as_millis().min(u128::from(u64::MAX)) as u64;
        Duration::from_millis(fastrand::u64(0..=ms))
    }

    /// How long a host asked to be left alone: its `Retry-After` (relative to its `Date`,
    /// or to now), capped; `None` without a usable header.
    pub fn retry_after(&self, value: Option<&str>, date: Option<&str>) -> Option<Duration> {
        let now = date
            .and_then(|d| httpdate::parse_http_date(d).ok())
            .unwrap_or_else(SystemTime::now);
        let delay = crate::politeness::retry_after::parse_retry_after(value?, now)?;
        Some(crate::politeness::retry_after::capped(
            delay,
            self.max_retry_after,
        ))
    }
}

/// Statuses that mean "try again later".
pub fn is_transient_status(status: u16) -> bool {
    matches!(status, 408 | 429 | 500 | 502 | 503 | 504)
}

/// Statuses that pause the whole host.
pub fn pauses_host(status: u16) -> bool {
    matches!(status, 429 | 503)
}

/// Network faults worth another attempt.
pub fn is_transient_error(e: &FetchError) -> bool {
    matches!(
        e,
        FetchError::Timeout(_) | FetchError::Dns(_) | FetchError::Connect(_) | FetchError::Body(_)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_stays_under_its_ceiling() {
        let p = RetryPolicy {
            max_attempts: 3,
            base: Duration::from_millis(100),
            max_retry_after: Duration::from_secs(60),
        };
        for attempt in 0..40 {
            let ceiling = Duration::from_millis(100)
                .saturating_mul(1u32.checked_shl(attempt.min(31)).unwrap_or(u32::MAX))
                .min(MAX_BACKOFF);
            for _ in 0..20 {
                assert!(p.backoff(attempt) <= ceiling);
            }
        }
        assert!(p.may_retry(2));
        assert!(!p.may_retry(3));
    }

    #[test]
    fn retry_after_is_capped_and_relative_to_date() {
        let p = RetryPolicy {
            max_attempts: 3,
            base: Duration::from_secs(1),
            max_retry_after: Duration::from_secs(60),
        };
        assert_eq!(p.retry_after(Some("5"), None), Some(Duration::from_secs(5)));
        assert_eq!(
            p.retry_after(Some("99999"), None),
            Some(Duration::from_secs(60))
        );
        assert_eq!(
            p.retry_after(
                Some("Sun, 06 Nov 1994 08:49:47 GMT"),
                Some("Sun, 06 Nov 1994 08:49:37 GMT")
            ),
            Some(Duration::from_secs(10))
        );
        assert_eq!(p.retry_after(Some("soon"), None), None);
        assert_eq!(p.retry_after(None, None), None);
    }

    #[test]
    fn transient_statuses() {
        for s in [408, 429, 500, 502, 503, 504] {
            assert!(is_transient_status(s));
        }
        for s in [200, 301, 404, 410, 501] {
            assert!(!is_transient_status(s));
        }
    }
}
