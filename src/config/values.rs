//! Option values that are not plain Rust types: how they are written in TOML and on the
//! command line, and read back.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// A byte count that reads as `10485760`, `"10MiB"`, `"512 KB"` or `"1g"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct ByteSize(pub u64);

impl FromStr for ByteSize {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        let split = s
            .find(|c: char| !c.is_ascii_digit() && c != '.')
            .unwrap_or(s.len());
        let (num, unit) = s.split_at(split);
        let num: f64 = num
            .parse()
            .map_err(|_| format!("{s:?} is not a size; write e.g. 10MiB or 1048576"))?;
        let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
            "" | "b" => 1,
            "k" | "kb" | "kib" => 1 << 10,
            "m" | "mb" | "mib" => 1 << 20,
            "g" | "gb" | "gib" => 1 << 30,
            other => {
                return Err(format!(
                    "unknown size unit {other:?}; use B, KiB, MiB or GiB"
                ))
            }
        };
        Ok(ByteSize((num * mult as f64) as u64))
    }
}

impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        if b >= 1 << 20 && b.is_multiple_of(1 << 20) {
            write!(f, "{}MiB", b >> 20)
        } else if b >= 1 << 10 && b.is_multiple_of(1 << 10) {
            write!(f, "{}KiB", b >> 10)
        } else {
            write!(f, "{b}")
        }
    }
}

impl Serialize for ByteSize {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Int(u64),
            Str(String),
        }
        match Raw::deserialize(d)? {
            Raw::Int(n) => Ok(ByteSize(n)),
            Raw::Str(s) => s.parse().map_err(serde::de::Error::custom),
        }
    }
}

/// An optional path that is `""` when absent, so the key always exists in TOML (which has
/// no null) and a flag or file can turn it off again.
pub(super) mod optional_path {
    use std::path::PathBuf;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &Option<PathBuf>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(
            &v.as_deref()
                .map(|p| p.to_string_lossy())
                .unwrap_or_default(),
        )
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<PathBuf>, D::Error> {
        let s = String::deserialize(d)?;
        Ok((!s.is_empty()).then(|| PathBuf::from(s)))
    }
}

/// A per-host request budget: `requests` per `window`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimit {
    /// Requests allowed per window; 0 means no limit.
    pub requests: u32,
    /// The window.
    pub window: Duration,
}

impl RateLimit {
    /// No limit.
    pub const NONE: RateLimit = RateLimit {
        requests: 0,
        window: Duration::from_secs(1),
    };

    /// The even spacing between requests this limit allows (zero when unlimited).
    pub fn interval(&self) -> Duration {
        if self.requests == 0 {
            Duration::ZERO
        } else {
            self.window / self.requests
        }
    }
}

impl FromStr for RateLimit {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad =
            || format!("{s:?} is not a rate; write requests/window, e.g. \"120/1m\" or \"5/1s\"");
        let (n, w) = s.split_once('/').ok_or_else(bad)?;
        let requests = n.trim().parse().map_err(|_| bad())?;
        let window = humantime::parse_duration(w.trim()).map_err(|_| bad())?;
        if window.is_zero() {
            return Err(bad());
        }
        Ok(RateLimit { requests, window })
    }
}

impl fmt::Display for RateLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}/{}",
            self.requests,
            humantime::format_duration(self.window)
        )
    }
}

impl Serialize for RateLimit {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for RateLimit {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}
