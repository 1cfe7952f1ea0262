use std::process::ExitCode;

/// jemalloc, as fd has: the ordered walk's buffers are filled on one
/// thread and freed or reused on another, where glibc's malloc takes the
/// lock of the arena they came from (1,700 futex calls a `fnd --sort
/// name` of /usr, none with jemalloc; million 1.22x -> 1.15x of `fnd -u`).
/// Out of memory (a huge directory sorted under `ulimit -v`, say), it
/// ends with one line and status 1, not SIGABRT.
#[global_allocator]
static ALLOCATOR: fnd_walk::EndWhenExhausted<tikv_jemallocator::Jemalloc> =
    fnd_walk::EndWhenExhausted::new(tikv_jemallocator::Jemalloc, "fdu");

/// Whether stdout was closed must be seen before Rust's runtime opens
/// /dev/null there.
#[used]
#[link_section = ".init_array"]
static NOTE_CLOSED_STDOUT: extern "C" fn() = fdu::output::note_closed_stdout;

/// Under `ulimit -v`, threads without signal stacks of their own: std
/// decides as its runtime starts, so this runs before it.
#[used]
#[link_section = ".init_array"]
static SKIP_SIGNAL_STACKS: extern "C" fn() = fnd_walk::skip_signal_stacks_under_limit;

fn main() -> ExitCode {
    fnd_walk::fit_address_space();
    if let Some(launched) = fnd_mpi::launch::launched() {
        #[cfg(feature = "mpi")]
        return fdu::ranks::run(launched);
        // Started by mpirun or srun as one of several tasks, a build
        // without MPI would measure and print the whole tree once per task.
        #[cfg(not(feature = "mpi"))]
        {
            if launched.speaks() {
                fdu::messages::report(&format!(
                    "started as {} MPI tasks, but this fdu was built without MPI support; rebuild with --features mpi",
                    launched.tasks
                ));
            }
            return ExitCode::from(2);
        }
    }
    fnd_mpi::launch::alone_under_launcher();
    // A bug that panics on one thread must not leave the others waiting
    // (an MPI job's ranks abort the job instead: `fnd_mpi::World`).
    fnd_walk::end_process_on_panic();
    fdu::run()
}
