//! `trawl config --show`: the configuration `trawl crawl` would use with the same arguments.

use std::path::PathBuf;
use std::process::ExitCode;

use trawl::config::{ConfigError, Layers};
use trawl::CrawlConfig;

use crate::cli::{ConfigArgs, ConfigLayers};
use crate::exit::{fail, with_causes, BAD_INPUT, FAILED, SUCCESS};

impl ConfigLayers {
    /// The configuration a crawl with these layers uses over `base` (the stored
    /// configuration when resuming, else the defaults), settled as the builder settles it.
    fn effective(&self, base: Option<&CrawlConfig>) -> Result<CrawlConfig, ConfigError> {
        let files: Vec<PathBuf> = self.config.iter().cloned().collect();
        let layers = Layers::read(&files, self.options.to_patch())?;
        layers.given()?;
        layers.over(base)
    }
}

pub(crate) fn config(args: ConfigArgs) -> ExitCode {
    match show_config(&args) {
        Ok(text) => {
            print!("{text}");
            ExitCode::from(SUCCESS)
        }
        Err(e) => {
            let failed = e
                .downcast_ref::<trawl::store::StoreError>()
                .is_some_and(|s| !s.is_usage());
            fail(if failed { FAILED } else { BAD_INPUT }, with_causes(&e))
        }
    }
}

/// The effective configuration as TOML, with a comment header naming its layers. Reads
/// `--db` only when it exists, and read-only.
pub(crate) fn show_config(args: &ConfigArgs) -> anyhow::Result<String> {
    let mut header =
        vec!["# The configuration `trawl crawl` uses with these arguments.".to_string()];
    let mut stored = None;
    match &args.db {
        None => header.push("# base: the defaults (no --db given)".into()),
        Some(db) if !db.exists() || std::fs::metadata(db)?.len() == 0 => header.push(format!(
            "# base: the defaults ({} holds no crawl yet: a crawl would start there)",
            db.display()
        )),
        Some(db) => match trawl::status::stored_crawl(db)? {
            None => header.push(format!(
                "# base: the defaults ({} holds no crawl yet)",
                db.display()
            )),
            Some(row) => {
                let state = if row.finished_at.is_some() {
                    "a finished crawl: `trawl crawl` does nothing without --recrawl, which keeps this configuration"
                } else {
                    "an unfinished crawl: `trawl crawl` resumes it with this configuration"
                };
                header.push(format!(
                    "# base: the configuration stored in {} ({state})",
                    db.display()
                ));
                stored = Some(CrawlConfig::from_toml(&row.config)?);
            }
        },
    }
    if let Some(path) = &args.layers.config {
        header.push(format!("# then: --config {}", path.display()));
    }
    let flags = args.layers.options.to_patch();
    if !flags.is_empty() {
        let keys: Vec<&str> = flags.keys().map(String::as_str).collect();
        header.push(format!("# then: the flags setting {}", keys.join(", ")));
    }
    let config = args.layers.effective(stored.as_ref())?;
    Ok(format!("{}\n\n{}", header.join("\n"), config.to_toml()))
}
