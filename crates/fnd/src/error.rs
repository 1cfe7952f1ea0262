//! Error reporting and exit codes, as fd has them.

use std::fmt::Display;
use std::process::ExitCode;
use std::sync::{Arc, RwLock};

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

/// Where error messages go, when not to this process's stderr.
pub type Report = Arc<dyn Fn(&[u8]) + Send + Sync>;

/// Where errors go instead of stderr, and whether the stderr they end up
/// on is a terminal (`None`: ask this process's).
struct Reporting {
    report: Option<Report>,
    terminal: Option<bool>,
}

static REPORTING: RwLock<Reporting> = RwLock::new(Reporting {
    report: None,
    terminal: None,
});

/// Send every error message to `report` instead of stderr (a rank of an
/// MPI job forwards them to rank 0, or keeps quiet while only rank 0
/// speaks), escaped as for a terminal when `terminal` says the stderr
/// they reach is one. `None` restores stderr.
pub fn report_errors(report: Option<Report>, terminal: Option<bool>) {
    *REPORTING.write().unwrap_or_else(|e| e.into_inner()) = Reporting { report, terminal };
}

/// Print one error to stderr, prefixed like fd's. On a terminal, control
/// characters from file names are shown escaped, as in results: an error
/// about a hostile name must not rewrite the screen either.
pub fn print_error(msg: impl Display) {
    use std::io::Write;
    let text = format!("[fnd error]: {msg}\n");
    let reporting = REPORTING.read().unwrap_or_else(|e| e.into_inner());
    let stderr = std::io::stderr();
    let terminal = reporting.terminal.unwrap_or_else(fnd_mpi::stdio::stderr_is_terminal);
    let out = if terminal {
        let mut out = Vec::with_capacity(text.len());
        for line in text.split_inclusive('\n') {
            let body = line.strip_suffix('\n');
            crate::escape::push_escaped(body.unwrap_or(line).as_bytes(), &mut out);
            if body.is_some() {
                out.push(b'\n');
            }
        }
        out
    } else {
        text.into_bytes()
    };
    match &reporting.report {
        Some(report) => report(&out),
        None => {
            let _ = stderr.lock().write_all(&out);
        }
    }
}
