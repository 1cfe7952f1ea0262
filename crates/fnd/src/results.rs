//! Where results go: printed (plain, coloured, `--format`) or handed to
//! commands (`-x`, `-X`, `-l`), as bytes to one [`Writer`] (stdout, for
//! the command), or under MPI to rank 0's. A search asks the [`Sink`] for
//! one [`ResultWriter`] per thread and does not care which.

use std::sync::Arc;

use fnd_output::{Buffer, Writer};

use crate::error::print_error;
use crate::exec::{ExecConfig, ExecSender, Executor, LocalOutput};
#[cfg(feature = "mpi")]
use crate::forward::{RankOutput, RankRecords};
use crate::found::{Emit, Found};
use crate::listing::{Listing, ListingConfig};

/// What becomes of results: the rules of one of the two ways out.
// One per run: the size of the larger variant does not matter.
#[allow(clippy::large_enum_variant)]
pub enum Output {
    Print(ListingConfig),
    Exec(ExecConfig),
}

/// The results' destination, for the whole run.
pub struct Sink {
    target: Target,
}

// One per run: the size of the larger variant does not matter.
#[allow(clippy::large_enum_variant)]
enum Target {
    Print(ListingConfig, Writer),
    #[cfg(feature = "mpi")]
    PrintRanked(ListingConfig, RankOutput),
    Exec(Executor),
}

impl Sink {
    /// Results handled as `output` says, their bytes written to `out`:
    /// printed records, and the output of each `-x` command run with more
    /// than one thread (a lone runner's command, and `-X`'s, write to the
    /// process's stdout themselves). Starts the threads that run commands.
    pub fn new(output: Output, out: Writer) -> Sink {
        let target = match output {
            Output::Exec(exec) => Target::Exec(Executor::start(exec, Arc::new(LocalOutput(out)))),
            Output::Print(cfg) => {
                // `escape` is set for a terminal.
                if cfg.escape && (cfg.colors.is_some() || cfg.hyperlinks.is_some()) {
                    crate::color::reset_terminal_on_interrupt();
                }
                Target::Print(cfg, out)
            }
        };
        Sink { target }
    }

    /// Results of one rank of an MPI job, sent to rank 0's stdout (and
    /// every command's output, kept whole, to its stdout and stderr).
    #[cfg(feature = "mpi")]
    pub fn ranked(output: Output, out: RankOutput) -> Sink {
        let target = match output {
            Output::Exec(mut exec) => {
                exec.capture = true;
                Target::Exec(Executor::start(exec, Arc::new(out)))
            }
            Output::Print(cfg) => Target::PrintRanked(cfg, out),
        };
        Sink { target }
    }

    /// A writer for one walking thread.
    pub fn writer(&self) -> ResultWriter<'_> {
        match &self.target {
            Target::Print(cfg, out) => ResultWriter::Print(Listing::new(cfg, Buffer::new(out.clone()))),
            #[cfg(feature = "mpi")]
            Target::PrintRanked(cfg, out) => ResultWriter::PrintRanked(Listing::new(cfg, out.records())),
            Target::Exec(exec) => ResultWriter::Exec(exec.sender()),
        }
    }

    /// After the search, once every writer is gone: wait for the commands.
    /// False when output failed (said once on stderr), its reader went
    /// away (`fnd | head -1`: fd exits 1 without a word), or a command
    /// failed or could not run. Under MPI, output is rank 0's to judge.
    pub fn finish(self) -> bool {
        match self.target {
            Target::Print(_, out) => {
                if let Some(errno) = out.failure() {
                    print_error(format_args!(
                        "Could not write to output: {}",
                        std::io::Error::from(errno)
                    ));
                    return false;
                }
                !out.is_broken()
            }
            #[cfg(feature = "mpi")]
            Target::PrintRanked(..) => true,
            // Commands' output meeting a closed pipe is theirs to report, as in fd.
            Target::Exec(exec) => exec.finish(),
        }
    }
}

/// One thread's way out for results.
// One per worker thread; boxing the listing would cost an indirection per result.
#[allow(clippy::large_enum_variant)]
pub enum ResultWriter<'a> {
    Print(Listing<'a>),
    #[cfg(feature = "mpi")]
    PrintRanked(Listing<'a, RankRecords>),
    Exec(ExecSender),
}

impl Emit for ResultWriter<'_> {
    #[inline]
    fn emit(&mut self, entry: &impl Found, prefix: &[u8]) -> bool {
        match self {
            ResultWriter::Print(listing) => listing.entry(entry, prefix),
            #[cfg(feature = "mpi")]
            ResultWriter::PrintRanked(listing) => listing.entry(entry, prefix),
            ResultWriter::Exec(sender) => sender.entry(entry, prefix),
        }
    }

    fn flush(&mut self) -> bool {
        match self {
            ResultWriter::Print(listing) => listing.flush(),
            #[cfg(feature = "mpi")]
            ResultWriter::PrintRanked(listing) => listing.flush(),
            ResultWriter::Exec(sender) => sender.send(),
        }
    }
}
