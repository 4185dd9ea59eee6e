//! The layers a configuration is settled from, and the check that names a mistyped key.

use std::path::PathBuf;

use super::{ConfigError, ConfigPatch, CrawlConfig};

/// The options of a crawl as given, in the order they apply: each config file (named by its
/// path in errors), then the options set in code or by the CLI's flags ("options"). The
/// builder and `trawl config --show` both lay them over a base with this, so a
/// configuration is settled one way everywhere.
#[derive(Debug, Clone, Default)]
pub struct Layers {
    patches: Vec<(String, ConfigPatch)>,
}

impl Layers {
    /// Read the config `files`, then `options` over them.
    pub fn read(files: &[PathBuf], options: ConfigPatch) -> Result<Layers, ConfigError> {
        let mut patches = Vec::with_capacity(files.len() + 1);
        for path in files {
            patches.push((path.display().to_string(), CrawlConfig::read_patch(path)?));
        }
        patches.push(("options".to_string(), options));
        Ok(Layers { patches })
    }

    /// The configuration these layers give over the defaults: what was given, checked on
    /// its own (validation is per value, so what passes here passes over any base).
    pub fn given(&self) -> Result<CrawlConfig, ConfigError> {
        self.over(None)
    }

    /// The configuration these layers give over `base` (a stored configuration, or the
    /// defaults when `None`).
    pub fn over(&self, base: Option<&CrawlConfig>) -> Result<CrawlConfig, ConfigError> {
        let refs: Vec<(&str, &ConfigPatch)> =
            self.patches.iter().map(|(o, p)| (o.as_str(), p)).collect();
        CrawlConfig::layered(base, &refs)
    }
}

/// Refuse a key no option has, naming the closest known one when there is one.
pub(super) fn check_keys(origin: &str, patch: &ConfigPatch) -> Result<(), ConfigError> {
    let known = CrawlConfig::keys();
    for key in patch.keys() {
        if known.contains(key) {
            continue;
        }
        let message = match did_you_mean(key, &known) {
            Some(k) => format!("unknown key `{key}`; did you mean `{k}`?"),
            None => format!("unknown key `{key}`"),
        };
        return Err(ConfigError::Invalid {
            origin: origin.to_string(),
            message,
        });
    }
    Ok(())
}

/// The known key closest to `key`, when it is close enough to be a typo (`_` for `-`,
/// a letter missing, doubled or swapped) rather than a different word.
fn did_you_mean<'a>(key: &str, known: &'a [String]) -> Option<&'a str> {
    let key = key.to_ascii_lowercase().replace('_', "-");
    known
        .iter()
        .map(|k| (strsim::normalized_damerau_levenshtein(&key, k), k))
        .filter(|(score, _)| *score >= 0.7)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, k)| k.as_str())
}
