//! Several files read as one stream, in the order given: a rotated log's files, each
//! decompressed if it is, with a repeated header left out.

use std::collections::VecDeque;
use std::io::{self, BufRead, BufReader, Read};

/// Files read one after the other as one stream. A later file's first line is left out
/// when it is byte for byte the first file's first line (a CSV's header, repeated), and a
/// file that does not end its last line has one ended for it.
pub(crate) struct Joined {
    files: VecDeque<BufReader<Box<dyn Read + Send>>>,
    /// The first file's first line, once read.
    header: Option<Vec<u8>>,
    /// Bytes to hand out before reading on: a first line, or a line break.
    pending: Vec<u8>,
    /// Whether the front file has not been read from yet.
    fresh: bool,
    /// The last byte handed out, if any.
    last: Option<u8>,
}

impl Joined {
    /// Reads `files` in order.
    pub(crate) fn new(files: Vec<Box<dyn Read + Send>>) -> Joined {
        let files = files.into_iter().map(BufReader::new).collect();
        Joined { files, header: None, pending: Vec::new(), fresh: true, last: None }
    }

    /// Hands out pending bytes into `buf`; returns how many.
    fn drain(&mut self, buf: &mut [u8]) -> usize {
        let n = self.pending.len().min(buf.len());
        buf[..n].copy_from_slice(&self.pending[..n]);
        self.pending.drain(..n);
        n
    }
}

impl Read for Joined {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            if !self.pending.is_empty() {
                let n = self.drain(buf);
                self.last = Some(buf[n - 1]);
                return Ok(n);
            }
            let Some(file) = self.files.front_mut() else { return Ok(0) };
            if self.fresh {
                self.fresh = false;
                let mut line = Vec::new();
                file.read_until(b'\n', &mut line)?;
                match &self.header {
                    None => self.header = Some(line.clone()),
                    Some(header) if *header == line => line.clear(),
                    Some(_) => {}
                }
                self.pending = line;
                continue;
            }
            let n = file.read(buf)?;
            if n > 0 {
                self.last = Some(buf[n - 1]);
                return Ok(n);
            }
            self.files.pop_front();
            self.fresh = true;
            if self.last.is_some_and(|b| b != b'\n') && !self.files.is_empty() {
                self.pending.push(b'\n');
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn joined(parts: &[&'static str]) -> String {
        let files = parts.iter().map(|p| Box::new(p.as_bytes()) as Box<dyn Read + Send>).collect();
        let mut text = String::new();
        Joined::new(files).read_to_string(&mut text).unwrap();
        text
    }

    #[test]
    fn a_repeated_header_is_left_out_and_an_unended_line_is_ended() {
        assert_eq!(joined(&["t,k\n1,a\n", "t,k\n2,b\n"]), "t,k\n1,a\n2,b\n");
        assert_eq!(joined(&["line 1\nline 2", "line 3\n"]), "line 1\nline 2\nline 3\n");
        assert_eq!(joined(&["a\n", "", "b\n"]), "a\nb\n");
        assert_eq!(joined(&["only\n"]), "only\n");
    }
}
