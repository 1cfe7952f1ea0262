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

/// Print one error line to stderr, prefixed like fd's.
pub fn print_error(msg: impl Display) {
    eprintln!("[fnd error]: {msg}");
}
