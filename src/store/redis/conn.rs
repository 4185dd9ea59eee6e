//! The connection to Redis, one server or a cluster, and the rule every call follows
//! while Redis is away: wait and try again, with backoff, until it answers or the crawl
//! is stopped. Nothing is dropped: the caller keeps its work until the call succeeds.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::{
    Cmd, FromRedisValue, RedisError, RedisFuture, RetryMethod, Script, ToRedisArgs, Value,
};
use tokio_util::sync::CancellationToken;

use super::DistError;

/// Longest wait between two tries while Redis is unreachable.
const MAX_BACKOFF: Duration = Duration::from_secs(2);

/// A multiplexed connection: clones share it, and concurrent calls are pipelined on the
/// wire.
#[derive(Clone)]
pub enum Conn {
    /// One server (reconnects by itself).
    Single(ConnectionManager),
    /// A cluster (follows MOVED/ASK and refreshes its slot map by itself).
    Cluster(ClusterConnection),
}

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Conn::Single(c) => c.req_packed_command(cmd),
            Conn::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a redis::Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Conn::Single(c) => c.req_packed_commands(pipeline, offset, count),
            Conn::Cluster(c) => c.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Conn::Single(c) => c.get_db(),
            Conn::Cluster(c) => c.get_db(),
        }
    }
}

/// Where the crawl lives: `redis://HOST:PORT/DB` for one server; for a cluster, the
/// addresses of one or more of its nodes joined by commas
/// (`redis+cluster://h1:7000,h2:7001`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreUrl {
    /// One server.
    Single(String),
    /// Seed nodes of a cluster.
    Cluster(Vec<String>),
}

impl StoreUrl {
    /// Parse a `--store` value.
    pub fn parse(text: &str) -> Result<StoreUrl, DistError> {
        let bad = |why: &str| DistError::BadStore {
            store: text.to_owned(),
            why: why.to_owned(),
        };
        if let Some(rest) = text.strip_prefix("redis+cluster://") {
            let nodes: Vec<String> = rest
                .split(',')
                .filter(|n| !n.trim().is_empty())
                .map(|n| format!("redis://{}", n.trim()))
                .collect();
            if nodes.is_empty() {
                return Err(bad("no node address after redis+cluster://"));
            }
            for n in &nodes {
                redis::Client::open(n.as_str()).map_err(|e| bad(&e.to_string()))?;
            }
            return Ok(StoreUrl::Cluster(nodes));
        }
        if text.starts_with("redis://") || text.starts_with("rediss://") {
            redis::Client::open(text).map_err(|e| bad(&e.to_string()))?;
            return Ok(StoreUrl::Single(text.to_owned()));
        }
        Err(bad(
            "expected redis://HOST:PORT[/DB] or redis+cluster://HOST:PORT[,HOST:PORT...]",
        ))
    }
}

/// A connection plus the stop signal that ends its waits.
#[derive(Clone)]
pub struct Redis {
    conn: Conn,
    url: StoreUrl,
    cancel: CancellationToken,
    /// Commands sent (a script call or a pipeline's command counts one; retries too).
    sent: Arc<AtomicU64>,
    /// Calls that failed and were tried again: Redis went away, and may have come back
    /// without what it was told.
    interruptions: Arc<AtomicU64>,
}

impl Redis {
    /// Connect, waiting (with backoff) while Redis is unreachable, until `cancel`.
    pub async fn connect(url: &StoreUrl, cancel: CancellationToken) -> Result<Redis, DistError> {
        let mut wait = Duration::from_millis(100);
        let mut warned = false;
        loop {
            let attempt = match url {
                StoreUrl::Single(u) => {
                    let client = redis::Client::open(u.as_str()).map_err(DistError::Redis)?;
                    let config = ConnectionManagerConfig::new()
                        .set_connection_timeout(Some(Duration::from_secs(5)))
                        .set_response_timeout(Some(Duration::from_secs(30)))
                        .set_max_delay(MAX_BACKOFF);
                    client
                        .get_connection_manager_with_config(config)
                        .await
                        .map(Conn::Single)
                }
                StoreUrl::Cluster(nodes) => {
                    let client = ClusterClient::builder(nodes.clone())
                        .connection_timeout(Duration::from_secs(5))
                        .response_timeout(Duration::from_secs(30))
                        .build()
                        .map_err(DistError::Redis)?;
                    client.get_async_connection().await.map(Conn::Cluster)
                }
            };
            match attempt {
                Ok(conn) => {
                    if warned {
                        tracing::warn!("Redis is reachable again");
                    }
                    let redis = Redis {
                        conn,
                        url: url.clone(),
                        cancel,
                        sent: Arc::new(AtomicU64::new(0)),
                        interruptions: Arc::new(AtomicU64::new(0)),
                    };
                    redis.check_version().await?;
                    return Ok(redis);
                }
                Err(e) if !retryable(&e) => return Err(DistError::Redis(e)),
                Err(e) => {
                    if !warned {
                        tracing::warn!("cannot reach Redis ({e}); waiting for it");
                        warned = true;
                    }
                    tokio::select! {
                        _ = tokio::time::sleep(wait) => {}
                        _ = cancel.cancelled() => return Err(DistError::Unreachable(e.to_string())),
                    }
                    wait = (wait * 2).min(MAX_BACKOFF);
                }
            }
        }
    }

    /// Refuse a server older than the scripts need, before the crawl touches it. A cluster
    /// answers `INFO` with every master's text; each must be new enough.
    async fn check_version(&self) -> Result<(), DistError> {
        let info: redis::Value = self.cmd(redis::cmd("INFO").arg("server")).await?;
        let mut texts = Vec::new();
        info_texts(&info, &mut texts);
        let versions = texts
            .iter()
            .flat_map(|t| t.lines())
            .filter_map(|l| l.strip_prefix("redis_version:").map(str::trim));
        // A server that does not say is taken at its word (a proxy, a fork).
        for v in versions {
            if !new_enough(v) {
                return Err(DistError::OldRedis(v.to_owned()));
            }
        }
        Ok(())
    }

    /// A connection of its own to the same Redis, counted with this one: for a caller
    /// whose large replies would hold up everyone else's on a shared connection (replies
    /// on one connection come in order).
    pub async fn another(&self) -> Result<Redis, DistError> {
        let fresh = Redis::connect(&self.url, self.cancel.clone()).await?;
        Ok(Redis {
            conn: fresh.conn,
            url: fresh.url,
            cancel: fresh.cancel,
            sent: Arc::clone(&self.sent),
            interruptions: Arc::clone(&self.interruptions),
        })
    }

    /// Whether this is a cluster.
    pub fn is_cluster(&self) -> bool {
        matches!(self.conn, Conn::Cluster(_))
    }

    /// The stop signal.
    pub fn cancel(&self) -> &CancellationToken {
        &self.cancel
    }

    /// Commands sent so far by every clone of this connection.
    pub fn sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }

    /// How many calls of every clone of this connection failed and were tried again.
    pub fn interruptions(&self) -> u64 {
        self.interruptions.load(Ordering::Relaxed)
    }

    /// Run `script` on `keys` (all in one slot) with `args`, trying again while Redis is
    /// away. A script must be safe to run twice: a reply lost in a disconnection is
    /// retried.
    pub async fn script<T: FromRedisValue, A: ToRedisArgs>(
        &self,
        script: &Script,
        keys: &[&str],
        args: &[A],
    ) -> Result<T, DistError> {
        let mut inv = script.prepare_invoke();
        for k in keys {
            inv.key(*k);
        }
        for a in args {
            inv.arg(a);
        }
        self.retrying(1, |mut conn| {
            let inv = &inv;
            async move { inv.invoke_async(&mut conn).await }
        })
        .await
    }

    /// Run one command, trying again while Redis is away.
    pub async fn cmd<T: FromRedisValue>(&self, cmd: &Cmd) -> Result<T, DistError> {
        self.retrying(
            1,
            |mut conn| async move { cmd.query_async(&mut conn).await },
        )
        .await
    }

    /// Run a pipeline (every key in one slot), trying again while Redis is away.
    pub async fn pipe<T: FromRedisValue>(&self, pipe: &redis::Pipeline) -> Result<T, DistError> {
        let n = pipe.cmd_iter().count() as u64;
        self.retrying(
            n,
            |mut conn| async move { pipe.query_async(&mut conn).await },
        )
        .await
    }

    /// Like [`Redis::cmd`] but gives up at once: for reads where a stale answer is fine.
    pub async fn cmd_once<T: FromRedisValue>(&self, cmd: &Cmd) -> Result<T, DistError> {
        let mut conn = self.conn.clone();
        self.sent.fetch_add(1, Ordering::Relaxed);
        cmd.query_async(&mut conn).await.map_err(DistError::Redis)
    }

    async fn retrying<'a, T, F, Fut>(&'a self, commands: u64, call: F) -> Result<T, DistError>
    where
        F: Fn(Conn) -> Fut + 'a,
        Fut: std::future::Future<Output = Result<T, RedisError>> + 'a,
    {
        let mut wait = Duration::from_millis(50);
        let mut warned = false;
        loop {
            self.sent.fetch_add(commands, Ordering::Relaxed);
            match call(self.conn.clone()).await {
                Ok(v) => {
                    if warned {
                        tracing::warn!("Redis answers again; carrying on");
                    }
                    return Ok(v);
                }
                Err(e) if !retryable(&e) => return Err(DistError::Redis(e)),
                Err(e) => {
                    self.interruptions.fetch_add(1, Ordering::Relaxed);
                    if !warned {
                        tracing::warn!("Redis call failed ({e}); pausing and trying again");
                        warned = true;
                    }
                    tokio::select! {
                        _ = tokio::time::sleep(wait) => {}
                        _ = self.cancel.cancelled() => return Err(DistError::Unreachable(e.to_string())),
                    }
                    wait = (wait * 2).min(MAX_BACKOFF);
                }
            }
        }
    }
}

/// The oldest Redis the scripts run on: they pop a batch with `LPOP key count` (6.2).
const OLDEST: (u32, u32) = (6, 2);

/// Whether `version` (`MAJOR.MINOR.PATCH`) is at least [`OLDEST`].
fn new_enough(version: &str) -> bool {
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let major = parts.next().unwrap_or(0);
    let minor = parts.next().unwrap_or(0);
    (major, minor) >= OLDEST
}

/// The texts in an `INFO` reply: one server's, or a cluster's map of them.
fn info_texts(v: &redis::Value, out: &mut Vec<String>) {
    match v {
        redis::Value::BulkString(b) => out.push(String::from_utf8_lossy(b).into_owned()),
        redis::Value::SimpleString(s) => out.push(s.clone()),
        redis::Value::VerbatimString { text, .. } => out.push(text.clone()),
        redis::Value::Array(items) | redis::Value::Set(items) => {
            items.iter().for_each(|i| info_texts(i, out))
        }
        redis::Value::Map(pairs) => pairs.iter().for_each(|(_, i)| info_texts(i, out)),
        _ => {}
    }
}

/// Whether waiting may help: connection trouble, a server loading its data, a cluster
/// changing hands. Script and type errors are not retried (they would fail again).
fn retryable(e: &RedisError) -> bool {
    !matches!(e.retry_method(), RetryMethod::NoRetry) || e.is_timeout() || e.is_connection_refusal()
}

#[cfg(test)]
mod tests {
    use super::new_enough;

    #[test]
    fn servers_older_than_6_2_are_refused() {
        for old in ["6.0.16", "5.0.14", "6.1.9", "garbage"] {
            assert!(!new_enough(old), "{old}");
        }
        for ok in ["6.2.0", "6.2.14", "7.0.15", "7.4.1", "10.0"] {
            assert!(new_enough(ok), "{ok}");
        }
    }
}
