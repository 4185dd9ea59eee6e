//! A run: visited-set entries moved out of memory, sorted by hash, in a temporary file.
//!
//! The file is unlinked as soon as it is created, so it disappears with the process
//! however that ends; the store, not the runs, is what a resume rebuilds from. In memory
//! a run keeps a Bloom filter (1.25 bytes per entry) and the first hash of every block
//! of [`BLOCK`] entries (16 bytes per block), so a lookup reads at most one block.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use super::bloom::Bloom;

/// Entries per block: 4,080 bytes, one page read per lookup.
const BLOCK: usize = 170;
/// Bytes per entry: the hash (16) and the packed value (8), little-endian.
const ENTRY: usize = 24;

pub(super) struct Run {
    file: File,
    len: usize,
    /// The first hash of every block.
    fences: Vec<u128>,
    bloom: Bloom,
}

impl Run {
    /// Writes `entries` (sorted by hash, no duplicates, at most `max` of them) to a new
    /// file in `dir`.
    pub(super) fn write(
        dir: &Path,
        max: usize,
        entries: impl IntoIterator<Item = io::Result<(u128, u64)>>,
    ) -> io::Result<Run> {
        let file = tempfile::tempfile_in(dir)?;
        let mut out = BufWriter::with_capacity(64 << 10, &file);
        let mut bloom = Bloom::new(max);
        let mut fences = Vec::with_capacity(max.div_ceil(BLOCK));
        let mut len = 0;
        for entry in entries {
            let (hash, value) = entry?;
            if len % BLOCK == 0 {
                fences.push(hash);
            }
            bloom.insert(hash);
            out.write_all(&hash.to_le_bytes())?;
            out.write_all(&value.to_le_bytes())?;
            len += 1;
        }
        out.flush()?;
        drop(out);
        fences.shrink_to_fit();
        Ok(Run {
            file,
            len,
            fences,
            bloom,
        })
    }

    /// Merges two runs into one; where both hold a hash, `newer`'s value wins.
    pub(super) fn merge(dir: &Path, older: &Run, newer: &Run) -> io::Result<Run> {
        let mut a = Cursor::new(older);
        let mut b = Cursor::new(newer);
        let merged = std::iter::from_fn(|| {
            let next = match (a.peek(), b.peek()) {
                (Err(e), _) | (_, Err(e)) => return Some(Err(e)),
                (Ok(None), Ok(None)) => return None,
                (Ok(Some(x)), Ok(None)) => (x, true, false),
                (Ok(None), Ok(Some(y))) => (y, false, true),
                (Ok(Some(x)), Ok(Some(y))) if x.0 < y.0 => (x, true, false),
                (Ok(Some(x)), Ok(Some(y))) if x.0 > y.0 => (y, false, true),
                (Ok(Some(_)), Ok(Some(y))) => (y, true, true),
            };
            let (entry, from_a, from_b) = next;
            if from_a {
                a.advance();
            }
            if from_b {
                b.advance();
            }
            Some(Ok(entry))
        });
        Run::write(dir, older.len + newer.len, merged)
    }

    /// The value of `hash`, if this run holds it.
    pub(super) fn get(&self, hash: u128) -> io::Result<Option<u64>> {
        if !self.bloom.may_contain(hash) {
            return Ok(None);
        }
        let block = match self.fences.partition_point(|f| *f <= hash) {
            0 => return Ok(None),
            n => n - 1,
        };
        let first = block * BLOCK;
        let n = BLOCK.min(self.len - first);
        let mut buf = [0u8; BLOCK * ENTRY];
        let buf = &mut buf[..n * ENTRY];
        read_at(&self.file, buf, (first * ENTRY) as u64)?;
        let (mut lo, mut hi) = (0, n);
        while lo < hi {
            let mid = (lo + hi) / 2;
            let (h, v) = decode(&buf[mid * ENTRY..][..ENTRY]);
            match h.cmp(&hash) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Ok(Some(v)),
            }
        }
        Ok(None)
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Bytes held in memory.
    pub(super) fn bytes(&self) -> usize {
        self.bloom.bytes() + self.fences.capacity() * 16
    }
}

fn decode(b: &[u8]) -> (u128, u64) {
    let hash = u128::from_le_bytes(b[..16].try_into().expect("16 bytes"));
    let value = u64::from_le_bytes(b[16..24].try_into().expect("8 bytes"));
    (hash, value)
}

/// Reads a run front to back, a buffer at a time.
struct Cursor<'a> {
    run: &'a Run,
    /// Index of the next entry to read from the file.
    next: usize,
    buf: Vec<u8>,
    pos: usize,
    err: Option<io::ErrorKind>,
}

/// Entries read at once while merging.
const CHUNK: usize = 2730;

impl<'a> Cursor<'a> {
    fn new(run: &'a Run) -> Cursor<'a> {
        Cursor {
            run,
            next: 0,
            buf: Vec::new(),
            pos: 0,
            err: None,
        }
    }

    fn peek(&mut self) -> io::Result<Option<(u128, u64)>> {
        if let Some(kind) = self.err {
            return Err(kind.into());
        }
        if self.pos == self.buf.len() {
            let n = CHUNK.min(self.run.len - self.next);
            if n == 0 {
                return Ok(None);
            }
            self.buf.resize(n * ENTRY, 0);
            if let Err(e) = read_at(&self.run.file, &mut self.buf, (self.next * ENTRY) as u64) {
                self.err = Some(e.kind());
                return Err(e);
            }
            self.next += n;
            self.pos = 0;
        }
        Ok(Some(decode(&self.buf[self.pos..][..ENTRY])))
    }

    fn advance(&mut self) {
        self.pos += ENTRY;
    }
}

#[cfg(unix)]
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
}

#[cfg(windows)]
fn read_at(file: &File, mut buf: &mut [u8], mut offset: u64) -> io::Result<()> {
    while !buf.is_empty() {
        match std::os::windows::fs::FileExt::seek_read(file, buf, offset)? {
            0 => return Err(io::ErrorKind::UnexpectedEof.into()),
            n => {
                buf = &mut buf[n..];
                offset += n as u64;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hash(i: u64) -> u128 {
        xxhash_rust::xxh3::xxh3_128(&i.to_le_bytes())
    }

    fn run_of(dir: &Path, keys: impl Iterator<Item = u64>, value: u64) -> Run {
        let mut v: Vec<(u128, u64)> = keys.map(|i| (hash(i), i + value)).collect();
        v.sort_unstable_by_key(|e| e.0);
        Run::write(dir, v.len(), v.into_iter().map(Ok)).unwrap()
    }

    #[test]
    fn finds_every_entry_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let run = run_of(dir.path(), 0..5_000, 0);
        assert_eq!(run.len(), 5_000);
        for i in 0..5_000 {
            assert_eq!(run.get(hash(i)).unwrap(), Some(i), "{i}");
        }
        assert!((5_000..10_000).all(|i| run.get(hash(i)).unwrap().is_none()));
        assert_eq!(run.get(0).unwrap(), None);
        assert_eq!(run.get(u128::MAX).unwrap(), None);
        // Unlinked: nothing is left in the directory.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn merge_keeps_both_and_the_newer_value() {
        let dir = tempfile::tempdir().unwrap();
        let older = run_of(dir.path(), 0..6_000, 0);
        let newer = run_of(dir.path(), 4_000..9_000, 1_000_000);
        let merged = Run::merge(dir.path(), &older, &newer).unwrap();
        assert_eq!(merged.len(), 9_000);
        for i in 0..4_000 {
            assert_eq!(merged.get(hash(i)).unwrap(), Some(i));
        }
        for i in 4_000..9_000 {
            assert_eq!(merged.get(hash(i)).unwrap(), Some(i + 1_000_000));
        }
        assert!(merged.get(hash(9_001)).unwrap().is_none());
    }

    #[test]
    fn empty_run() {
        let dir = tempfile::tempdir().unwrap();
        let run = run_of(dir.path(), 0..0, 0);
        assert_eq!(run.get(hash(1)).unwrap(), None);
    }
}
