//! The WARC file on disk: checks before anything is written, the lock, and the repair of
//! a last record left incomplete by a killed process.
//!
//! A crash can leave only a prefix of the last gzip member (records are appended with one
//! `write` each, and nothing else writes the file). Opening finds the end of the last
//! complete member and cuts the file there, so appended records follow a sound file. The
//! search works backwards from the end, so opening a large archive reads only its tail.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use super::WarcError;

/// The first bytes of every gzip member (magic and the deflate method).
const GZIP_MAGIC: [u8; 3] = [0x1f, 0x8b, 0x08];
/// How far back from the end the last complete member is looked for, at most. One record
/// holds at most `max-body` bytes before compression; past this the file is taken for
/// something other than a gzip-per-record WARC rather than read whole into memory.
const MAX_TAIL: u64 = 1 << 30;
/// The first tail read; grown fourfold while no complete member is found in it.
const FIRST_TAIL: u64 = 4 << 20;

/// Refuse what can never work, before the crawl's database is touched: a directory, a
/// missing directory, a file that is not gzip, or one that cannot be appended to. Creates
/// nothing.
pub(super) fn check(path: &Path) -> Result<(), WarcError> {
    let shown = || path.display().to_string();
    if path.is_dir() {
        return Err(WarcError::IsDirectory { path: shown() });
    }
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if !parent.is_dir() {
        return Err(WarcError::NoDirectory {
            path: shown(),
            dir: parent.display().to_string(),
        });
    }
    if path.exists() {
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .open(path)
            .map_err(|source| WarcError::Open {
                path: shown(),
                source,
            })?;
        let mut start = [0u8; 3];
        let n = read_up_to(&mut file, &mut start).map_err(|source| WarcError::Open {
            path: shown(),
            source,
        })?;
        if n > 0 && start[..n] != GZIP_MAGIC[..n] {
            return Err(WarcError::NotWarc {
                path: shown(),
                detail: "it does not start with a gzip member".into(),
            });
        }
    }
    Ok(())
}

/// Open `path` for appending (created if missing), take its lock, and cut an incomplete
/// last record. Returns the file and how many bytes were cut.
pub(super) fn open(path: &Path) -> Result<(File, u64), WarcError> {
    check(path)?;
    let shown = || path.display().to_string();
    let io = |source| WarcError::Open {
        path: shown(),
        source,
    };
    let mut file = OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .open(path)
        .map_err(io)?;
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => return Err(WarcError::Locked { path: shown() }),
        Err(std::fs::TryLockError::Error(source)) => return Err(io(source)),
    }
    let len = file.metadata().map_err(io)?.len();
    if len == 0 {
        return Ok((file, 0));
    }
    check_first_record(&mut file).map_err(|detail| WarcError::NotWarc {
        path: shown(),
        detail,
    })?;
    let end = match complete_end(&mut file, len).map_err(io)? {
        Some(end) => end,
        // The first member starts a WARC record but no member is complete: the file holds
        // the start of one record and nothing else.
        None if len < MAX_TAIL => 0,
        None => {
            return Err(WarcError::NotWarc {
                path: shown(),
                detail: format!(
                "no complete gzip member in its last {} MiB: records are not compressed one by one",
                MAX_TAIL >> 20
            ),
            })
        }
    };
    if end < len {
        file.set_len(end).map_err(|source| WarcError::Write {
            path: shown(),
            detail: source.to_string(),
        })?;
        tracing::warn!(
            path = %path.display(),
            cut = len - end,
            "the WARC file ended in an incomplete record (left by an interrupted run); it was cut off"
        );
    }
    Ok((file, len - end))
}

/// The file is gzip and its first member starts with `WARC/`.
fn check_first_record(file: &mut File) -> Result<(), String> {
    file.seek(SeekFrom::Start(0)).map_err(|e| e.to_string())?;
    let mut decoder = flate2::read::GzDecoder::new(std::io::BufReader::new(&*file));
    let mut start = [0u8; 5];
    match read_up_to(&mut decoder, &mut start) {
        Ok(5) if &start == b"WARC/" => Ok(()),
        // A file cut inside its very first record.
        Ok(n) if n < 5 && b"WARC/".starts_with(&start[..n]) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(()),
        Ok(_) => Err("its first record does not start with WARC/".into()),
        Err(e) => Err(format!("it is not readable as gzip: {e}")),
    }
}

/// The end offset of the last complete gzip member, searching back from `len`; `None`
/// when there is none within [`MAX_TAIL`].
fn complete_end(file: &mut File, len: u64) -> std::io::Result<Option<u64>> {
    let mut tail = FIRST_TAIL.min(len);
    loop {
        let start = len - tail;
        let mut buf = vec![0u8; tail as usize];
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(&mut buf)?;
        if let Some(end) = last_member_end(&buf) {
            return Ok(Some(start + end as u64));
        }
        if tail == len || tail >= MAX_TAIL {
            return Ok(None);
        }
        tail = (tail * 4).min(len).min(MAX_TAIL);
    }
}

/// In `buf`, the end of the last gzip member that decodes completely (its CRC and length
/// checked), trying the member starts from the last one back.
pub(super) fn last_member_end(buf: &[u8]) -> Option<usize> {
    let starts = buf
        .windows(GZIP_MAGIC.len())
        .enumerate()
        .filter(|(_, w)| *w == GZIP_MAGIC)
        .map(|(i, _)| i);
    let starts: Vec<usize> = starts.collect();
    starts
        .into_iter()
        .rev()
        .find_map(|at| member_len(&buf[at..]).map(|n| at + n))
}

/// The length of the gzip member at the start of `bytes`, if it is complete and sound.
fn member_len(bytes: &[u8]) -> Option<usize> {
    let mut decoder = flate2::bufread::GzDecoder::new(bytes);
    std::io::copy(&mut decoder, &mut std::io::sink()).ok()?;
    let rest = decoder.into_inner();
    Some(bytes.len() - rest.len())
}

/// Read until `buf` is full or the input ends; the count read.
fn read_up_to(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::warc::record::{new_id, Kind, Record};

    fn member(text: &str) -> Vec<u8> {
        Record {
            kind: Kind::Warcinfo,
            id: new_id(),
            date: std::time::SystemTime::now(),
            content_type: "application/warc-fields",
            fields: Vec::new(),
            block: text.as_bytes().to_vec(),
            payload_at: None,
        }
        .gzip_member()
    }

    #[test]
    fn the_last_complete_member_is_found_at_every_cut() {
        let (a, b) = (member("first"), member("second record"));
        let mut file = a.clone();
        file.extend_from_slice(&b);
        assert_eq!(last_member_end(&file), Some(file.len()));
        // Cut anywhere inside the second member: the first is what remains.
        for cut in a.len()..file.len() {
            assert_eq!(last_member_end(&file[..cut]), Some(a.len()), "cut at {cut}");
        }
        for cut in 0..a.len() {
            assert_eq!(last_member_end(&file[..cut]), None, "cut at {cut}");
        }
    }

    #[test]
    fn open_cuts_a_partial_record_and_refuses_what_is_not_a_warc() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.warc.gz");
        let (a, b) = (member("first"), member("second"));
        let mut bytes = a.clone();
        bytes.extend_from_slice(&b[..b.len() / 2]);
        std::fs::write(&path, &bytes).unwrap();
        let (file, cut) = open(&path).unwrap();
        assert_eq!(cut as usize, b.len() / 2);
        drop(file);
        assert_eq!(std::fs::read(&path).unwrap(), a);
        // A sound file is left as it is.
        let (_file, cut) = open(&path).unwrap();
        assert_eq!(cut, 0);

        let other = dir.path().join("notes.txt");
        std::fs::write(&other, "hello").unwrap();
        let e = open(&other).unwrap_err();
        assert!(matches!(e, WarcError::NotWarc { .. }), "{e}");
        assert_eq!(std::fs::read(&other).unwrap(), b"hello", "left untouched");

        let e = open(dir.path()).unwrap_err();
        assert!(matches!(e, WarcError::IsDirectory { .. }), "{e}");
        let e = open(&dir.path().join("no/such/dir/x.warc.gz")).unwrap_err();
        assert!(matches!(e, WarcError::NoDirectory { .. }), "{e}");
    }

    #[test]
    fn a_second_writer_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.warc.gz");
        let (_held, _) = open(&path).unwrap();
        let e = open(&path).unwrap_err();
        assert!(matches!(e, WarcError::Locked { .. }), "{e}");
    }
}
