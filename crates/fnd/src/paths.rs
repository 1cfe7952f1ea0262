//! Path text: how search roots are spelt (so entries' paths come out as fd
//! prints them) and how one entry's path is written — `./` stripping, `-a`,
//! `--path-separator`, the trailing separator of directories. Every output
//! mode (plain lines, colours, `--format`, `--exec`) spells paths through
//! [`PathStyle::write_entry_path`], [`printed_prefix`] and
//! [`push_with_separator`].

use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

/// How entry paths are spelt on output.
#[derive(Clone, Debug, Default)]
pub struct PathStyle {
    /// Drop a leading `./` (fd does so when no path was given, unless the
    /// output is NUL-separated or feeds a command).
    pub strip_cwd_prefix: bool,
    /// Replaces every `/` (`--path-separator`).
    pub separator: Option<Vec<u8>>,
}

impl PathStyle {
    /// Append the path of an entry (`prefix` is its parent's path and `/`)
    /// to `out`; directories get a trailing separator when `slash_dirs`.
    pub fn write_entry_path(&self, out: &mut Vec<u8>, prefix: &[u8], name: &[u8], is_dir: bool, slash_dirs: bool) {
        let start = out.len();
        let mut prefix = prefix;
        if self.strip_cwd_prefix {
            if let Some(rest) = prefix.strip_prefix(b"./") {
                // A result starting with '-' keeps its './' so no command reads it as an option.
                let first = rest.first().or(name.first());
                if first != Some(&b'-') {
                    prefix = rest;
                }
            }
        }
        out.extend_from_slice(prefix);
        out.extend_from_slice(name);
        if let Some(sep) = &self.separator {
            // fd writes such paths as text: invalid UTF-8 becomes U+FFFD.
            let replaced = replace_slashes(String::from_utf8_lossy(&out[start..]).as_bytes(), sep);
            out.truncate(start);
            out.extend_from_slice(&replaced);
        }
        if is_dir && slash_dirs {
            match &self.separator {
                Some(sep) => out.extend_from_slice(sep),
                None => out.push(b'/'),
            }
        }
    }
}

/// The text printed before an entry's name, with `/` separators: the
/// chunk's prefix after `style`'s `./` stripping (built in `scratch`).
pub fn printed_prefix<'s>(style: &PathStyle, chunk_prefix: &[u8], name: &[u8], scratch: &'s mut Vec<u8>) -> &'s [u8] {
    scratch.clear();
    let unseparated = PathStyle {
        strip_cwd_prefix: style.strip_cwd_prefix,
        separator: None,
    };
    unseparated.write_entry_path(scratch, chunk_prefix, name, false, false);
    let len = scratch.len() - name.len();
    &scratch[..len]
}

/// Append `part`, with each `/` replaced by `separator` when there is one.
pub fn push_with_separator(part: &[u8], separator: Option<&[u8]>, out: &mut Vec<u8>) {
    match separator {
        None => out.extend_from_slice(part),
        Some(sep) => {
            for piece in part.split_inclusive(|&b| b == b'/') {
                match piece.strip_suffix(b"/") {
                    Some(head) => {
                        out.extend_from_slice(head);
                        out.extend_from_slice(sep);
                    }
                    None => out.extend_from_slice(piece),
                }
            }
        }
    }
}

fn replace_slashes(path: &[u8], sep: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(path.len());
    for &b in path {
        if b == b'/' {
            v.extend_from_slice(sep);
        } else {
            v.push(b);
        }
    }
    v
}

/// The search roots as the walk should spell them: `.` becomes `./`, `-`
/// becomes `./-`, and with `-a` each is made absolute (symlinks resolved).
pub fn normalize_root(path: &Path, absolute: bool) -> PathBuf {
    if absolute {
        if let Ok(p) = std::fs::canonicalize(path) {
            return p;
        }
    }
    match path.as_os_str().as_bytes() {
        b"." => PathBuf::from("./"),
        b"-" => PathBuf::from("./-"),
        _ => path.to_path_buf(),
    }
}

/// A directory, following symlinks (fd's test for a usable search path).
pub fn is_existing_dir(path: &Path) -> bool {
    path.is_dir()
}

/// The working directory as bytes, for `-p` matching.
pub fn cwd_bytes() -> std::io::Result<Vec<u8>> {
    Ok(OsString::from(std::env::current_dir()?).into_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(style: &PathStyle, prefix: &str, name: &str, dir: bool) -> String {
        let mut out = Vec::new();
        style.write_entry_path(&mut out, prefix.as_bytes(), name.as_bytes(), dir, true);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn strips_dot_slash_except_before_a_dash() {
        let s = PathStyle {
            strip_cwd_prefix: true,
            separator: None,
        };
        assert_eq!(write(&s, "./a/", "b", false), "a/b");
        assert_eq!(write(&s, "./", "-rf", false), "./-rf");
        assert_eq!(write(&s, "./", "d", true), "d/");
        let keep = PathStyle::default();
        assert_eq!(write(&keep, "./a/", "b", false), "./a/b");
    }

    #[test]
    fn separator_replaces_every_slash() {
        let s = PathStyle {
            strip_cwd_prefix: true,
            separator: Some(b"::".to_vec()),
        };
        assert_eq!(write(&s, "./a/", "b", true), "a::b::");
    }
}
