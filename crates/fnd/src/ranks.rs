//! `fnd` as one MPI job (feature `mpi`): `mpirun -n N fnd [options]`
//! prints what `fnd [options]` prints, each rank walking part of the tree.
//!
//! 1. Every rank parses the same command line before MPI starts, so a bad
//!    option, `--help` or a refused combination never starts it: rank 0
//!    speaks, every rank exits (rank 0 with fd's status, the others 0).
//!    A rank that Open MPI bound to one core by its own default gets its
//!    launcher's cores back, and a job on one node starts MPI without
//!    probing network layers (`fnd_mpi::launch::before_threads`).
//! 2. Rank 0 writes to the launcher's own stdout and stderr when it can
//!    (`fnd_mpi::stdio`), and decides for everyone how output looks
//!    (a terminal or not, `NO_COLOR`, `LS_COLORS`, the host of hyperlinks).
//!    When the launcher says which rank it is, it resolves its options and
//!    starts walking before MPI is up (`Resolved::early`).
//! 3. Every rank resolves its options; they agree that all succeeded and
//!    that all see the same search paths, or the first that failed says
//!    why (once) and the job ends with status 1 (rank 0 stops a walk it
//!    started early).
//! 4. The walk is shared (`fnd_walk::ranks`); each rank sends its results
//!    and commands' output to rank 0 in chunks of whole records
//!    (`crate::forward`), and its error messages to rank 0's stderr.
//! 5. Each rank hands rank 0 its result (whether it found anything,
//!    whether its commands succeeded, its counts); rank 0 exits as fd
//!    would have, the others with 0, so that `mpirun` exits with fd's
//!    status (it takes the first non-zero one). `FND_MPI_STATS=1` prints
//!    each rank's counts on rank 0's stderr.

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;
use std::thread::JoinHandle;

use clap::Parser;
use fnd_mpi::codec::{Reader, Writer as Encoder};
use fnd_mpi::launch::Launched;
use fnd_mpi::{Job, Prepared, Stream, Tuning, World};
use fnd_output::Writer;
use fnd_walk::ranks::{OnRanks, RankCounts, Ranks};

use crate::cli::{Cli, OrderArg};
use crate::config::{Config, OutputEnv};
use crate::error::{print_error, report_errors, Outcome, Report};
use crate::forward::{Rank0Out, RankOutput};
use crate::results::Sink;
use crate::search;

/// Status of a command line refused under MPI.
const REFUSED: u8 = 2;

/// The whole command as one rank of `launched`'s tasks; `None` when it
/// is one process's work (an index to build or read, see
/// [`one_task_alone`]) and this task is to do it: the caller runs the
/// command as it would without a launcher.
pub fn run(launched: Launched) -> Option<ExitCode> {
    fnd_mpi::launch::before_threads();
    let speaks = launched.speaks();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if speaks => e.exit(),
        Err(_) => return Some(ExitCode::SUCCESS),
    };
    if cli.gen_completions.is_some() || cli.gen_man {
        return Some(
            crate::generate::requested(&cli)
                .filter(|_| speaks)
                .unwrap_or(ExitCode::SUCCESS),
        );
    }
    if cli.build_index || cli.indexed.is_some() {
        return one_task_alone(&launched);
    }
    if let Some(why) = refusal(&cli) {
        if speaks {
            print_error(format_args!("{why} (this job has {} ranks)", launched.tasks));
            return Some(ExitCode::from(REFUSED));
        }
        return Some(ExitCode::SUCCESS);
    }
    let decided = speaks.then(|| {
        fnd_mpi::stdio::adopt_launcher_output();
        rank_0_output_env()
    });
    // Rank 0 resolves its options before MPI is up, and starts walking
    // (see `Resolved`).
    let early = match (launched.rank, &decided) {
        (Some(0), Some((env, stderr_is_terminal))) => {
            report_errors(None, Some(*stderr_is_terminal));
            Some(Resolved::early(Config::new_in(&cli, env), launched.tasks as usize))
        }
        _ => None,
    };
    let world = World::init("fnd").unwrap_or_else(|e| e.exit());
    let rank = world.rank();
    let code = run_job(&world, &cli, decided, early);
    drop(world);
    Some(if rank == 0 {
        ExitCode::from(code)
    } else {
        ExitCode::SUCCESS
    })
}

/// `--build-index` and `--indexed`: an index is built or read by one
/// process, so the first task does the whole command alone (`None`: as
/// it would without a launcher), and the others end at once (the job as
/// a walk over every rank would ignore the index, and took
/// `--build-index .` for a search for `.`).
fn one_task_alone(launched: &Launched) -> Option<ExitCode> {
    match launched.rank {
        Some(0) => None,
        Some(_) => Some(ExitCode::SUCCESS),
        None => {
            print_error(format_args!(
                "--build-index and --indexed run as one task, but the launcher of these {} tasks does not say which task this is; run it as one task",
                launched.tasks
            ));
            Some(ExitCode::from(REFUSED))
        }
    }
}

/// Why the command line cannot run as several ranks, if it cannot.
fn refusal(cli: &Cli) -> Option<&'static str> {
    if cli.sort.is_some() {
        return Some("--sort needs a single process: the ranks of an MPI job find entries in no common order");
    }
    if cli.order != OrderArg::Parallel {
        return Some("--order bfs and dfs need a single process: the ranks of an MPI job read in no common order");
    }
    // --max-results and -1 with a command (-x, -X, -l), which would need
    // results counted across ranks before they run, are refused by the
    // option parser already, as in fd.
    None
}

/// How rank 0's output looks (its stdout a terminal or not, `NO_COLOR`,
/// `LS_COLORS`, the host of hyperlinks), and whether its stderr is a
/// terminal.
fn rank_0_output_env() -> (OutputEnv, bool) {
    (OutputEnv::here(), fnd_mpi::stdio::stderr_is_terminal())
}

/// Rank 0's decisions about output (`decided` there), for every rank.
fn output_env(world: &World, decided: Option<(OutputEnv, bool)>) -> (OutputEnv, bool) {
    let mut mine = Vec::new();
    if world.rank() == 0 {
        let (env, stderr_is_terminal) = decided.expect("rank 0 decides before MPI starts");
        mine.push(u8::from(stderr_is_terminal));
        mine.extend_from_slice(&env.encode());
    }
    let bytes = world.broadcast(&mine);
    let env = bytes.get(1..).and_then(OutputEnv::decode);
    let env = env.unwrap_or_else(|| fnd_mpi::world::fatal("rank 0's output settings do not decode"));
    (env, bytes[0] == 1)
}

/// What a rank tells the others of its options: resolved, with these
/// search paths, or not, and why.
fn agreement(config: Result<&Config, &str>) -> Vec<u8> {
    let mut mine = Encoder::new();
    match config {
        Ok(config) => {
            mine.u8(0).u32(config.search.roots.len() as u32);
            for root in &config.search.roots {
                mine.bytes(root.as_os_str().as_encoded_bytes());
            }
        }
        Err(msg) => {
            mine.u8(1).bytes(msg.as_bytes());
        }
    };
    mine.finish()
}

/// Whether every rank resolved its options (this rank's `agreement`, and
/// why not, `failed`) and sees the same search paths; or why not, said
/// once. `Err` holds rank 0's exit status.
fn agree(world: &World, agreement: &[u8], failed: Option<&str>, stderr_is_terminal: bool) -> Result<(), u8> {
    let all = world.all_gather(agreement);
    let first_failed = all.iter().position(|r| r.first() != Some(&0));
    if let Some(failed_rank) = first_failed {
        // The first rank that failed says why (rank 0's message, usually;
        // another rank's when only it could not resolve its options).
        if failed_rank == world.rank() {
            if let Some(msg) = failed {
                report_errors(None, Some(stderr_is_terminal));
                match failed_rank {
                    0 => print_error(msg),
                    rank => print_error(format_args!("{msg} (on rank {rank} of this MPI job)")),
                }
            }
        }
        return Err(Outcome::Error.code());
    }
    if let Some(other) = all.iter().position(|r| *r != all[0]) {
        if world.rank() == 0 {
            print_error(format_args!(
                "rank {other} of this MPI job sees other search paths than rank 0: every rank must see the same tree"
            ));
        }
        return Err(Outcome::Error.code());
    }
    Ok(())
}

/// A rank's options, resolved.
enum Resolved {
    /// And its part of the walk started, with what it tells the others.
    Walking(Part, Vec<u8>),
    Ready(Box<Config>),
    Failed(String),
}

impl Resolved {
    fn new(config: Result<Config, String>) -> Resolved {
        config.map_or_else(Resolved::Failed, |config| Resolved::Ready(Box::new(config)))
    }

    /// Rank 0's options, resolved before MPI is up, in a job of `size`
    /// ranks. It starts walking at once: `MPI_Init_thread` takes a quarter
    /// of a second with Open MPI's default transports, and the others take
    /// part of its work when they are up. Not when it runs commands (a
    /// `fork` while Open MPI starts can fail with `EFAULT`), nor for the
    /// tests that pause after each directory (so that every rank starts
    /// together, and work moves).
    fn early(config: Result<Config, String>, size: usize) -> Resolved {
        match config {
            Ok(config)
                if matches!(config.output, crate::results::Output::Print(_)) && Ranks::test_pause().is_none() =>
            {
                let told = agreement(Ok(&config));
                Resolved::Walking(Part::start(0, size, config), told)
            }
            config => Resolved::new(config),
        }
    }
}

/// This rank's part of the walk, on a thread of its own, and its side of
/// the job, prepared before MPI is up.
struct Part {
    ranks: Arc<Ranks>,
    prepared: Prepared,
    /// Rank 0's stdout and stderr.
    here: Option<Arc<Rank0Out>>,
    /// Whether the search found anything, and whether its commands and
    /// output succeeded.
    walking: JoinHandle<(Outcome, bool)>,
}

impl Part {
    /// Starts walking: on rank 0 from the roots, elsewhere once the job
    /// hands this rank directories.
    fn start(rank: usize, size: usize, config: Config) -> Part {
        let mut search = config.search;
        // Results stream at once (fd's first 100 ms sorted is one
        // process's), and with --max-results each chunk goes to rank 0 to
        // be counted.
        search.hold_early = None;
        search.flush_each_chunk = search.max_results.is_some();
        let framed = search
            .max_results
            .filter(|_| matches!(config.output, crate::results::Output::Print(_)));
        let ranks = Arc::new(Ranks::new(rank == 0 && !search.walked_roots().is_empty()));
        if let Some(pause) = Ranks::test_pause() {
            ranks.pause_after_each_directory(pause);
        }
        let here = (rank == 0).then(|| Arc::new(Rank0Out::new(Writer::stdout(), framed)));
        let sink = here.clone().map(|h| h as Arc<dyn fnd_mpi::Sink>);
        let prepared = Job::prepare(rank, size, Tuning::default(), sink);
        let handle = prepared.handle();
        let sink = Sink::ranked(
            config.output,
            RankOutput::new(handle.clone(), here.clone(), framed.is_some()),
        );
        let walking = {
            let ranks = Arc::clone(&ranks);
            std::thread::Builder::new()
                .name("fnd-walk".into())
                .spawn(move || {
                    let walker = OnRanks {
                        ranks: &ranks,
                        handle: &handle,
                    };
                    let outcome = search::run_on(search, || sink.writer(), &walker);
                    (outcome, sink.finish())
                })
                .unwrap_or_else(|e| fnd_mpi::world::fatal(format!("cannot start a thread for the walk: {e}")))
        };
        Part {
            ranks,
            prepared,
            here,
            walking,
        }
    }

    /// Stops a walk started before the job failed to start, and waits for it.
    fn abandon(self) {
        let local = self.ranks.local();
        local.stop();
        local.over();
        let _ = self.walking.join();
    }
}

/// What one rank hands rank 0 at the end.
struct RankResult {
    found: bool,
    commands_ok: bool,
    counts: RankCounts,
}

impl RankResult {
    fn encode(&self) -> Vec<u8> {
        Encoder::new()
            .u8(u8::from(self.found) | u8::from(self.commands_ok) << 1)
            .u64(self.counts.dirs_read)
            .u64(self.counts.dirs_received)
            .u64(self.counts.dirs_given)
            .finish()
    }

    fn decode(bytes: &[u8]) -> Option<RankResult> {
        let mut r = Reader::new(bytes);
        let flags = r.u8().ok()?;
        let counts = RankCounts {
            dirs_read: r.u64().ok()?,
            dirs_received: r.u64().ok()?,
            dirs_given: r.u64().ok()?,
        };
        r.end().ok()?;
        Some(RankResult {
            found: flags & 1 != 0,
            commands_ok: flags & 2 != 0,
            counts,
        })
    }
}

/// Steps 2 to 5 of the module doc; rank 0's exit status. `decided`
/// holds rank 0's output settings, `early` its options when it resolved
/// them before MPI was up.
fn run_job(world: &World, cli: &Cli, decided: Option<(OutputEnv, bool)>, early: Option<Resolved>) -> u8 {
    let rank = world.rank();
    let (env, stderr_is_terminal) = output_env(world, decided);
    // Until the job runs, only rank 0 speaks.
    let quiet: Report = Arc::new(|_| {});
    report_errors((rank != 0).then(|| quiet.clone()), Some(stderr_is_terminal));
    let resolved = early.unwrap_or_else(|| Resolved::new(Config::new_in(cli, &env)));
    let agreed = match &resolved {
        Resolved::Walking(_, told) => agree(world, told, None, stderr_is_terminal),
        Resolved::Ready(config) => agree(world, &agreement(Ok(config)), None, stderr_is_terminal),
        Resolved::Failed(msg) => agree(world, &agreement(Err(msg)), Some(msg), stderr_is_terminal),
    };
    let part = match (resolved, agreed) {
        (Resolved::Walking(part, _), Ok(())) => part,
        (Resolved::Ready(config), Ok(())) => Part::start(rank, world.size(), *config),
        (Resolved::Walking(part, _), Err(code)) => {
            part.abandon();
            return code;
        }
        (_, agreed) => return agreed.err().unwrap_or(Outcome::Error.code()),
    };
    let Part {
        ranks,
        prepared,
        here,
        walking,
    } = part;
    let handle = prepared.handle();
    if rank != 0 {
        report_errors(
            Some(Arc::new(move |text: &[u8]| {
                handle.output(Stream::Stderr, text.to_vec())
            })),
            Some(stderr_is_terminal),
        );
    }
    let job = prepared.start(world, ranks.local());
    let (outcome, commands_ok) = walking
        .join()
        .unwrap_or_else(|_| fnd_mpi::world::fatal("the walk's thread panicked"));
    // From here on nothing may reach the job's output.
    report_errors((rank != 0).then_some(quiet), Some(stderr_is_terminal));
    let result = RankResult {
        found: outcome == Outcome::HasResults(true),
        commands_ok,
        counts: ranks.counts(),
    };
    let end = job.finish(result.encode());
    let Some(results) = end.results else {
        return 0;
    };
    let results: Vec<RankResult> = results
        .iter()
        .enumerate()
        .map(|(r, bytes)| {
            RankResult::decode(bytes)
                .unwrap_or_else(|| fnd_mpi::world::fatal(format!("rank {r}'s result does not decode")))
        })
        .collect();
    if std::env::var_os("FND_MPI_STATS").is_some() {
        print_stats(&results);
    }
    let here = here.expect("rank 0's output");
    if let Some(errno) = here.failure() {
        print_error(format_args!(
            "Could not write to output: {}",
            std::io::Error::from(errno)
        ));
        return Outcome::Error.code();
    }
    if here.is_broken() || !results.iter().all(|r| r.commands_ok) {
        return Outcome::Error.code();
    }
    if cli.quiet {
        return Outcome::HasResults(results.iter().any(|r| r.found)).code();
    }
    Outcome::Success.code()
}

/// One line per rank on stderr: what it read, received and gave.
fn print_stats(results: &[RankResult]) {
    let mut text = String::new();
    for (rank, r) in results.iter().enumerate() {
        let c = r.counts;
        text.push_str(&format!(
            "fnd-mpi: rank {rank}: {} directories read, {} received, {} given\n",
            c.dirs_read, c.dirs_received, c.dirs_given
        ));
    }
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}
