//! `fdu` as one MPI job (feature `mpi`): `mpirun -n N fdu [options]
//! [path...]` prints du's lines, each rank walking part of each operand.
//!
//! 1. Every rank parses the same command line before MPI starts: a bad
//!    option, `--help` or an option not supported here never starts it
//!    (rank 0 speaks, every rank exits; rank 0 with du's status). A rank
//!    that Open MPI bound to one core by its own default gets its
//!    launcher's cores back, a job on one node starts MPI without probing
//!    network layers (`fnd_mpi::launch::before_threads`), and
//!    rank 0 starts walking its first operand before MPI is up (`Early`).
//! 2. Per operand that is a directory, a first job walks it over the
//!    ranks (`fnd_walk::ranks`). A directory another rank reads is set
//!    aside by its parent's rank and counted there when its total comes
//!    back (`crate::relay`): one message per directory handed over, none
//!    per file. Each rank prints the lines of the directories that
//!    complete on it, in chunks of whole lines to rank 0.
//! 3. Then the links of multiply-linked files: each rank sends each link
//!    it met, with du's order key, to the inode's owner rank (a hash of
//!    device and inode), which keeps the inodes counted in this run and
//!    answers which links count, as one process decides.
//! 4. A second job lets go of what waited for that verdict: directories
//!    complete, their totals travel up to their parents' ranks (with
//!    their entries, for `--json` and `--tree`: the rank that completes
//!    the operand then sends its tree to rank 0, which renders the views).
//! 5. At the end each rank tells rank 0 whether it failed and what its
//!    operands added up to (`-c`); rank 0 exits as du would, the others
//!    with 0, so that `mpirun` exits with du's status.
//!
//! Known limits: du's order key of a handed-over directory is fixed when
//! it is handed over, so in a parent of more than 10 000 entries on a file
//! system where fts sorts such directories by inode, still being listed at
//! that moment, the link that counts may be another than du's; and a
//! directory inside itself (a bind mount) is left out only when the loop
//! stays on one rank.
//!
//! Messages about entries are printed by the rank that met them, on its
//! own stderr (the launcher forwards it), once. `FND_MPI_STATS=1` makes
//! each rank say on stderr how many directories it read, received and gave
//! per operand; `FND_MPI_TEST_PAUSE_US` pauses every rank after each
//! directory (for tests: work then really moves between ranks).

use std::process::ExitCode;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_channel::Sender;
use fnd_mpi::launch::Launched;
use fnd_mpi::world::fatal;
use fnd_mpi::{Handle, Job, Local, Prepared, Stream, Tuning, World};
use fnd_walk::ranks::{Hold, OnRanks, Ranks};
use fnd_walk::Metadata;

use crate::cli::{self, Parsed};
use crate::command;
use crate::hardlinks::{self, Ordered, Sighting};
use crate::messages::report;
use crate::output::Output;
use crate::relay::{Courier, Relay};
use crate::scan::{Leftovers, Scan};
use crate::settings::{Follow, Settings};
use crate::usage::Usage;
use crate::wire::{self, Claim, RankEnd, Totals};

/// The whole command as one rank of `launched`'s tasks.
pub fn run(launched: Launched) -> ExitCode {
    fnd_mpi::launch::before_threads();
    let speaks = launched.speaks();
    let mut settings = match cli::parse(std::env::args_os().collect()) {
        Ok(Parsed::Run(s)) => *s,
        Ok(Parsed::Show(text)) => {
            if speaks {
                let _ = text.print();
            }
            return ExitCode::SUCCESS;
        }
        Err(e) if speaks => command::usage_exit(e),
        Err(_) => return ExitCode::SUCCESS,
    };
    if let Some(option) = refused(&settings) {
        if speaks {
            report(&format!(
                "{option} is not supported in an MPI job (this one has {} tasks); run it as one task",
                launched.tasks
            ));
            return ExitCode::from(1);
        }
        return ExitCode::SUCCESS;
    }
    // The progress line is one process's view of one walk.
    settings.progress = false;
    // Only rank 0 has the launcher's stdin: it reads `--files0-from`
    // before MPI starts, and tells the others what it read.
    let read = (speaks && settings.files0_from.is_some()).then(|| command::try_read_operands(&settings));
    if speaks {
        // The launcher's own stdout, rather than its slow copy of a
        // pseudo-terminal: every rank's lines are written there.
        fnd_mpi::stdio::adopt_launcher_output();
    }
    if !settings.by.is_empty() {
        let world = World::init("fdu").unwrap_or_else(|e| e.exit());
        let rank = world.rank();
        let operands = operands(&world, &settings, read);
        let code = by_job(&world, settings, operands);
        drop(world);
        return if rank == 0 {
            ExitCode::from(code)
        } else {
            ExitCode::SUCCESS
        };
    }
    // Rank 0 starts measuring its first operand before MPI is up
    // (`Early`); the others take part of it when they are.
    let early = (launched.rank == Some(0)).then(|| Early::start(&settings, read.clone(), launched.tasks as usize));
    let world = World::init("fdu").unwrap_or_else(|e| e.exit());
    let rank = world.rank();
    let code = run_job(&world, settings, read, early);
    drop(world);
    if rank == 0 {
        ExitCode::from(code)
    } else {
        ExitCode::SUCCESS
    }
}

/// The first option asked for that does not run as an MPI job yet.
fn refused(settings: &Settings) -> Option<&'static str> {
    [
        (settings.follow == Follow::All, "-L (--dereference)"),
        (settings.from_json.is_some(), "--from-json"),
        (settings.browse, "--interactive"),
        (settings.export_file.is_some(), "-o (--output-file)"),
        (settings.input_file.is_some(), "-f (--input-file)"),
        (settings.diff.is_some(), "--diff"),
    ]
    .into_iter()
    .find_map(|(asked, option)| asked.then_some(option))
}

/// The operands, the same on every rank, and whether a name was bad;
/// `None` when rank 0 could not read `--files0-from` (it said why).
fn operands(world: &World, settings: &Settings, read: Option<wire::Operands>) -> wire::Operands {
    if settings.files0_from.is_none() {
        return command::try_read_operands(settings);
    }
    let mine = wire::encode_operands(read.flatten().as_ref());
    let bytes = world.broadcast(&mine);
    wire::decode_operands(&bytes).unwrap_or_else(|e| fatal(format!("rank 0's operands: {e}")))
}

/// What a rank sets up before its first job: the operands, what they
/// are, and the scan that measures them.
struct Setup {
    operands: Vec<Vec<u8>>,
    /// Whether `--files0-from` held a bad name.
    bad_name: bool,
    metas: Vec<command::OperandMeta>,
    ids: Vec<Option<(u64, u64)>>,
    scan: Arc<Scan>,
    relay: Arc<Relay>,
}

impl Setup {
    /// Rank `rank`'s setup in a job of `size` ranks, or rank 0's exit
    /// status (it says why).
    fn new(rank: usize, size: usize, settings: Settings, operands: wire::Operands) -> Result<Setup, u8> {
        let Some((mut operands, bad_name)) = operands else {
            return Err(1);
        };
        operands.iter_mut().for_each(command::trim_trailing_slashes);
        let metas = command::stat_operands(&operands, &settings);
        let ids = command::identities(&metas);
        let out = if rank == 0 {
            Output::stdout()
        } else {
            Output::forwarded()
        };
        let relay = Arc::new(Relay::new(rank, size));
        let progress = Arc::default();
        let scan = match Scan::new(settings, out, &ids, progress) {
            Ok(scan) => Arc::new(scan.with_relay(relay.clone())),
            Err(e) => {
                if rank == 0 {
                    report(&e);
                }
                return Err(1);
            }
        };
        Ok(Setup {
            operands,
            bad_name,
            metas,
            ids,
            scan,
            relay,
        })
    }

    /// Whether operand `i` is measured now: not excluded, and not one
    /// measured already.
    fn begins(&self, i: usize) -> bool {
        !self.scan.excluded(&self.operands[i]) && self.scan.begin_operand(i, self.ids[i])
    }
}

/// Rank 0's first operand, walked from before MPI is up: `MPI_Init_thread`
/// takes a quarter of a second with Open MPI's default transports, mostly
/// waiting. Not for the tests that pause after each directory (every rank
/// then starts together, so that work moves).
struct Early {
    setup: Result<Setup, u8>,
    /// The first operand's walk, when the first operand is a directory.
    walk: Option<StartedWalk>,
}

/// A walk of an operand started before its job: its rank's side of the
/// job, prepared, and the thread that walks.
struct StartedWalk {
    ranks: Ranks,
    side: JobSide,
    walking: JoinHandle<Leftovers>,
}

impl Early {
    fn start(settings: &Settings, read: Option<wire::Operands>, size: usize) -> Early {
        let operands = read.unwrap_or_else(|| command::try_read_operands(settings));
        let setup = Setup::new(0, size, settings.clone(), operands);
        let walk = match &setup {
            Ok(setup) if Ranks::test_pause().is_none() => match setup.metas.first() {
                Some(Ok(m)) if m.is_dir() && setup.begins(0) => Some(StartedWalk::start(
                    (0, size),
                    &setup.scan,
                    &setup.relay,
                    &setup.operands[0],
                    m,
                    None,
                )),
                _ => None,
            },
            _ => None,
        };
        Early { setup, walk }
    }
}

/// Steps 2 to 5 of the module doc; rank 0's exit status. `early`: rank
/// 0's setup and first walk, when it started them before MPI was up.
fn run_job(world: &World, settings: Settings, read: Option<wire::Operands>, early: Option<Early>) -> u8 {
    let rank = world.rank();
    // A collective call with `--files0-from`: rank 0 takes part even when
    // it set up before MPI was up.
    let operands = operands(world, &settings, read);
    let (setup, mut started) = match early {
        Some(early) => (early.setup, early.walk),
        None => (Setup::new(rank, world.size(), settings, operands), None),
    };
    let Ok(setup) = setup else {
        return 1;
    };
    let scan = &setup.scan;
    let run = &scan.run;
    let pause = Ranks::test_pause();
    let mut failed = setup.bad_name;
    for (i, op) in setup.operands.iter().enumerate() {
        if let Some(walk) = started.take() {
            walk_operand(world, scan, &setup.relay, op, walk);
            continue;
        }
        let m = match &setup.metas[i] {
            Ok(m) => m,
            Err(e) => {
                if rank == 0 {
                    run.cannot_access(op, e.as_ref());
                }
                failed = true;
                continue;
            }
        };
        if !setup.begins(i) {
            continue;
        }
        if m.is_dir() {
            let walk = StartedWalk::start((rank, world.size()), scan, &setup.relay, op, m, pause);
            walk_operand(world, scan, &setup.relay, op, walk);
        } else {
            file_operand(world, scan, op, m);
        }
    }
    let mine = Totals {
        failed: failed || run.failed(),
        total: if rank == 0 { Usage::NONE } else { run.grand_total() },
    };
    let all = world.all_gather(&mine.encode());
    if rank != 0 {
        return 0;
    }
    for (from, bytes) in all.iter().enumerate() {
        let totals = Totals::decode(bytes).unwrap_or_else(|e| fatal(format!("rank {from}'s totals: {e}")));
        failed |= totals.failed;
        run.add_operand(b"", totals.total, None, Default::default());
    }
    command::write_total(run);
    command::finish_views(run);
    run.out.finish();
    u8::from(failed || run.failed())
}

/// An operand that is not a directory: rank 0 prints it, if its inode's
/// owner says it was not counted yet.
fn file_operand(world: &World, scan: &Scan, path: &[u8], m: &Metadata) {
    let rank = world.rank();
    if hardlinks::counted_once(&scan.run.settings, m.nlink) {
        let owner = owner(m.dev, m.ino, world.size());
        let mine = if rank == owner {
            vec![u8::from(scan.links().first(m.dev, m.ino))]
        } else {
            Vec::new()
        };
        if world.all_gather(&mine)[owner] != [1] {
            return;
        }
    }
    if rank == 0 {
        scan.count_file(path, m);
    }
}

/// The rank that decides which link of inode `(dev, ino)` counts.
fn owner(dev: u64, ino: u64, ranks: usize) -> usize {
    let mixed = (dev.rotate_left(32) ^ ino).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    ((mixed >> 32) % ranks as u64) as usize
}

impl StartedWalk {
    /// Starts walking `path` (metadata `m`) on this rank's threads, before
    /// its job starts: from the root on rank 0, elsewhere when directories
    /// arrive.
    fn start(
        (rank, size): (usize, usize),
        scan: &Arc<Scan>,
        relay: &Arc<Relay>,
        path: &[u8],
        m: &Metadata,
        pause: Option<Duration>,
    ) -> StartedWalk {
        let ranks = Ranks::new(rank == 0);
        if let Some(pause) = pause {
            ranks.pause_after_each_directory(pause);
        }
        let side = JobSide::prepare(rank, size, scan, relay, &ranks);
        let handle = side.handle();
        let (path, m) = (path.to_vec(), *m);
        let walking = {
            let ranks = ranks.clone();
            let scan = scan.clone();
            std::thread::Builder::new()
                .name("fdu-walk".into())
                .spawn(move || {
                    scan.walk_dir(
                        &path,
                        &m,
                        &OnRanks {
                            ranks: &ranks,
                            handle: &handle,
                        },
                    )
                })
                .unwrap_or_else(|e| fatal(format!("cannot start a thread for the walk: {e}")))
        };
        StartedWalk { ranks, side, walking }
    }
}

/// Steps 2 to 4 for one operand that is a directory, its walk started.
fn walk_operand(world: &World, scan: &Arc<Scan>, relay: &Arc<Relay>, path: &[u8], walk: StartedWalk) {
    let rank = world.rank();
    let StartedWalk { ranks, side, walking } = walk;
    let left = side.run(world, || {
        walking.join().unwrap_or_else(|_| fatal("the walk's thread panicked"))
    });
    if std::env::var_os("FND_MPI_STATS").is_some() {
        use std::io::Write;
        let c = ranks.counts();
        let line = format!(
            "fdu-mpi: rank {rank}: {} directories read, {} received, {} given\n",
            c.dirs_read, c.dirs_received, c.dirs_given
        );
        // One write: the ranks share the launcher's stderr.
        let _ = std::io::stderr().lock().write_all(line.as_bytes());
    }
    let counted = resolve_links(world, scan, &left.sightings);
    // No pool: the job only carries totals up while this rank lets go.
    let ranks = Ranks::new(false);
    let busy = ranks.hold();
    JobSide::prepare(rank, world.size(), scan, relay, &ranks).run(world, move || {
        relay.send_deferred();
        let Leftovers { sightings, held } = left;
        for i in counted {
            sightings[i].count();
        }
        drop(sightings);
        drop(held);
        drop(busy);
    });
    let end = RankEnd {
        entered: scan.entered(),
        seen: scan.operands().seen(),
    };
    let ends: Vec<RankEnd> = world
        .all_gather(&end.encode())
        .iter()
        .enumerate()
        .map(|(from, bytes)| RankEnd::decode(bytes).unwrap_or_else(|e| fatal(format!("rank {from}'s end: {e}"))))
        .collect();
    for seen in ends.iter().flat_map(|e| &e.seen) {
        scan.operands().mark_seen(*seen as usize);
    }
    if rank == 0 && !ends.iter().any(|e| e.entered) {
        scan.unread_operand(path);
    }
    if scan.run.settings.keeps_tree() {
        gather_trees(world, scan);
    }
}

/// The operand's tree, from whichever rank completed it, to rank 0 (for
/// `--json` and `--tree`). A collective call.
fn gather_trees(world: &World, scan: &Scan) {
    let run = &scan.run;
    let mut sent = vec![Vec::new(); world.size()];
    if world.rank() != 0 {
        sent[0] = wire::encode_roots(&run.take_trees());
    }
    let received = world.all_to_all(&sent);
    if world.rank() != 0 {
        return;
    }
    for (from, bytes) in received.iter().enumerate().skip(1) {
        let roots = wire::decode_roots(bytes).unwrap_or_else(|e| fatal(format!("trees from rank {from}: {e}")));
        roots.into_iter().for_each(|root| run.add_root(root));
    }
}

/// A rank's side of one job over `ranks`, prepared before the job starts
/// (so that a walk may start before MPI is up): its application messages
/// are totals for the relay, absorbed here; totals for other ranks go out
/// through the job; and, elsewhere than on rank 0, printed lines go to
/// rank 0.
struct JobSide {
    absorber: Absorber,
    prepared: Prepared,
    watch: Arc<Watch>,
    scan: Arc<Scan>,
    relay: Arc<Relay>,
}

impl JobSide {
    fn prepare(rank: usize, size: usize, scan: &Arc<Scan>, relay: &Arc<Relay>, ranks: &Ranks) -> JobSide {
        let absorber = Absorber::start(ranks, relay.clone());
        let sink: Option<Arc<dyn fnd_mpi::Sink>> = (rank == 0).then(|| Arc::new(Rank0(scan.clone())) as _);
        let prepared = Job::prepare(rank, size, Tuning::default(), sink);
        // Set before the job starts: a small job may be over before this
        // rank gets past starting it, and `Watch` takes the courier back
        // then.
        relay.set_courier(Some(Arc::new(JobCourier(prepared.handle()))));
        if rank != 0 {
            let to_rank_0 = prepared.handle();
            scan.run
                .out
                .forward_to(Some(Box::new(move |lines| to_rank_0.output(Stream::Stdout, lines))));
        }
        let watch = Arc::new(Watch {
            local: ranks.local(),
            relay: relay.clone(),
        });
        JobSide {
            absorber,
            prepared,
            watch,
            scan: scan.clone(),
            relay: relay.clone(),
        }
    }

    fn handle(&self) -> Handle {
        self.prepared.handle()
    }

    /// Starts the job and runs `work` as this rank's part of it; returns
    /// once the job is over everywhere and this rank's lines are on their
    /// way.
    fn run<T>(self, world: &World, work: impl FnOnce() -> T) -> T {
        let JobSide {
            absorber,
            prepared,
            watch,
            scan,
            relay,
        } = self;
        let job = prepared.start(world, watch);
        let done = work();
        job.wait_over();
        scan.run.out.flush();
        scan.run.out.forward_to(None);
        relay.set_courier(None);
        job.finish(Vec::new());
        absorber.stop();
        done
    }
}

/// Every link this rank met goes to its inode's owner, which answers with
/// the ones that count; their indexes in `sightings`. A collective call.
fn resolve_links(world: &World, scan: &Scan, sightings: &[Sighting]) -> Vec<usize> {
    let size = world.size();
    let mut claims: Vec<Vec<Claim>> = vec![Vec::new(); size];
    for link in hardlinks::ordered(sightings) {
        claims[owner(link.dev, link.ino, size)].push(Claim {
            dev: link.dev,
            ino: link.ino,
            key: link.key,
            index: link.tag as u64,
        });
    }
    let sent: Vec<Vec<u8>> = claims.iter().map(|c| Claim::encode_all(c)).collect();
    let mut links = Vec::new();
    for (from, bytes) in world.all_to_all(&sent).iter().enumerate() {
        let claims = Claim::decode_all(bytes).unwrap_or_else(|e| fatal(format!("links from rank {from}: {e}")));
        links.extend(claims.into_iter().map(|c| Ordered {
            dev: c.dev,
            ino: c.ino,
            key: c.key,
            tag: (from, c.index),
        }));
    }
    let mut won: Vec<Vec<u64>> = vec![Vec::new(); size];
    for (from, index) in scan.links().winners(links) {
        won[from].push(index);
    }
    let answers: Vec<Vec<u8>> = won.iter().map(|w| wire::encode_indexes(w)).collect();
    let mut counted = Vec::new();
    for (from, bytes) in world.all_to_all(&answers).iter().enumerate() {
        let indexes = wire::decode_indexes(bytes).unwrap_or_else(|e| fatal(format!("verdicts from rank {from}: {e}")));
        for i in indexes {
            match usize::try_from(i).ok().filter(|&i| i < sightings.len()) {
                Some(i) => counted.push(i),
                None => fatal(format!("rank {from} counts a link this rank did not send")),
            }
        }
    }
    counted
}

/// Totals go to other ranks as the job's application messages.
struct JobCourier(Handle);

impl Courier for JobCourier {
    fn send(&self, to: usize, bytes: Vec<u8>) {
        self.0.send(to, bytes);
    }
}

/// The rank's side of a job, which takes the courier back the moment the
/// job is over: the walk lets go of its last directories after that, and
/// their totals must wait for the next job rather than go out after the
/// end of this one.
struct Watch {
    local: Arc<dyn Local>,
    relay: Arc<Relay>,
}

impl Local for Watch {
    fn started(&self) {
        self.local.started();
    }

    fn is_idle(&self) -> bool {
        self.local.is_idle()
    }

    fn take(&self, max: usize) -> Vec<Vec<u8>> {
        self.local.take(max)
    }

    fn put(&self, items: Vec<Vec<u8>>) {
        self.local.put(items);
    }

    fn message(&self, from: usize, bytes: &[u8]) {
        self.local.message(from, bytes);
    }

    fn stop(&self) {
        self.local.stop();
    }

    fn over(&self) {
        self.relay.set_courier(None);
        self.local.over();
    }
}

/// Rank 0's stdout, where other ranks' lines go too.
struct Rank0(Arc<Scan>);

impl fnd_mpi::Sink for Rank0 {
    fn write(&self, _from: usize, stream: Stream, bytes: &[u8]) -> bool {
        match stream {
            Stream::Stdout => self.0.run.out.write(bytes),
            Stream::Stderr => {
                use std::io::Write;
                let _ = std::io::stderr().lock().write_all(bytes);
                true
            }
        }
    }
}

/// Totals that arrive from other ranks, absorbed on a thread of their own:
/// the transport thread that receives them must never wait, and a parent
/// that completes prints its line (which may wait for rank 0). Each one
/// keeps the rank busy until it is absorbed, so the job cannot end before.
struct Absorber {
    tx: Sender<Option<(usize, Vec<u8>, Hold)>>,
    thread: JoinHandle<()>,
}

impl Absorber {
    /// Takes `ranks`' application messages, before its job starts.
    fn start(ranks: &Ranks, relay: Arc<Relay>) -> Absorber {
        let (tx, rx) = crossbeam_channel::unbounded::<Option<(usize, Vec<u8>, Hold)>>();
        let (to_thread, holds) = (tx.clone(), ranks.clone());
        ranks.on_message(move |from, bytes| {
            let _ = to_thread.send(Some((from, bytes.to_vec(), holds.hold())));
        });
        let thread = std::thread::Builder::new()
            .name("fdu-totals".into())
            .spawn(move || {
                while let Ok(Some((from, bytes, hold))) = rx.recv() {
                    if let Err(e) = relay.absorb(&bytes) {
                        fatal(format!("a message from rank {from} that does not fit: {e}"));
                    }
                    drop(hold);
                }
            })
            .unwrap_or_else(|e| fatal(format!("cannot start a thread for totals from other ranks: {e}")));
        Absorber { tx, thread }
    }

    fn stop(self) {
        let _ = self.tx.send(None);
        let _ = self.thread.join();
    }
}

/// `--by` as an MPI job: every rank walks part of each operand and
/// tallies its own groups (the operands themselves count on rank 0); the
/// tables and the links of multiply-linked files go to rank 0 with the
/// job's end, which merges them, lets each file's smallest path count,
/// and prints what one process prints. Rank 0's exit status.
fn by_job(world: &World, settings: Settings, operands: wire::Operands) -> u8 {
    use crate::tally::{resolve_links, Found, Grouping};
    let rank = world.rank();
    let Some((mut paths, bad_name)) = operands else {
        return 1;
    };
    paths.iter_mut().for_each(command::trim_trailing_slashes);
    let metas = command::stat_operands(&paths, &settings);
    let ids = command::identities(&metas);
    let grouping = match Grouping::new(settings, &ids) {
        Ok(g) => Arc::new(g),
        Err(e) => {
            if rank == 0 {
                report(&e);
            }
            return 1;
        }
    };
    let mut found = Found::default();
    let mut failed = bad_name;
    for (i, (path, meta)) in paths.iter().zip(&metas).enumerate() {
        let m = match meta {
            Ok(m) => *m,
            Err(e) => {
                if rank == 0 {
                    grouping.cannot_access(path, e.as_ref());
                }
                failed = true;
                continue;
            }
        };
        if grouping.excluded(path) || !grouping.begin_operand(i, ids[i]) {
            continue;
        }
        if !m.is_dir() {
            if rank == 0 {
                found.merge(grouping.operand(path, &m, &fnd_walk::Alone, true));
            }
            continue;
        }
        let ranks = Ranks::new(rank == 0);
        if let Some(pause) = Ranks::test_pause() {
            ranks.pause_after_each_directory(pause);
        }
        let prepared = Job::prepare(rank, world.size(), Tuning::default(), None);
        let handle = prepared.handle();
        let walking = {
            let (ranks, path, grouping) = (ranks.clone(), path.clone(), grouping.clone());
            std::thread::Builder::new()
                .name("fdu-walk".into())
                .spawn(move || {
                    let walker = OnRanks {
                        ranks: &ranks,
                        handle: &handle,
                    };
                    grouping.operand(&path, &m, &walker, rank == 0)
                })
                .expect("a thread for the walk")
        };
        let job = prepared.start(world, ranks.local());
        let part = walking.join().unwrap_or_else(|_| fatal("the walk's thread panicked"));
        job.wait_over();
        job.finish(Vec::new());
        found.merge(part);
        if std::env::var_os("FND_MPI_STATS").is_some() {
            use std::io::Write;
            let c = ranks.counts();
            let line = format!(
                "fdu-mpi: rank {rank}: {} directories read, {} received, {} given\n",
                c.dirs_read, c.dirs_received, c.dirs_given
            );
            let _ = std::io::stderr().lock().write_all(line.as_bytes());
        }
        // Every rank skips the same later operands: those any rank met here.
        // (A leading byte: MPI refuses a gather of nothing at all.)
        let mut seen = vec![1u8];
        seen.extend(grouping.seen().iter().flat_map(|i| i.to_le_bytes()));
        for bytes in world.all_gather(&seen) {
            for i in bytes.get(1..).unwrap_or_default().chunks_exact(4) {
                grouping.mark_seen(u32::from_le_bytes([i[0], i[1], i[2], i[3]]) as usize);
            }
        }
    }
    let mine = found.encode(failed || grouping.failed());
    let all = world.all_gather(&mine);
    if rank != 0 {
        return 0;
    }
    let keys = &grouping.settings.by;
    let mut everything = Found::default();
    for (from, bytes) in all.iter().enumerate() {
        let (part, failed_there) =
            Found::decode(keys, bytes).unwrap_or_else(|e| fatal(format!("the groups of rank {from}: {e}")));
        failed |= failed_there;
        everything.merge(part);
    }
    let Found { mut table, links } = everything;
    resolve_links(&hardlinks::Links::default(), links, &mut table);
    let out = Output::stdout();
    out.write(&crate::report::render(&table, &grouping.settings));
    out.finish();
    u8::from(failed || out.failed())
}
