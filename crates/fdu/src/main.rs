use std::process::ExitCode;

fn main() -> ExitCode {
    // Started by mpirun or srun as one of several tasks, a build without
    // MPI would measure and print the whole tree once per task.
    if let Some(launched) = fnd_mpi::launch::launched() {
        if launched.speaks() {
            fdu::messages::report(&format!(
                "started as {} MPI tasks, but this build has no MPI support; rebuild with --features mpi",
                launched.tasks
            ));
        }
        return ExitCode::from(2);
    }
    fdu::run()
}
