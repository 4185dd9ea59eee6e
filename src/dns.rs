//! A DNS cache shared by every connection of a crawl.
//!
//! Connections are pooled, but a crawl over many hosts (or one whose connections are
//! closed by the server) would otherwise ask the system resolver again for every new
//! connection. Answers are kept for [`TTL`]; failures are not cached, so a transient DNS
//! fault is retried with the request.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use dashmap::DashMap;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};

/// How long an answer is reused. System resolvers do not expose record TTLs, so this is a
/// fixed, short compromise.
pub const TTL: Duration = Duration::from_secs(300);

/// Caches `getaddrinfo` answers (through tokio's blocking pool).
#[derive(Debug, Default, Clone)]
pub struct CachingResolver {
    cache: Arc<DashMap<String, (Vec<SocketAddr>, Instant)>>,
    lookups: Arc<std::sync::atomic::AtomicU64>,
}

impl CachingResolver {
    /// An empty cache.
    pub fn new() -> CachingResolver {
        CachingResolver::default()
    }

    /// System lookups made so far (cache misses).
    #[cfg(test)]
    pub fn lookups(&self) -> u64 {
        self.lookups.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The addresses of `host`, from the cache when fresh.
    pub async fn lookup(&self, host: &str) -> std::io::Result<Vec<SocketAddr>> {
        if let Some(hit) = self.cache.get(host) {
            if hit.1.elapsed() < TTL {
                return Ok(hit.0.clone());
            }
        }
        self.lookups
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // Port 0: reqwest sets the real port on the addresses it gets back.
        let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host, 0)).await?.collect();
        self.cache
            .insert(host.to_string(), (addrs.clone(), Instant::now()));
        Ok(addrs)
    }
}

impl Resolve for CachingResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let this = self.clone();
        Box::pin(async move {
            let addrs = this.lookup(name.as_str()).await?;
            Ok(Box::new(addrs.into_iter()) as Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn second_lookup_is_served_from_the_cache() {
        let r = CachingResolver::new();
        let a = r.lookup("localhost").await.unwrap();
        assert!(!a.is_empty());
        let b = r.lookup("localhost").await.unwrap();
        assert_eq!(a, b);
        assert_eq!(r.lookups(), 1);
        assert!(r.lookup("no-such-host.invalid").await.is_err());
        assert_eq!(r.lookups(), 2, "failures are not cached");
    }
}
