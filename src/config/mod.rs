//! The crawl's options: one plain struct, its defaults, validation and TOML.
//!
//! Every option has one name, used as the key in `config/default.toml`, as the CLI flag
//! (`--per-host`) and as the builder method (`per_host`), and is written once, in the list
//! of `options.rs` that the struct, the builder and the CLI are made from. This module never
//! sees clap: the binary and the library builder both produce a [`ConfigPatch`] of the
//! options they were given, and [`CrawlConfig::layered`] lays patches over the defaults (or
//! over the configuration a crawl was started with, when it resumes).
//!
//! - `options`: the list of options, with their types, defaults and docs.
//! - `flag`: what `trawl crawl` makes of an option, as data the binary gives clap.
//! - `values`: the value types of options that are not plain Rust types ([`ByteSize`],
//!   [`RateLimit`]) and how an optional path is written.
//! - `layers`: [`Layers`], the files and flags a crawl was given, and unknown keys.
//! - `validate`: the range of every value.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::proxy::Rotation;
use crate::url_norm::ScopeMode;

mod flag;
mod layers;
mod options;
#[cfg(test)]
mod tests;
mod validate;
mod values;

#[doc(hidden)]
pub use flag::{Flag, FlagKind};
use layers::check_keys;
pub use layers::Layers;
#[doc(hidden)]
pub use options::kebab_case;
pub use validate::parse_header;
pub use values::{ByteSize, RateLimit};

use values::optional_path;

/// Options given explicitly, as TOML values keyed by option name. Later patches win.
pub type ConfigPatch = toml::Table;

/// Why a configuration could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The config file could not be read.
    #[error("cannot read config file {path}: {source}; check the path given to --config")]
    Read {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        source: std::io::Error,
    },
    /// The config file is not valid TOML.
    #[error("config file {path} is not valid TOML: {message}")]
    Syntax {
        /// The file.
        path: PathBuf,
        /// The parser's message, with line and column.
        message: String,
    },
    /// A key is unknown or a value has the wrong type.
    #[error("{origin}: {message}; see config/default.toml for every key and its type")]
    Invalid {
        /// Where the bad value came from.
        origin: String,
        /// What is wrong with it.
        message: String,
    },
    /// A value is out of its allowed range.
    #[error("{key} = {value} is out of range: {expected}")]
    OutOfRange {
        /// The option.
        key: &'static str,
        /// The value given.
        value: String,
        /// The allowed range.
        expected: &'static str,
    },
}

/// Turns the entries of [`crawl_options!`](crate::crawl_options) into [`CrawlConfig`] and
/// its defaults.
macro_rules! config_struct {
    ($(
        $(#[doc = $doc:literal])*
        $(#[serde $serde:tt])*
        $name:ident: $ty:ty = $default:expr,
        $(builder: $arg:ty,)?
        cli: $cli:expr;
    )*) => {
        /// Everything that shapes a crawl. Field names are the option names (kebab-case in
        /// TOML and on the command line). Defaults match `config/default.toml`.
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
        pub struct CrawlConfig {
            $(
                $(#[doc = $doc])*
                $(#[serde $serde])*
                pub $name: $ty,
            )*
        }

        impl Default for CrawlConfig {
            fn default() -> Self {
                CrawlConfig {
                    $($name: $default,)*
                }
            }
        }
    };
}

crate::crawl_options!(config_struct);

/// The default User-Agent: names trawl and its version.
pub fn default_user_agent() -> String {
    format!(
        "trawl/{} (+https://crates.io/crates/trawl)",
        env!("CARGO_PKG_VERSION")
    )
}

impl CrawlConfig {
    /// Lay `patches` in order over `base` (a stored configuration, or the defaults when
    /// `None`), then validate. `origins` names each patch for error messages.
    pub fn layered(
        base: Option<&CrawlConfig>,
        patches: &[(&str, &ConfigPatch)],
    ) -> Result<CrawlConfig, ConfigError> {
        let mut table = match base {
            Some(c) => c.to_table(),
            None => ConfigPatch::new(),
        };
        for (origin, patch) in patches {
            // Check each patch alone first so an error names where the bad key came from.
            check_keys(origin, patch)?;
            toml::Value::Table((*patch).clone())
                .try_into::<CrawlConfig>()
                .map_err(|e| ConfigError::Invalid {
                    origin: origin.to_string(),
                    message: e.message().to_string(),
                })?;
            for (k, v) in patch.iter() {
                table.insert(k.clone(), v.clone());
            }
        }
        let config: CrawlConfig =
            toml::Value::Table(table)
                .try_into()
                .map_err(|e: toml::de::Error| ConfigError::Invalid {
                    origin: "configuration".into(),
                    message: e.message().to_string(),
                })?;
        config.validate()?;
        Ok(config)
    }

    /// Read a TOML file as a patch (keys are checked when it is layered).
    pub fn read_patch(path: &Path) -> Result<ConfigPatch, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        text.parse::<ConfigPatch>()
            .map_err(|e| ConfigError::Syntax {
                path: path.to_owned(),
                message: e.to_string().trim().replace('\n', " "),
            })
    }

    /// This configuration as TOML text (what `trawl` stores with a crawl).
    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("CrawlConfig always serialises")
    }

    /// Parse what [`CrawlConfig::to_toml`] wrote.
    pub fn from_toml(text: &str) -> Result<CrawlConfig, ConfigError> {
        let config: CrawlConfig = toml::from_str(text).map_err(|e| ConfigError::Invalid {
            origin: "stored configuration".into(),
            message: e.message().to_string(),
        })?;
        config.validate()?;
        Ok(config)
    }

    /// Every option name, as written in TOML and on the command line (after `--`).
    /// Derived from the defaults, so it cannot drift from the struct.
    pub fn keys() -> Vec<String> {
        CrawlConfig::default().to_table().keys().cloned().collect()
    }

    fn to_table(&self) -> ConfigPatch {
        match toml::Value::try_from(self).expect("CrawlConfig always serialises") {
            toml::Value::Table(t) => t,
            _ => unreachable!("a struct serialises to a table"),
        }
    }

    /// The least spacing between requests to one host from `delay` and `rate-limit`
    /// (robots.txt may ask for more).
    pub fn host_interval(&self) -> Duration {
        self.delay.max(self.rate_limit.interval())
    }
}
