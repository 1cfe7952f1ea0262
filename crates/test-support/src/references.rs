//! The tools the tests compare with, found on `PATH` and checked by version.
//!
//! A differential test that cannot find its reference must not pass as if
//! it had compared. Each lookup returns the tool only when its version line
//! says it is the one the comparison is about (fd 10.5, not Debian's
//! `fdfind` 8.x; GNU du, not busybox's), and otherwise says why not:
//!
//! - by default a missing or wrong reference is a skip, written to the
//!   test's real stderr (past libtest's capture, so an ordinary
//!   `cargo test` run shows it);
//! - with `FND_REQUIRE_REFERENCE=1` (as `.ci/run` sets) it is a failure.
//!
//! ```
//! use fnd_test_support::references::{self, Tool};
//!
//! // What a differential test does first: no reference, no comparison.
//! let Some(du) = references::gnu_du() else { return };
//! assert!(du.version().starts_with("du (GNU coreutils)"));
//! let out = du.command().args(["-s", "-b", "."]).output().unwrap();
//! assert!(out.status.success());
//! assert_eq!(du.tool(), Tool::GnuDu);
//! ```

use std::collections::HashMap;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};

/// The variable that turns a missing reference into a failure.
pub const REQUIRE_VAR: &str = "FND_REQUIRE_REFERENCE";

/// A tool some test compares with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Tool {
    /// fd 10.5, whose options, output and exit codes `fnd` follows.
    Fd,
    /// GNU du (coreutils), whose lines `fdu` prints byte for byte.
    GnuDu,
    /// GNU find (findutils), the listing `fnd -u` is checked against.
    GnuFind,
    /// ncdu 1.x or 2.x, whose export format `fdu` reads and writes.
    Ncdu,
    /// gdu 5 or later, which reads and writes ncdu's export format.
    Gdu,
    /// plocate, the index `fnd`'s own index is measured against.
    Plocate,
    /// plocate's `updatedb`, which builds plocate's database.
    Updatedb,
    /// tmux, the real terminal the interactive tests drive.
    Tmux,
    /// Open MPI's `mpirun`, which starts the MPI tests.
    Mpirun,
    /// strace, which counts system calls.
    Strace,
    /// git, which makes the repositories the ignore rules depend on.
    Git,
    /// valgrind, which runs the binaries on a CPU it emulates: what a user
    /// debugging or profiling with it does.
    Valgrind,
}

struct Spec {
    program: &'static str,
    version_args: &'static [&'static str],
    /// What counts, for messages.
    wanted: &'static str,
    /// How to install it on Debian.
    install: &'static str,
    /// Whether the first line of the version output names the right tool.
    accepts: fn(&str) -> bool,
}

impl Tool {
    fn spec(self) -> Spec {
        match self {
            Tool::Fd => Spec {
                program: "fd",
                version_args: &["--version"],
                wanted: "fd 10.5.x",
                install: "cargo install --locked fd-find@10.5.0 (Debian's fd-find is fd 8, named fdfind)",
                accepts: |v| v.starts_with("fd 10.5."),
            },
            Tool::GnuDu => Spec {
                program: "du",
                version_args: &["--version"],
                wanted: "GNU du (coreutils)",
                install: "apt-get install coreutils",
                accepts: |v| v.starts_with("du (GNU coreutils) "),
            },
            Tool::GnuFind => Spec {
                program: "find",
                version_args: &["--version"],
                wanted: "GNU find (findutils)",
                install: "apt-get install findutils",
                accepts: |v| v.starts_with("find (GNU findutils) "),
            },
            Tool::Ncdu => Spec {
                program: "ncdu",
                version_args: &["--version"],
                wanted: "ncdu 1.x or 2.x",
                install: "apt-get install ncdu",
                accepts: |v| {
                    v.strip_prefix("ncdu ")
                        .and_then(major)
                        .is_some_and(|m| (1..=2).contains(&m))
                },
            },
            Tool::Gdu => Spec {
                program: "gdu",
                version_args: &["--version"],
                wanted: "gdu 5 or later",
                install: "apt-get install gdu",
                // "Version:\t 5.22.0-1+b1" (Debian), "Version:\t v5.29.0" (upstream).
                accepts: |v| {
                    v.strip_prefix("Version:")
                        .map(|r| r.trim_start().trim_start_matches('v'))
                        .and_then(major)
                        .is_some_and(|m| m >= 5)
                },
            },
            Tool::Plocate => Spec {
                program: "plocate",
                version_args: &["--version"],
                wanted: "plocate",
                install: "apt-get install plocate",
                accepts: |v| v.starts_with("plocate "),
            },
            Tool::Updatedb => Spec {
                program: "updatedb",
                version_args: &["--version"],
                wanted: "plocate's updatedb",
                install: "apt-get install plocate",
                accepts: |v| v.starts_with("updatedb (plocate) "),
            },
            Tool::Tmux => Spec {
                program: "tmux",
                version_args: &["-V"],
                wanted: "tmux 3 or later",
                install: "apt-get install tmux",
                accepts: |v| v.strip_prefix("tmux ").and_then(major).is_some_and(|m| m >= 3),
            },
            Tool::Mpirun => Spec {
                program: "mpirun",
                version_args: &["--version"],
                wanted: "Open MPI's mpirun",
                install: "apt-get install openmpi-bin libopenmpi-dev",
                accepts: |v| v.starts_with("mpirun (Open MPI) "),
            },
            Tool::Strace => Spec {
                program: "strace",
                version_args: &["-V"],
                wanted: "strace",
                install: "apt-get install strace",
                accepts: |v| v.starts_with("strace -- version "),
            },
            Tool::Git => Spec {
                program: "git",
                version_args: &["--version"],
                wanted: "git",
                install: "apt-get install git",
                accepts: |v| v.starts_with("git version "),
            },
            Tool::Valgrind => Spec {
                program: "valgrind",
                version_args: &["--version"],
                wanted: "valgrind",
                install: "apt-get install valgrind",
                accepts: |v| v.starts_with("valgrind-"),
            },
        }
    }

    /// The name it is run by.
    pub fn program(self) -> &'static str {
        self.spec().program
    }
}

/// The leading number of a version ("1.18" -> 1, "3.3a" -> 3).
fn major(version: &str) -> Option<u32> {
    let digits: String = version.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// A reference tool that was found and has the right version.
#[derive(Clone, Debug)]
pub struct Reference {
    tool: Tool,
    path: PathBuf,
    version: String,
}

impl Reference {
    pub fn tool(&self) -> Tool {
        self.tool
    }

    /// Where it was found on `PATH`.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The first line of its version output.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// A command that runs it: the program whose version was checked (by
    /// the path found), under the name it was looked up by, since tools
    /// name themselves in messages by how they were started (`du: …`, not
    /// `/usr/bin/du: …`).
    pub fn command(&self) -> Command {
        let mut cmd = Command::new(&self.path);
        cmd.arg0(self.tool.program());
        cmd
    }
}

/// Why a reference cannot be used.
#[derive(Clone, Debug)]
pub struct Missing {
    tool: Tool,
    reason: String,
}

impl std::fmt::Display for Missing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let spec = self.tool.spec();
        write!(
            f,
            "{} (needed: {}; install: {})",
            self.reason, spec.wanted, spec.install
        )
    }
}

/// Whether a missing reference fails the test (`FND_REQUIRE_REFERENCE=1`).
pub fn required() -> bool {
    std::env::var_os(REQUIRE_VAR).is_some_and(|v| v == "1")
}

/// Look `tool` up on `PATH` and check its version, whatever the policy.
/// The answer is kept for the rest of the test binary's run.
pub fn find(tool: Tool) -> Result<Reference, Missing> {
    static FOUND: OnceLock<Mutex<HashMap<Tool, Result<Reference, Missing>>>> = OnceLock::new();
    let cache = FOUND.get_or_init(Default::default);
    if let Some(found) = cache.lock().unwrap().get(&tool) {
        return found.clone();
    }
    let found = probe(tool);
    cache.lock().unwrap().insert(tool, found.clone());
    found
}

fn probe(tool: Tool) -> Result<Reference, Missing> {
    let spec = tool.spec();
    let missing = |reason: String| Missing { tool, reason };
    let Some(path) = on_path(spec.program) else {
        return Err(missing(format!("`{}` is not on PATH", spec.program)));
    };
    let out = Command::new(&path)
        .args(spec.version_args)
        .env("LC_ALL", "C")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| missing(format!("`{}` could not be run: {e}", path.display())))?;
    let text = if out.stdout.is_empty() {
        &out.stderr
    } else {
        &out.stdout
    };
    let version = String::from_utf8_lossy(text)
        .lines()
        .next()
        .unwrap_or("")
        .trim()
        .to_string();
    if !(spec.accepts)(&version) {
        return Err(missing(format!(
            "`{} {}` says {version:?}",
            path.display(),
            spec.version_args.join(" ")
        )));
    }
    Ok(Reference { tool, path, version })
}

/// The first executable file named `program` in a directory of `PATH`.
fn on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .filter(|dir| !dir.as_os_str().is_empty())
        .map(|dir| dir.join(program))
        .find(|candidate| {
            std::fs::metadata(candidate).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// `tool` for a test that compares with it: `None` after saying on stderr
/// that the comparison is skipped, or a panic under `FND_REQUIRE_REFERENCE=1`.
#[track_caller]
pub fn require(tool: Tool) -> Option<Reference> {
    let found = find(tool);
    let required = required();
    if let (Err(missing), false) = (&found, required) {
        // Once per test and tool: a test may ask for its reference many times.
        static SAID: Mutex<Vec<(String, Tool)>> = Mutex::new(Vec::new());
        let said = (test_name(), tool);
        let mut all = SAID.lock().unwrap_or_else(|e| e.into_inner());
        if !all.contains(&said) {
            all.push(said);
            skip(&format!(
                "no reference to compare with: {missing}; {REQUIRE_VAR}=1 makes this a failure"
            ));
        }
    }
    settle(found, required)
}

#[track_caller]
fn settle(found: Result<Reference, Missing>, required: bool) -> Option<Reference> {
    match found {
        Ok(found) => Some(found),
        Err(missing) if required => panic!("{REQUIRE_VAR}=1 and no usable reference: {missing}"),
        Err(_) => None,
    }
}

/// The running test's name (libtest names each test's thread after it).
fn test_name() -> String {
    std::thread::current().name().unwrap_or("test").to_string()
}

/// Say on the real stderr, past libtest's capture, that (part of) the
/// running test was skipped and why.
pub fn skip(why: &str) {
    let _ = writeln!(std::io::stderr().lock(), "skipped ({}): {why}", test_name());
}

/// fd 10.5 (see [`require`]).
#[track_caller]
pub fn fd() -> Option<Reference> {
    require(Tool::Fd)
}

/// GNU du (see [`require`]).
#[track_caller]
pub fn gnu_du() -> Option<Reference> {
    require(Tool::GnuDu)
}

/// GNU find (see [`require`]).
#[track_caller]
pub fn gnu_find() -> Option<Reference> {
    require(Tool::GnuFind)
}

/// ncdu (see [`require`]).
#[track_caller]
pub fn ncdu() -> Option<Reference> {
    require(Tool::Ncdu)
}

/// gdu (see [`require`]).
#[track_caller]
pub fn gdu() -> Option<Reference> {
    require(Tool::Gdu)
}

/// plocate (see [`require`]).
#[track_caller]
pub fn plocate() -> Option<Reference> {
    require(Tool::Plocate)
}

/// plocate's updatedb (see [`require`]).
#[track_caller]
pub fn updatedb() -> Option<Reference> {
    require(Tool::Updatedb)
}

/// tmux (see [`require`]).
#[track_caller]
pub fn tmux() -> Option<Reference> {
    require(Tool::Tmux)
}

/// Open MPI's mpirun (see [`require`]).
#[track_caller]
pub fn mpirun() -> Option<Reference> {
    require(Tool::Mpirun)
}

/// strace (see [`require`]).
#[track_caller]
pub fn strace() -> Option<Reference> {
    require(Tool::Strace)
}

/// git (see [`require`]).
#[track_caller]
pub fn git() -> Option<Reference> {
    require(Tool::Git)
}

/// valgrind (see [`require`]).
#[track_caller]
pub fn valgrind() -> Option<Reference> {
    require(Tool::Valgrind)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accepts(tool: Tool, line: &str) -> bool {
        (tool.spec().accepts)(line)
    }

    #[test]
    fn version_lines_name_the_right_tool() {
        assert!(accepts(Tool::Fd, "fd 10.5.0"));
        assert!(!accepts(Tool::Fd, "fdfind 8.7.0"));
        assert!(!accepts(Tool::Fd, "fd 8.7.0"));
        assert!(!accepts(Tool::Fd, "fd 10.50.0"));
        assert!(accepts(Tool::GnuDu, "du (GNU coreutils) 9.1"));
        assert!(!accepts(Tool::GnuDu, "BusyBox v1.36.1 (2023-06-20) multi-call binary."));
        assert!(accepts(Tool::GnuFind, "find (GNU findutils) 4.9.0"));
        assert!(accepts(Tool::Ncdu, "ncdu 1.18"));
        assert!(accepts(Tool::Ncdu, "ncdu 2.3"));
        assert!(!accepts(Tool::Ncdu, "ncdu 3.0"));
        assert!(accepts(Tool::Gdu, "Version:\t 5.22.0-1+b1"));
        assert!(accepts(Tool::Gdu, "Version:\t v5.29.0"));
        assert!(!accepts(Tool::Gdu, "Version:\t v4.9.1"));
        assert!(accepts(Tool::Plocate, "plocate 1.1.18"));
        assert!(accepts(Tool::Updatedb, "updatedb (plocate) 1.1.18"));
        assert!(!accepts(Tool::Updatedb, "updatedb (mlocate) 0.26"));
        assert!(accepts(Tool::Tmux, "tmux 3.3a"));
        assert!(!accepts(Tool::Tmux, "tmux 2.9"));
        assert!(accepts(Tool::Mpirun, "mpirun (Open MPI) 4.1.4"));
        assert!(!accepts(Tool::Mpirun, "HYDRA build details:"));
        assert!(accepts(Tool::Strace, "strace -- version 6.1"));
        assert!(accepts(Tool::Git, "git version 2.39.5"));
        assert!(accepts(Tool::Valgrind, "valgrind-3.19.0"));
    }

    fn fd_missing() -> Missing {
        Missing {
            tool: Tool::Fd,
            reason: "`fd` is not on PATH".into(),
        }
    }

    #[test]
    fn a_program_not_on_path_is_missing_with_the_reason() {
        assert!(on_path("fnd-test-no-such-program").is_none());
        let text = fd_missing().to_string();
        assert!(text.contains("fd 10.5.x") && text.contains("cargo install"), "{text}");
    }

    #[test]
    fn a_missing_reference_is_a_skip_by_default() {
        assert!(settle(Err(fd_missing()), false).is_none());
    }

    #[test]
    #[should_panic(expected = "FND_REQUIRE_REFERENCE=1 and no usable reference: `fd` is not on PATH")]
    fn a_missing_reference_fails_when_required() {
        settle(Err(fd_missing()), true);
    }
}
