use std::process::ExitCode;

fn main() -> ExitCode {
    fnd::run()
}
