//! A panic on any thread ends the process.
//!
//! The walk's threads wait on one another: a worker that panics (a bug)
//! leaves the directory it was reading unfinished, the others wait for it
//! for good, and the process with them, silent after the panic's message.
//! A program that walks calls [`end_process_on_panic`] once, before its
//! walks: after the message, the process exits with status 101, the
//! status of a panic that reaches `main`. A library leaves the choice to
//! the program (the Python module does not make it).
//!
//! Relies on nothing else in this crate.

/// Make a panic on any thread end the process with status 101, after the
/// panic hook in place (the default one prints the message) has run.
///
/// A hook installed after this one runs first, then this one: a program
/// that must clean up (restore a terminal, abort an MPI job) installs its
/// hook later, calls the previous one, and does its part before.
///
/// ```no_run
/// fnd_walk::end_process_on_panic();
/// // A filter that panics on a worker thread now ends the program
/// // instead of leaving the other workers waiting.
/// fnd_walk::WalkBuilder::new(".").keep(|_| panic!("a bug")).for_each(|_| fnd_walk::Flow::Continue);
/// ```
pub fn end_process_on_panic() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        previous(info);
        std::process::exit(101);
    }));
}
