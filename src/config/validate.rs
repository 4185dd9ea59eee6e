//! The allowed range of every option value.

use std::fmt;

use super::{ByteSize, ConfigError, CrawlConfig};

/// Split `"Name: value"` into a valid header name and value.
pub fn parse_header(
    h: &str,
) -> Option<(reqwest::header::HeaderName, reqwest::header::HeaderValue)> {
    let (name, value) = h.split_once(':')?;
    let name = reqwest::header::HeaderName::from_bytes(name.trim().as_bytes()).ok()?;
    let value = reqwest::header::HeaderValue::from_str(value.trim()).ok()?;
    Some((name, value))
}

impl CrawlConfig {
    /// Check every value is in range.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.check_numbers()?;
        self.check_text()
    }

    fn check_numbers(&self) -> Result<(), ConfigError> {
        range(
            "concurrency",
            self.concurrency,
            1,
            10_000,
            "from 1 to 10000",
        )?;
        range("per-host", self.per_host, 1, 10_000, "from 1 to 10000")?;
        range(
            "max-body",
            self.max_body,
            ByteSize(1024),
            ByteSize(4 << 30),
            "from 1KiB to 4GiB",
        )?;
        range("max-redirects", self.max_redirects, 0, 100, "from 0 to 100")?;
        if self.visited_memory.0 != 0 {
            range(
                "visited-memory",
                self.visited_memory,
                ByteSize(64 << 10),
                ByteSize(1 << 40),
                "0 (no limit) or from 64KiB to 1TiB",
            )?;
        }
        for (key, d) in [
            ("connect-timeout", self.connect_timeout),
            ("read-timeout", self.read_timeout),
            ("timeout", self.timeout),
            ("lease", self.lease),
        ] {
            if d.is_zero() {
                return Err(ConfigError::OutOfRange {
                    key,
                    value: "0s".into(),
                    expected: "more than 0s, e.g. \"10s\"",
                });
            }
        }
        Ok(())
    }

    fn check_text(&self) -> Result<(), ConfigError> {
        for p in &self.proxies {
            if reqwest::Proxy::all(p.as_str()).is_err() || url::Url::parse(p).is_err() {
                return Err(ConfigError::OutOfRange {
                    key: "proxies",
                    value: format!("{p:?}"),
                    expected:
                        "proxy URLs such as \"http://127.0.0.1:3128\" or \"socks5://10.0.0.2:1080\"",
                });
            }
        }
        if !self.metrics_addr.is_empty()
            && self.metrics_addr.parse::<std::net::SocketAddr>().is_err()
        {
            return Err(ConfigError::OutOfRange {
                key: "metrics-addr",
                value: format!("{:?}", self.metrics_addr),
                expected: "an address and port such as \"127.0.0.1:9898\", or \"\" for none",
            });
        }
        self.check_ui()?;
        for h in &self.headers {
            if parse_header(h).is_none() {
                return Err(ConfigError::OutOfRange {
                    key: "headers",
                    value: format!("{h:?}"),
                    expected: "\"Name: value\" with a valid header name and value",
                });
            }
        }
        if self.user_agent.trim().is_empty()
            || reqwest::header::HeaderValue::from_str(&self.user_agent).is_err()
        {
            return Err(ConfigError::OutOfRange {
                key: "user-agent",
                value: format!("{:?}", self.user_agent),
                expected: "a non-empty header value of visible ASCII",
            });
        }
        Ok(())
    }

    /// `ui` is an address, and one other than loopback only with a token: the page shows
    /// the whole crawl to anyone who reaches it.
    fn check_ui(&self) -> Result<(), ConfigError> {
        if self.ui.is_empty() {
            return Ok(());
        }
        // The rule `trawl serve` applies too, written once in `ui`.
        let token = Some(self.ui_token.as_str()).filter(|t| !t.is_empty());
        let expected = match crate::ui::check_bind(&self.ui, token) {
            Ok(_) => return Ok(()),
            Err(crate::ui::UiError::NeedsToken { .. }) => {
                "a loopback address unless a token is set: to serve on another address pass \
                 --ui-token TOKEN (ui-token), which every request must carry"
            }
            Err(_) => "an address and port such as \"127.0.0.1:9899\", or \"\" for none",
        };
        Err(ConfigError::OutOfRange {
            key: "ui",
            value: format!("{:?}", self.ui),
            expected,
        })
    }
}

fn range<T: PartialOrd + fmt::Display>(
    key: &'static str,
    v: T,
    lo: T,
    hi: T,
    expected: &'static str,
) -> Result<(), ConfigError> {
    if v < lo || v > hi {
        return Err(ConfigError::OutOfRange {
            key,
            value: v.to_string(),
            expected,
        });
    }
    Ok(())
}
