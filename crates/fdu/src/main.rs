use std::process::ExitCode;

fn main() -> ExitCode {
    // Started by mpirun or srun as one of several tasks, fdu would measure
    // and print the whole tree once per task: it does not run as an MPI
    // job (fnd does), whatever the build.
    if let Some(launched) = fnd_mpi::launch::launched() {
        if launched.speaks() {
            fdu::messages::report(&format!(
                "started as {} MPI tasks, but fdu does not run as an MPI job; run it as one task",
                launched.tasks
            ));
        }
        return ExitCode::from(2);
    }
    fdu::run()
}
