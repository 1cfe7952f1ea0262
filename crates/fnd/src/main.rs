use std::process::ExitCode;

fn main() -> ExitCode {
    if let Some(launched) = fnd_mpi::launch::launched() {
        // Started by mpirun or srun as one of several tasks: one job over
        // all of them; a build without MPI would walk and print the whole
        // tree once per task.
        #[cfg(feature = "mpi")]
        return fnd::ranks::run(launched);
        #[cfg(not(feature = "mpi"))]
        {
            if launched.speaks() {
                fnd::error::print_error(format_args!(
                    "started as {} MPI tasks, but this build has no MPI support; rebuild with --features mpi",
                    launched.tasks
                ));
            }
            return ExitCode::from(2);
        }
    }
    if std::env::var_os("OMPI_COMM_WORLD_SIZE").is_some() {
        // One task of Open MPI's mpirun: print to its stdout directly, not
        // through its slow copy of a pseudo-terminal (see fnd_mpi::stdio).
        // And on every core it was given, not the one Open MPI bound a
        // job of one task to by default.
        fnd_mpi::stdio::adopt_launcher_output();
        fnd_mpi::launch::undo_default_binding();
    }
    fnd::run()
}
