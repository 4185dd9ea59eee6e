use super::*;

fn seen(id: UrlId, depth: u32) -> Seen {
    Seen {
        id,
        depth,
        held: Held::No,
    }
}

fn hash(i: u64) -> u128 {
    xxhash_rust::xxh3::xxh3_128(&i.to_le_bytes())
}

#[test]
fn a_small_budget_moves_entries_to_disk_and_still_finds_them() {
    let dir = tempfile::tempdir().unwrap();
    // 64 entries per generation per shard: 200,000 entries make runs in every shard.
    let v = Visited::with_budget(64 * 64 * 2 * ENTRY_BYTES, dir.path()).unwrap();
    let n = 200_000u64;
    for i in 0..n {
        assert!(v.get_or_admit(hash(i), || seen(i, 3)).1, "{i}");
    }
    let f = v.footprint();
    assert!(f.runs >= SHARDS && f.runs <= SHARDS * MAX_RUNS, "{f:?}");
    assert!(f.on_disk as u64 >= n * 9 / 10, "{f:?}");
    assert!(
        f.memory < 2 << 20,
        "memory {} bytes for {n} entries",
        f.memory
    );
    assert_eq!(v.len() as u64, n);
    for i in 0..n {
        assert!(!v.get_or_admit(hash(i), || unreachable!()).1, "{i}");
    }
    assert_eq!(v.len() as u64, n, "no entry admitted twice");
    assert!((n..n + 10_000).all(|i| v.get(hash(i)).is_none()));
    // The files are unlinked: the directory stays empty.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn a_set_within_the_budget_stays_in_memory_however_it_is_looked_up() {
    let dir = tempfile::tempdir().unwrap();
    // 64 entries per generation per shard: 128 per shard in memory, 8,192 in all.
    let budget = 64 * 64 * 2 * ENTRY_BYTES;
    let v = Visited::with_budget(budget, dir.path()).unwrap();
    let n = 6_000u64;
    let mut rng = fastrand::Rng::with_seed(3);
    for i in 0..n {
        v.get_or_admit(hash(i), || seen(i, 1));
        // Links to pages seen before, all over the set: each moves its entry to the
        // young generation, which must not push the rest out.
        for _ in 0..3 {
            let j = rng.u64(..=i);
            assert_eq!(v.get(hash(j)).map(|s| s.id), Some(j));
        }
    }
    let f = v.footprint();
    assert_eq!((f.runs, f.on_disk), (0, 0), "{f:?}");
    assert!(f.memory as u64 <= budget, "{f:?}");
}

#[test]
fn tables_stay_near_the_budget_while_entries_move_between_generations() {
    let dir = tempfile::tempdir().unwrap();
    // 256 entries per generation per shard: tables well above their 64-slot minimum.
    let budget = 256 * 64 * 2 * ENTRY_BYTES;
    let v = Visited::with_budget(budget, dir.path()).unwrap();
    let tables = |v: &Visited| -> u64 {
        v.shards
            .iter()
            .map(|s| {
                let s = s.lock().unwrap();
                (s.young.bytes() + s.old.bytes()) as u64
            })
            .sum()
    };
    let mut rng = fastrand::Rng::with_seed(5);
    let (n, mut most) = (100_000u64, 0);
    for i in 0..n {
        v.get_or_admit(hash(i), || seen(i, 1));
        // Links back to the last few thousand URLs: many are in the old generation.
        for _ in 0..3 {
            let j = rng.u64(i.saturating_sub(20_000)..=i);
            assert_eq!(v.get(hash(j)).map(|s| s.id), Some(j));
        }
        if i % 2_000 == 0 {
            most = most.max(tables(&v));
        }
    }
    // New URLs only, as on a site whose pages link mostly to pages not seen yet.
    for i in n..2 * n {
        v.get_or_admit(hash(i), || seen(i, 1));
        if i % 2_000 == 0 {
            most = most.max(tables(&v));
        }
    }
    assert!(v.footprint().runs > 0);
    assert!(
        most <= budget * 23 / 20,
        "{most} bytes of tables for {budget}"
    );
}

#[test]
fn changes_survive_moves_to_disk() {
    let dir = tempfile::tempdir().unwrap();
    let v = Visited::with_budget(16 * 64 * 2 * ENTRY_BYTES, dir.path()).unwrap();
    let n = 20_000u64;
    for i in 0..n {
        v.insert_known(
            hash(i),
            Seen {
                id: i,
                depth: 9,
                held: Held::TooDeep,
            },
        );
    }
    // Lower every tenth, spread over time so that some are on disk when changed and
    // changed copies go to disk again.
    for i in (0..n).step_by(10) {
        assert_eq!(v.found_again(hash(i), 5, true, 0), Lowered::Requeue(i, 5));
        for j in n + i * 3..n + i * 3 + 3 {
            v.get_or_admit(hash(j), || seen(j, 1));
        }
    }
    assert!(v.footprint().runs > 0);
    for i in 0..n {
        let s = v.get(hash(i)).unwrap();
        if i % 10 == 0 {
            assert_eq!((s.depth, s.held), (5, Held::No), "{i}");
            assert_eq!(v.found_again(hash(i), 5, true, 0), Lowered::No);
        } else {
            assert_eq!((s.depth, s.held), (9, Held::TooDeep), "{i}");
        }
    }
}

#[test]
fn when_runs_cannot_be_written_entries_stay_in_memory() {
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("gone");
    let v = Visited::with_budget(64 * 64 * 2 * ENTRY_BYTES, &sub).unwrap();
    let n = 30_000u64;
    for i in 0..n / 2 {
        v.get_or_admit(hash(i), || seen(i, 1));
    }
    assert!(v.footprint().runs > 0);
    // The directory disappears (or the disk fills): nothing more goes to disk, and
    // nothing is lost.
    std::fs::remove_dir_all(&sub).unwrap();
    for i in n / 2..n {
        assert!(v.get_or_admit(hash(i), || seen(i, 1)).1);
    }
    assert!(v
        .spill
        .as_ref()
        .unwrap()
        .write_failed
        .load(Ordering::Relaxed));
    for i in 0..n {
        assert_eq!(v.get(hash(i)).map(|s| s.id), Some(i), "{i}");
    }
    assert_eq!(v.len() as u64, n);
}

#[test]
fn an_unusable_directory_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("f");
    std::fs::write(&file, b"x").unwrap();
    assert!(Visited::with_budget(1 << 20, &file.join("sub")).is_err());
    assert!(
        Visited::with_budget(0, &file.join("sub")).is_ok(),
        "no limit, no dir"
    );
}

#[test]
fn admits_once() {
    let v = Visited::new();
    let mut calls = 0;
    let h = 7 << 70 | 3;
    assert_eq!(
        v.get_or_admit(h, || {
            calls += 1;
            seen(10, 2)
        }),
        (seen(10, 2), true)
    );
    assert_eq!(
        v.get_or_admit(h, || {
            calls += 1;
            seen(11, 2)
        }),
        (seen(10, 2), false)
    );
    assert_eq!(calls, 1);
    // Same low 64 bits, different high bits: a different URL.
    assert!(v.get_or_admit(8 << 70 | 3, || seen(12, 0)).1);
    assert_eq!(v.get(8 << 70 | 3), Some(seen(12, 0)));
    assert_eq!(v.len(), 2);
}

#[test]
fn finds_every_entry_across_growth() {
    let v = Visited::new();
    let hash = |i: u64| xxhash_rust::xxh3::xxh3_128(&i.to_le_bytes());
    for i in 0..50_000u64 {
        assert!(v.get_or_admit(hash(i), || seen(i, 1)).1);
    }
    // Keys that differ only in one half, and the all-zero key.
    for (i, h) in [
        (50_000, 0u128),
        (50_001, 1),
        (50_002, 1 << 64),
        (50_003, u128::MAX),
    ] {
        assert!(v.get_or_admit(h, || seen(i, 0)).1, "{h:x}");
    }
    assert_eq!(v.len(), 50_004);
    for i in 0..50_000u64 {
        assert_eq!(v.get(hash(i)), Some(seen(i, 1)));
        assert!(!v.get_or_admit(hash(i), || unreachable!()).1);
    }
    assert_eq!(v.get(1 << 64).map(|s| s.id), Some(50_002));
    assert_eq!(v.get(hash(60_000)), None);
    for shard in v.shards.iter() {
        let t = &shard.lock().unwrap().young;
        assert!(t.len() * 20 <= t.slots() * 17, "over 85% full");
    }
}

#[test]
fn packs_without_loss() {
    for s in [
        seen(0, 0),
        seen((1 << ID_BITS) - 1, MAX_DEPTH),
        Seen {
            id: 12345,
            depth: 7,
            held: Held::TooDeep,
        },
        Seen {
            id: 1,
            depth: 0,
            held: Held::Nofollow,
        },
    ] {
        assert_eq!(Seen::unpack(s.pack()), s);
    }
}

#[test]
fn shorter_paths_win_and_held_urls_are_released() {
    let v = Visited::new();
    v.insert_known(1, seen(5, 4));
    assert_eq!(v.found_again(1, 4, true, 0), Lowered::No);
    assert_eq!(v.found_again(1, 2, true, 0), Lowered::Depth(5));
    assert_eq!(v.get(1).unwrap().depth, 2);
    v.insert_known(
        2,
        Seen {
            id: 6,
            depth: 4,
            held: Held::TooDeep,
        },
    );
    assert_eq!(
        v.found_again(2, 3, true, 2),
        Lowered::Depth(6),
        "still too deep"
    );
    assert_eq!(v.found_again(2, 2, true, 2), Lowered::Requeue(6, 2));
    assert_eq!(v.get(2).unwrap().held, Held::No);
    // Held for nofollow: only a followed link releases it, at any depth within limits.
    v.insert_known(
        3,
        Seen {
            id: 7,
            depth: 1,
            held: Held::Nofollow,
        },
    );
    assert_eq!(v.found_again(3, 5, false, 0), Lowered::No);
    assert_eq!(v.found_again(3, 5, true, 0), Lowered::Requeue(7, 1));
    v.insert_known(
        4,
        Seen {
            id: 8,
            depth: 3,
            held: Held::Nofollow,
        },
    );
    assert_eq!(v.found_again(4, 3, true, 2), Lowered::No);
    assert_eq!(
        v.get(4).unwrap().held,
        Held::TooDeep,
        "followed, but too deep"
    );
    assert_eq!(v.found_again(9, 0, true, 0), Lowered::No, "unknown URL");
}
