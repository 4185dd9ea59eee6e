//! Output held back until the end of a document whose head needs the counts of its body
//! (JUnit's `tests` and `failures`, Markdown's counts above its table): kept in memory up
//! to [`IN_MEMORY`], then in an unnamed temporary file, so a report of millions of links
//! does not hold them all in memory.

use std::fs::File;
use std::io::{self, BufWriter, Seek, Write};

/// Bytes kept in memory before the rest goes to a temporary file.
const IN_MEMORY: usize = 4 << 20;

/// Bytes written now, read back once at the end.
#[derive(Default)]
pub(super) struct Spool {
    memory: Vec<u8>,
    file: Option<BufWriter<File>>,
}

impl Spool {
    /// Copy everything written to `out`.
    pub(super) fn copy_to(self, out: &mut dyn Write) -> io::Result<()> {
        let Some(file) = self.file else {
            return out.write_all(&self.memory);
        };
        let mut file = file.into_inner().map_err(io::IntoInnerError::into_error)?;
        file.rewind()?;
        io::copy(&mut file, out)?;
        Ok(())
    }
}

impl Write for Spool {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if let Some(file) = &mut self.file {
            return file.write(buf);
        }
        self.memory.extend_from_slice(buf);
        if self.memory.len() > IN_MEMORY {
            // An unnamed file: nothing is left behind, however the process ends.
            let mut file = BufWriter::new(tempfile::tempfile()?);
            file.write_all(&self.memory)?;
            self.memory = Vec::new();
            self.file = Some(file);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.file {
            Some(file) => file.flush(),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_and_large_outputs_come_back_whole() {
        for size in [10, IN_MEMORY + 10_000] {
            let data: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
            let mut spool = Spool::default();
            for chunk in data.chunks(4096) {
                spool.write_all(chunk).unwrap();
            }
            assert_eq!(spool.file.is_some(), size > IN_MEMORY);
            let mut out = Vec::new();
            spool.copy_to(&mut out).unwrap();
            assert!(out == data, "{size} bytes");
        }
    }
}
