//! The `Retry-After` response header (RFC 9110 10.2.3), as sent with 429 and 503.

use std::time::{Duration, SystemTime};

/// Parse a `Retry-After` value: delay-seconds, or an HTTP-date in any of its three forms
/// (IMF-fixdate, RFC 850, asctime; RFC 9110 5.6.7).
///
/// `now` is the response's `Date` header, or the time it was received when it has none;
/// a date is turned into the delay from `now`, and a date in the past gives zero. Returns
/// `None` for anything else (negative or fractional numbers, empty values, lists, garbage),
/// which means "ignore the header". Seconds beyond what a [`Duration`] holds saturate
/// rather than overflow: pass the result through [`capped`].
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim_matches([' ', '\t']);
    if value.is_empty() {
        return None;
    }
    if value.bytes().all(|b| b.is_ascii_digit()) {
        // All digits, so parsing fails only on overflow; such a server means "much later".
        let seconds = value.parse::<u64>().unwrap_or(u64::MAX);
        return Some(Duration::from_secs(seconds));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// The pause trawl takes for a parsed `Retry-After`: the delay, but never more than `max`,
/// so that one server cannot park a host for days.
pub fn capped(delay: Duration, max: Duration) -> Duration {
    delay.min(max)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> SystemTime {
        httpdate::parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT").unwrap()
    }

    #[test]
    fn all_three_date_forms() {
        for value in [
            "Sun, 06 Nov 1994 08:51:37 GMT",
            "Sunday, 06-Nov-94 08:51:37 GMT",
            "Sun Nov  6 08:51:37 1994",
        ] {
            assert_eq!(
                parse_retry_after(value, now()),
                Some(Duration::from_secs(120)),
                "{value}"
            );
        }
    }

    #[test]
    fn surrounding_whitespace_is_allowed() {
        assert_eq!(
            parse_retry_after(" \t30 ", now()),
            Some(Duration::from_secs(30))
        );
    }

    #[test]
    fn signs_and_garbage_are_invalid() {
        for value in [
            "+5",
            "-0",
            "1.5",
            "1e3",
            "5 s",
            " ",
            "\u{0665}",
            "120, 60",
            "Sun, 06 Nov 1994",
        ] {
            assert_eq!(parse_retry_after(value, now()), None, "{value:?}");
        }
    }

    /// Every case of the shared RFC 9110 table; "overflow" rows must saturate so that
    /// [`capped`] brings them down to the maximum pause.
    #[test]
    fn shared_cases() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/retry_after_cases.json"
        );
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let table: serde_json::Value = serde_json::from_str(&text).unwrap();
        let now = httpdate::parse_http_date(table["now"].as_str().unwrap()).unwrap();
        let max = Duration::from_secs(3600);
        let cases = table["cases"].as_array().unwrap();
        assert!(cases.len() >= 13);
        for case in cases {
            let value = case["value"].as_str().unwrap();
            let got = parse_retry_after(value, now);
            match &case["parse"] {
                serde_json::Value::String(s) if s == "invalid" => {
                    assert_eq!(got, None, "{value:?}")
                }
                serde_json::Value::String(s) if s == "overflow" => {
                    let delay = got.unwrap_or_else(|| panic!("{value:?} should saturate"));
                    assert!(delay > max, "{value:?}");
                    assert_eq!(capped(delay, max), max, "{value:?}");
                }
                expected => {
                    let seconds = expected["delay_s"].as_u64().unwrap();
                    assert_eq!(got, Some(Duration::from_secs(seconds)), "{value:?}");
                }
            }
        }
    }

    #[test]
    fn huge_values_saturate_then_cap() {
        let delay = parse_retry_after("99999999999999999999", now()).unwrap();
        assert_eq!(delay, Duration::from_secs(u64::MAX));
        let max = Duration::from_secs(3600);
        assert_eq!(capped(delay, max), max);
        assert_eq!(capped(Duration::from_secs(5), max), Duration::from_secs(5));
    }
}
