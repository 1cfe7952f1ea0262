//! `--gen-completions [SHELL]` and `--gen-man`: shell completions
//! (clap_complete) and the man page (clap_mangen), both from the same
//! option definitions the parser uses, so they never drift from it.

use std::io::Write;
use std::process::ExitCode;

use clap::CommandFactory;
use clap_complete::Shell;

use crate::cli::Cli;

/// If the options ask for a completion script or the man page, print it
/// and say how to exit.
pub fn requested(cli: &Cli) -> Option<ExitCode> {
    if let Some(shell) = cli.gen_completions {
        return Some(completions(shell));
    }
    if cli.gen_man {
        return Some(man_page());
    }
    None
}

fn completions(shell: Option<Shell>) -> ExitCode {
    let Some(shell) = shell.or_else(Shell::from_env) else {
        crate::error::print_error("Unable to get shell from environment");
        return ExitCode::from(1);
    };
    let mut cmd = Cli::command();
    cmd.build();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, "fnd", &mut out);
    write_stdout(&out)
}

fn man_page() -> ExitCode {
    let mut out = Vec::new();
    if clap_mangen::Man::new(Cli::command()).render(&mut out).is_err() {
        return ExitCode::from(1);
    }
    write_stdout(&out)
}

fn write_stdout(bytes: &[u8]) -> ExitCode {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(bytes).and_then(|_| stdout.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            crate::error::print_error(format_args!("Could not write to output: {e}"));
            ExitCode::from(1)
        }
    }
}
