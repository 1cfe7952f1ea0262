//! Stored expected outputs, as bfs keeps its `.out` files: what a tool
//! printed for one command on a tree the test builds the same way every
//! time, kept in the repository so the suite still checks behaviour where
//! the reference tools are absent.
//!
//! A run is rendered as text that reads well in a diff: a first line with
//! the arguments, then one record a line (bytes outside printable ASCII
//! and tab escaped as `\xNN`), sorted where the tool does not define an order, then
//! the exit status and stderr when there are any. `FND_BLESS=1` writes the
//! files instead of comparing (and removes the ones no case names).
//!
//! ```
//! use fnd_test_support::expected::{Expected, Run};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let stored = Expected::new(dir.path());
//! let run = Run { args: &["-a"], stdout: b"b\na\n", stderr: b"", code: Some(0) };
//! let text = run.render(b'\n', true, &[]).unwrap();
//! assert_eq!(text, "args: -a\na\nb\n");
//! std::fs::write(dir.path().join("all.out"), &text).unwrap();
//! assert!(stored.check("all", &text).is_ok());
//! assert!(stored.check("all", "args: -a\na\n").is_err());
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The variable that makes [`Expected::check`] write instead of compare.
pub const BLESS_VAR: &str = "FND_BLESS";

/// Whether this run writes the expected outputs (`FND_BLESS=1`).
pub fn blessing() -> bool {
    std::env::var_os(BLESS_VAR).is_some_and(|v| v == "1")
}

/// A directory of `NAME.out` files.
pub struct Expected {
    dir: PathBuf,
}

impl Expected {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Expected { dir: dir.into() }
    }

    /// The stored file of a case.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.out"))
    }

    /// Compare `actual` with the stored output of `name`; write it instead
    /// when blessing. The error shows what differs.
    pub fn check(&self, name: &str, actual: &str) -> Result<(), String> {
        let path = self.path(name);
        if blessing() {
            std::fs::create_dir_all(&self.dir).map_err(|e| format!("{}: {e}", self.dir.display()))?;
            return std::fs::write(&path, actual).map_err(|e| format!("{}: {e}", path.display()));
        }
        let stored = std::fs::read_to_string(&path).map_err(|e| {
            format!(
                "{}: {e} (write it with {BLESS_VAR}=1 once the output is right)",
                path.display()
            )
        })?;
        compare(&stored, actual, &format!("{} (stored)", path.display()))
    }

    /// Compare what a reference tool printed with the stored output, which
    /// it must agree with (never written).
    pub fn check_reference(&self, name: &str, tool: &str, actual: &str) -> Result<(), String> {
        let path = self.path(name);
        let stored = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        compare(&stored, actual, &format!("{} (stored), against {tool}", path.display()))
    }

    /// `.out` files that no case in `names` produces: removed when
    /// blessing, otherwise returned (a renamed case leaves one behind).
    pub fn stale(&self, names: &[&str]) -> Vec<PathBuf> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut stale: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "out"))
            .filter(|p| !names.iter().any(|n| p.file_stem().is_some_and(|s| s == *n)))
            .collect();
        stale.sort();
        if blessing() {
            for p in &stale {
                let _ = std::fs::remove_file(p);
            }
            stale.clear();
        }
        stale
    }
}

/// Lines only in one of the two texts (as multisets), or `Ok` when equal.
fn compare(stored: &str, actual: &str, what: &str) -> Result<(), String> {
    if stored == actual {
        return Ok(());
    }
    let mut count: BTreeMap<&str, i64> = BTreeMap::new();
    for l in stored.lines() {
        *count.entry(l).or_default() += 1;
    }
    for l in actual.lines() {
        *count.entry(l).or_default() -= 1;
    }
    let mut diff = String::new();
    for (line, n) in &count {
        let mark = if *n > 0 { "- " } else { "+ " };
        for _ in 0..n.unsigned_abs() {
            diff.push_str(mark);
            diff.push_str(line);
            diff.push('\n');
        }
    }
    if diff.is_empty() {
        diff = format!("same lines, different order:\n--- stored\n{stored}--- actual\n{actual}");
    }
    Err(format!("{what}: differs (- stored, + actual):\n{diff}"))
}

/// What one run of a tool gave.
pub struct Run<'a> {
    pub args: &'a [&'a str],
    pub stdout: &'a [u8],
    pub stderr: &'a [u8],
    /// None when killed by a signal.
    pub code: Option<i32>,
}

impl Run<'_> {
    /// The text stored for this run: `args: …`, the records of stdout
    /// (separated by `sep`, sorted when `sort`), `[exit N]` when not 0 and
    /// `[stderr] …` lines. Each `(from, to)` of `replace` is applied to
    /// stdout and stderr first (a temporary path becomes `{root}`, say).
    /// Stdout that does not end with `sep` is an error.
    pub fn render(&self, sep: u8, sort: bool, replace: &[(&[u8], &[u8])]) -> Result<String, String> {
        let stdout = replace_all(self.stdout, replace);
        let stderr = replace_all(self.stderr, replace);
        let args: String = self.args.iter().map(|a| format!(" {}", escape(a.as_bytes()))).collect();
        let mut text = format!("args:{args}\n");
        if !stdout.is_empty() {
            let Some(body) = stdout.strip_suffix(&[sep]) else {
                return Err(format!(
                    "output does not end with {:?}: {}",
                    sep as char,
                    escape(&stdout)
                ));
            };
            let mut records: Vec<&[u8]> = body.split(|&b| b == sep).collect();
            if sort {
                records.sort();
            }
            for r in records {
                text.push_str(&escape(r));
                text.push('\n');
            }
        }
        match self.code {
            Some(0) => {}
            Some(code) => text.push_str(&format!("[exit {code}]\n")),
            None => text.push_str("[killed by a signal]\n"),
        }
        for line in String::from_utf8_lossy(&stderr).lines() {
            text.push_str("[stderr] ");
            text.push_str(line);
            text.push('\n');
        }
        Ok(text)
    }
}

fn replace_all(bytes: &[u8], replace: &[(&[u8], &[u8])]) -> Vec<u8> {
    let mut out = bytes.to_vec();
    for (from, to) in replace {
        if from.is_empty() {
            continue;
        }
        let mut next = Vec::with_capacity(out.len());
        let mut i = 0;
        while i < out.len() {
            if out[i..].starts_with(from) {
                next.extend_from_slice(to);
                i += from.len();
            } else {
                next.push(out[i]);
                i += 1;
            }
        }
        out = next;
    }
    out
}

/// Printable ASCII and tab as they are, `\` doubled, everything else
/// `\xNN`: one record is one line of text, whatever bytes its name holds.
pub fn escape(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len());
    for &b in bytes {
        match b {
            b'\\' => s.push_str("\\\\"),
            b'\t' | 0x20..=0x7e => s.push(b as char),
            _ => s.push_str(&format!("\\x{b:02x}")),
        }
    }
    s
}

/// The directory `tests/expected` of the crate being tested, from its
/// `CARGO_MANIFEST_DIR`.
pub fn dir_of(manifest_dir: &str) -> PathBuf {
    Path::new(manifest_dir).join("tests").join("expected")
}

/// Set the modification (and access) time of `path` to `secs` after the
/// epoch, whole seconds, without following a symlink: the trees behind
/// stored outputs have fixed times.
pub fn set_mtime(path: &Path, secs: i64) {
    let at = rustix::fs::Timespec {
        tv_sec: secs,
        tv_nsec: 0,
    };
    let times = rustix::fs::Timestamps {
        last_access: at,
        last_modification: at,
    };
    rustix::fs::utimensat(rustix::fs::CWD, path, &times, rustix::fs::AtFlags::SYMLINK_NOFOLLOW)
        .unwrap_or_else(|e| panic!("set the time of {}: {e}", path.display()));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_escaped_and_sorted_and_the_rest_follows() {
        let run = Run {
            args: &["-0", "a b"],
            stdout: b"z\0new\nline\0bad\xff\0/tmp/x/in\0",
            stderr: b"oops /tmp/x\n",
            code: Some(1),
        };
        let text = run.render(0, true, &[(b"/tmp/x", b"{root}")]).unwrap();
        assert_eq!(
            text,
            "args: -0 a b\nbad\\xff\nnew\\x0aline\nz\n{root}/in\n[exit 1]\n[stderr] oops {root}\n"
        );
        let unterminated = Run {
            args: &[],
            stdout: b"a\nb",
            stderr: b"",
            code: Some(0),
        };
        assert!(unterminated.render(b'\n', false, &[]).is_err());
    }

    #[test]
    fn a_difference_names_the_lines() {
        let err = compare("a\nb\n", "a\nc\n", "x").unwrap_err();
        assert!(err.contains("- b\n") && err.contains("+ c\n"), "{err}");
        let err = compare("a\nb\n", "b\na\n", "x").unwrap_err();
        assert!(err.contains("different order"), "{err}");
    }
}
