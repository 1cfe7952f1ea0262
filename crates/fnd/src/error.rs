//! Error reporting and exit codes, as fd has them.

use std::fmt::Display;
use std::process::ExitCode;

/// How the run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Finished (whether or not anything matched, unless `-q`).
    Success,
    /// `-q`: whether something matched.
    HasResults(bool),
    /// A fatal error (bad option value, no valid search path, output failure).
    Error,
}

impl Outcome {
    pub fn code(self) -> u8 {
        match self {
            Outcome::Success | Outcome::HasResults(true) => 0,
            Outcome::HasResults(false) | Outcome::Error => 1,
        }
    }

    pub fn exit_code(self) -> ExitCode {
        ExitCode::from(self.code())
    }
}

/// Print one error to stderr, prefixed like fd's. On a terminal, control
/// characters from file names are shown escaped, as in results: an error
/// about a hostile name must not rewrite the screen either.
pub fn print_error(msg: impl Display) {
    use std::io::{IsTerminal, Write};
    let text = format!("[fnd error]: {msg}\n");
    let stderr = std::io::stderr();
    if !stderr.is_terminal() {
        let _ = stderr.lock().write_all(text.as_bytes());
        return;
    }
    let mut out = Vec::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let body = line.strip_suffix('\n');
        crate::escape::push_escaped(body.unwrap_or(line).as_bytes(), &mut out);
        if body.is_some() {
            out.push(b'\n');
        }
    }
    let _ = stderr.lock().write_all(&out);
}
