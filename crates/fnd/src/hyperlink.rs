//! `--hyperlink`: each printed path becomes an OSC 8 link to its
//! `file://host/absolute/path` URL, as fd writes it.

use std::io::Write as _;
use std::os::unix::ffi::OsStrExt;

use crate::found::Found;

/// When `--hyperlink` asks for links.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum HyperlinkWhen {
    /// Use hyperlinks only if color is enabled
    Auto,
    /// Always use hyperlinks when printing file paths
    Always,
    /// Never use hyperlinks
    Never,
}

impl HyperlinkWhen {
    pub fn enabled(self, colored: bool) -> bool {
        match self {
            HyperlinkWhen::Always => true,
            HyperlinkWhen::Never => false,
            HyperlinkWhen::Auto => colored,
        }
    }
}

/// What every link starts with: `file://`, the host name and the working
/// directory, looked up once.
pub struct Hyperlinks {
    /// `file://host`.
    scheme_host: Box<[u8]>,
    /// The working directory, percent-encoded, without a trailing `/`.
    cwd: Box<[u8]>,
}

impl Hyperlinks {
    pub fn new() -> Hyperlinks {
        Hyperlinks::on_host(&hostname())
    }

    /// Links to files on `host` (where the results are printed, which an
    /// MPI rank may not be).
    pub fn on_host(host: &[u8]) -> Hyperlinks {
        let mut scheme_host = b"file://".to_vec();
        scheme_host.extend_from_slice(host);
        let mut cwd = Vec::new();
        if let Ok(dir) = std::env::current_dir() {
            percent_encode(dir.as_os_str().as_bytes(), &mut cwd);
        }
        while cwd.last() == Some(&b'/') {
            cwd.pop();
        }
        Hyperlinks {
            scheme_host: scheme_host.into(),
            cwd: cwd.into(),
        }
    }

    /// Open a link to `entry`; `scratch` is reused for its path.
    pub fn open(&self, entry: &impl Found, scratch: &mut Vec<u8>, out: &mut Vec<u8>) {
        scratch.clear();
        entry.write_path(scratch);
        out.extend_from_slice(b"\x1b]8;;");
        out.extend_from_slice(&self.scheme_host);
        if scratch.first() != Some(&b'/') {
            // fd joins the working directory and the path without its `./`.
            let rel = match scratch.strip_prefix(b"./") {
                Some(rest) => rest,
                None if scratch.as_slice() == b"." => b"",
                None => scratch,
            };
            out.extend_from_slice(&self.cwd);
            out.push(b'/');
            percent_encode(rel, out);
        } else {
            percent_encode(scratch, out);
        }
        out.extend_from_slice(b"\x1b\\");
    }

    /// Close the link opened last.
    pub fn close(out: &mut Vec<u8>) {
        out.extend_from_slice(b"\x1b]8;;\x1b\\");
    }
}

impl Default for Hyperlinks {
    fn default() -> Self {
        Self::new()
    }
}

/// The host name, left out (as fd does) when it is not UTF-8.
pub fn hostname() -> Vec<u8> {
    nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok())
        .unwrap_or_default()
        .into_bytes()
}

/// fd's URL encoding: unreserved ASCII and `/:` stay, every other byte
/// becomes `%XX` (so names that are not UTF-8 still make a valid URL).
fn percent_encode(bytes: &[u8], out: &mut Vec<u8>) {
    for &b in bytes {
        match b {
            b'0'..=b'9' | b'A'..=b'Z' | b'a'..=b'z' | b'/' | b':' | b'-' | b'.' | b'_' | b'~' => out.push(b),
            _ => {
                let _ = write!(out, "%{b:02X}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_like_fd() {
        let mut out = Vec::new();
        percent_encode("$*\x1bßé/∫😃\x07".as_bytes(), &mut out);
        assert_eq!(out, b"%24%2A%1B%C3%9F%C3%A9/%E2%88%AB%F0%9F%98%83%07");
    }
}
