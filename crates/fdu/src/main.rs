use std::process::ExitCode;

fn main() -> ExitCode {
    fdu::run()
}
