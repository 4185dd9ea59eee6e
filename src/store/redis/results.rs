//! Where a Redis crawl's results are collected: one SQLite file on one machine, named by the
//! first process given `--db` and recorded in the crawl's meta, so the results are never
//! split over two files; and whether a collector has begun writing it.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::conn::Redis;
use super::keys::CrawlKeys;
use super::process::hostname;
use super::DistError;

/// Where a crawl's results are collected: the meta field `results`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ResultsFile {
    /// The machine holding the file (its host name).
    pub machine: String,
    /// The file, as an absolute path on that machine.
    pub path: PathBuf,
}

impl ResultsFile {
    /// `path` on this machine.
    fn here(path: &Path) -> ResultsFile {
        ResultsFile {
            machine: hostname(),
            path: std::path::absolute(path).unwrap_or_else(|_| path.to_owned()),
        }
    }

    /// The crawl's results file, if a process claimed one.
    pub(crate) async fn of(redis: &Redis, keys: &CrawlKeys) -> Result<Option<Self>, DistError> {
        let text: Option<String> = redis
            .cmd(redis::cmd("HGET").arg(&keys.meta).arg("results"))
            .await?;
        text.map(|t| {
            serde_json::from_str(&t).map_err(|e| DistError::Corrupt {
                what: "the results file".into(),
                detail: e.to_string(),
            })
        })
        .transpose()
    }

    /// The file, when it is on this machine.
    pub(crate) fn local(&self) -> Option<&Path> {
        (self.machine == hostname()).then_some(self.path.as_path())
    }

    fn shown(&self, id: &str) -> DistError {
        DistError::ResultsElsewhere {
            id: id.to_owned(),
            path: self.path.display().to_string(),
            machine: self.machine.clone(),
        }
    }

    /// The file to read the results of the crawl `keys` from, on this machine; `None`
    /// when its collector has written nothing yet (the file is missing or empty).
    pub(crate) async fn readable(
        redis: &Redis,
        keys: &CrawlKeys,
    ) -> Result<Option<PathBuf>, DistError> {
        let Some(file) = ResultsFile::of(redis, keys).await? else {
            return Err(DistError::NoResults {
                id: keys.id().to_owned(),
            });
        };
        let Some(path) = file.local() else {
            return Err(file.shown(keys.id()));
        };
        Ok(begun(path).then(|| path.to_owned()))
    }
}

/// Whether a collector has made `path` a crawl file: a collector stopped between creating
/// the file and its schema leaves an empty or schema-less file, which holds nothing yet.
pub(super) fn begun(path: &Path) -> bool {
    let Ok(conn) =
        rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
    else {
        return false;
    };
    conn.query_row("PRAGMA user_version", [], |r| r.get::<_, i64>(0))
        .is_ok_and(|v| v > 0)
}

/// Record `path` as where the crawl's results go, unless another file is recorded: then
/// refuse, so the results are never split over two files.
pub(crate) async fn claim(
    redis: &Redis,
    keys: &CrawlKeys,
    path: &Path,
) -> Result<ResultsFile, DistError> {
    let mine = ResultsFile::here(path);
    let _: i64 = redis
        .cmd(
            redis::cmd("HSETNX")
                .arg(&keys.meta)
                .arg("results")
                .arg(serde_json::to_string(&mine).expect("serialising a path")),
        )
        .await?;
    let theirs = ResultsFile::of(redis, keys).await?.unwrap_or(mine.clone());
    if theirs != mine {
        return Err(DistError::OtherResults {
            id: keys.id().to_owned(),
            path: theirs.path.display().to_string(),
            machine: theirs.machine,
        });
    }
    Ok(mine)
}
