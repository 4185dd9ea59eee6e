//! Failpoints for crash tests: `TRAWL_FAILPOINT=after-fetch:N` aborts the process after the
//! Nth page is fetched and before its result reaches the store; `after-commit:N` right
//! after the store's Nth commit. Unset (always, outside tests) it costs one load of an
//! initialised `OnceLock` per page or commit.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// Where a failpoint can fire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Point {
    /// A page fetched, its result not yet handed to the store writer.
    AfterFetch,
    /// A store transaction just committed.
    AfterCommit,
}

fn armed() -> Option<(Point, u64)> {
    static ARMED: OnceLock<Option<(Point, u64)>> = OnceLock::new();
    *ARMED.get_or_init(|| {
        let v = std::env::var("TRAWL_FAILPOINT").ok()?;
        let (name, n) = v.split_once(':')?;
        let point = match name {
            "after-fetch" => Point::AfterFetch,
            "after-commit" => Point::AfterCommit,
            _ => return None,
        };
        Some((point, n.parse().ok()?))
    })
}

/// Count a pass through `point`; abort the process on the armed pass.
pub fn hit(point: Point) {
    static PASSES: [AtomicU64; 2] = [AtomicU64::new(0), AtomicU64::new(0)];
    if let Some((armed, n)) = armed() {
        if armed == point && PASSES[point as usize].fetch_add(1, Ordering::SeqCst) + 1 == n {
            std::process::abort();
        }
    }
}
