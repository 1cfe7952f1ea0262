//! The search: one walk whose filter decides, on the reading thread, what
//! is a result (ignore rules, then the [`Selection`]) and where to descend;
//! the visitor hands results, in chunks, to an [`Emit`] per thread, within
//! `--max-results`, held back for fd's first 100 ms or reordered by
//! `--sort size|mtime`. Where the results go is the caller's business.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use fnd_walk::ignore::{IgnoreFilter, Level};
use fnd_walk::{
    Alone, Chunk, ChunkBuf, Decision, DirHook, DirInfo, EntryRef, Error, ErrorKind, Flow, ImportError, MovedDir, Order,
    RawEntry, Sort, TreeOrder, TreeVisitor, Visitor, WalkBuilder, Walker,
};

use crate::early::{EarlyResults, Offer};
use crate::error::{print_error, Outcome};
use crate::filter::is_hidden;
use crate::found::Emit;
use crate::select::Selection;

/// Everything a search needs, resolved.
pub struct Search {
    pub roots: Vec<PathBuf>,
    pub selection: Selection,
    /// Hidden entries and ignore files; `None` when neither applies (or
    /// hidden entries alone are skipped, which the walk does for free).
    pub ignore: Option<IgnoreFilter>,
    /// Skip hidden entries in the walk itself (no ignore filter needed).
    pub skip_hidden: bool,
    pub follow: bool,
    pub one_file_system: bool,
    pub min_depth: usize,
    pub max_depth: Option<usize>,
    pub prune: bool,
    pub threads: usize,
    /// Most reads in flight on a slow file system (0: the engine's default).
    pub io_depth: usize,
    pub order: Order,
    pub sort: Option<Sort>,
    /// How long results are held back at first, to be printed sorted if the
    /// search ends by then, as fd does (not with a command, an explicit
    /// order or sort).
    pub hold_early: Option<Duration>,
    /// `--sort size|mtime`: the key each directory's entries are written in.
    pub sort_by_metadata: Option<MetadataKey>,
    /// `--sort` on every core: the walk's ordered mode, in this order.
    pub tree_order: Option<TreeOrder>,
    pub max_results: Option<usize>,
    pub quiet: bool,
    pub show_errors: bool,
    /// Hand each chunk's results on at once (`Emit::flush`), not when a
    /// buffer fills: with `--max-results` under MPI, rank 0 counts them
    /// as they come and stops every rank when it has enough.
    pub flush_each_chunk: bool,
}

/// A key of `--sort` that needs metadata.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetadataKey {
    Size,
    Mtime,
}

/// The walk's filter: ignore rules first, then the search criteria.
pub struct Finder {
    /// Hidden entries are left out here, not by the walk: the walk hides
    /// every name starting with `.`, fd not those ending in `.` too.
    pub skip_hidden: bool,
    pub ignore: Option<IgnoreFilter>,
    pub selection: Selection,
    pub min_depth: usize,
    pub prune: bool,
}

impl DirHook for Finder {
    /// The ignore rules' state: the search criteria need none.
    type State = Level;

    fn enter(&self, dir: &DirInfo<'_>, parent: Option<&Arc<Level>>) -> Option<Arc<Level>> {
        self.ignore.as_ref().and_then(|i| i.enter(dir, parent))
    }

    fn probe_names(&self) -> &[Vec<u8>] {
        self.ignore.as_ref().map_or(&[], |i| i.probe_names())
    }

    /// The state is the ignore rules': they travel to another MPI rank.
    fn export_state(&self, state: &Arc<Level>, handover: &MovedDir<'_>) -> Option<Vec<u8>> {
        self.ignore.as_ref()?.export_state(state, handover)
    }

    fn import_state(&self, bytes: &[u8], handover: &MovedDir<'_>) -> Result<Arc<Level>, ImportError> {
        match &self.ignore {
            Some(ignore) => ignore.import_state(bytes, handover),
            None => Err("filter state for a search without ignore rules".into()),
        }
    }

    fn decide(&self, state: Option<&Level>, entry: &RawEntry<'_>) -> Decision {
        self.decide_named(state, entry, || self.selection.name_matches(entry))
    }
}

impl Finder {
    /// [`DirHook::decide`], with whether the name matches known some
    /// other way (asked only when it matters).
    pub fn decide_named(
        &self,
        state: Option<&Level>,
        entry: &RawEntry<'_>,
        name_matches: impl FnOnce() -> bool,
    ) -> Decision {
        if self.skip_hidden && entry.depth > 0 && is_hidden(entry.name) {
            return Decision {
                emit: false,
                descend: false,
            };
        }
        let base = match &self.ignore {
            Some(ignore) => ignore.decide(state, entry),
            None => Decision::KEEP,
        };
        if !base.emit || entry.depth < self.min_depth {
            // Shallower than --min-depth: never a result, never pruned.
            return base;
        }
        if self.selection.is_result_named(entry, name_matches) {
            Decision {
                emit: true,
                descend: base.descend && !self.prune,
            }
        } else {
            Decision {
                emit: false,
                descend: base.descend,
            }
        }
    }
}

/// What all printing threads share.
struct Shared<'a> {
    search: &'a Search,
    results: AtomicUsize,
    found: AtomicBool,
    /// A directory could not be read for a limit of the machine.
    limited: AtomicBool,
    early: EarlyResults,
}

/// Hands the results of one worker thread on.
struct Printer<'a, W> {
    shared: &'a Shared<'a>,
    out: W,
}

impl<W> Printer<'_, W> {
    /// What both the unordered and the ordered visit do first with a
    /// chunk of `n` results: nothing for none, stop at the first with
    /// `--quiet`, else how many are printed and whether that is the last
    /// (`admit`); Err: the flow to return at once.
    fn begin_chunk(&self, n: usize) -> Result<(usize, bool), Flow> {
        if n == 0 {
            return Err(Flow::Continue);
        }
        if self.shared.search.quiet {
            self.shared.found.store(true, Ordering::Relaxed);
            return Err(Flow::Stop);
        }
        match self.admit(n) {
            (0, _) => Err(Flow::Stop),
            admitted => Ok(admitted),
        }
    }

    /// Count `n` results: how many of them are within `--max-results`, and
    /// whether the limit is reached.
    fn admit(&self, n: usize) -> (usize, bool) {
        match self.shared.search.max_results {
            None => (n, false),
            Some(max) => {
                let before = self.shared.results.fetch_add(n, Ordering::Relaxed);
                (max.saturating_sub(before).min(n), before + n >= max)
            }
        }
    }
}

/// Hand on every entry of a chunk (its `prefix`, then its `entries`); false when output is gone.
fn emit_chunk<'e>(out: &mut impl Emit, prefix: &[u8], mut entries: impl Iterator<Item = EntryRef<'e>>) -> bool {
    entries.all(|entry| out.emit(&entry, prefix))
}

impl<W: Emit + Send> Visitor for Printer<'_, W> {
    fn visit(&mut self, chunk: &mut Chunk) -> Flow {
        let search = self.shared.search;
        let (allowed, last) = match self.begin_chunk(chunk.len()) {
            Ok(admitted) => admitted,
            Err(flow) => return flow,
        };
        let after = if last { Flow::Stop } else { Flow::Continue };
        let out = &mut self.out;
        if let Some(key) = search.sort_by_metadata {
            let prefix = chunk.prefix();
            let order = sorted_by(chunk, key);
            let printed = order[..allowed].iter().all(|&i| out.emit(&chunk.get(i), prefix));
            return if printed { after } else { Flow::Stop };
        }
        if allowed < chunk.len() {
            let mut kept = 0;
            chunk.retain(|_| {
                kept += 1;
                kept <= allowed
            });
        }
        match self
            .shared
            .early
            .offer(chunk, |held| emit_chunk(out, held.prefix(), held.iter()))
        {
            Offer::Held => after,
            Offer::Print
                if emit_chunk(out, chunk.prefix(), chunk.iter()) && (!search.flush_each_chunk || out.flush()) =>
            {
                after
            }
            Offer::Print | Offer::Stop => Flow::Stop,
        }
    }

    fn error(&mut self, error: Error) -> Flow {
        // Out of descriptors or memory: entries were not listed, and a
        // silent exit 0 would pass a partial answer for a whole one.
        let limit = error.is_resource_limit();
        if limit {
            self.shared.limited.store(true, Ordering::Relaxed);
        }
        if self.shared.search.show_errors || limit {
            // Flush first so the error shows up after the results before it.
            self.out.flush();
            match error.kind() {
                ErrorKind::Loop { ancestor } => print_error(format_args!(
                    "File system loop found: {} points to an ancestor {}",
                    error.path().display(),
                    ancestor.display()
                )),
                _ => print_error(&error),
            }
        }
        Flow::Continue
    }
}

/// `--sort` on every core: the ordered walk's one consumer, handed each
/// directory's entries whole, in tree order.
impl<W: Emit + Send> TreeVisitor for Printer<'_, W> {
    fn entries(&mut self, chunk: &ChunkBuf) -> Flow {
        let search = self.shared.search;
        let (allowed, last) = match self.begin_chunk(chunk.len()) {
            Ok(admitted) => admitted,
            Err(flow) => return flow,
        };
        let out = &mut self.out;
        let prefix = chunk.prefix();
        let printed = match search.sort_by_metadata {
            Some(key) => sorted_entries(chunk.iter(), key)[..allowed]
                .iter()
                .all(|&i| out.emit(&chunk.get(i), prefix)),
            None => chunk.iter().take(allowed).all(|e| out.emit(&e, prefix)),
        };
        if printed && !last {
            Flow::Continue
        } else {
            Flow::Stop
        }
    }

    fn error(&mut self, error: Error) -> Flow {
        Visitor::error(self, error)
    }
}

/// The chunk's entries ordered by size or modification time (ties keep the
/// name order the walk sorted them in).
fn sorted_by(chunk: &Chunk, key: MetadataKey) -> Vec<usize> {
    sorted_entries(chunk.iter(), key)
}

/// Indexes of `entries` ordered by size or modification time, stably.
fn sorted_entries<'e>(entries: impl Iterator<Item = EntryRef<'e>>, key: MetadataKey) -> Vec<usize> {
    let mut keyed: Vec<((i64, u32), usize)> = entries
        .enumerate()
        .map(|(i, e)| {
            let m = e.metadata().ok();
            let k = match key {
                MetadataKey::Size => m.map_or((0, 0), |m| (m.size as i64, 0)),
                MetadataKey::Mtime => m.map_or((0, 0), |m| (m.mtime, m.mtime_nsec)),
            };
            (k, i)
        })
        .collect();
    keyed.sort_by_key(|&(k, _)| k);
    keyed.into_iter().map(|(_, i)| i).collect()
}

impl Search {
    /// The roots the walk reads: a root holding an `--ignore-contain`
    /// marker yields nothing, as in fd.
    pub fn walked_roots(&self) -> Vec<PathBuf> {
        let ignore = self.ignore.as_ref();
        self.roots
            .iter()
            .filter(|r| !ignore.is_some_and(|i| i.skips_root(r)))
            .cloned()
            .collect()
    }
}

/// Run the search, handing its results to writers made by `writer` (one
/// per walking thread, and one more for results held back at first).
/// Whether they could be written is the writers' to tell.
pub fn run<W: Emit + Send>(search: Search, writer: impl Fn() -> W + Sync) -> Outcome {
    run_on(search, writer, &Alone)
}

/// [`run`], the walk run by `walker`.
pub fn run_on<W: Emit + Send>(mut search: Search, writer: impl Fn() -> W + Sync, walker: &impl Walker) -> Outcome {
    let roots = search.walked_roots();
    let ignore = search.ignore.take();
    let Some(first) = roots.first() else {
        return if search.quiet {
            Outcome::HasResults(false)
        } else {
            Outcome::Success
        };
    };
    let mut builder = WalkBuilder::new(first);
    for root in &roots[1..] {
        builder = builder.add_root(root);
    }
    let needs_finder = ignore.is_some() || !search.selection.selects_all() || search.prune || search.skip_hidden;
    let finder = needs_finder.then(|| Finder {
        skip_hidden: search.skip_hidden,
        ignore,
        selection: search.selection.clone(),
        min_depth: search.min_depth,
        prune: search.prune,
    });
    builder = builder
        .order(search.order)
        .threads(search.threads)
        .io_depth(search.io_depth)
        // A search that stops at its first results finds shallow ones sooner.
        .shallow_first(search.quiet || search.max_results.is_some())
        .min_depth(search.min_depth)
        .max_depth(search.max_depth)
        .follow_links(search.follow)
        .same_file_system(search.one_file_system)
        .sort(search.sort);
    if let Some(finder) = finder {
        builder = builder.hook(finder);
    }

    let shared = Shared {
        search: &search,
        results: AtomicUsize::new(0),
        found: AtomicBool::new(false),
        limited: AtomicBool::new(false),
        early: EarlyResults::new(search.hold_early),
    };
    if let Some(order) = search.tree_order {
        // The ordered walk sorts each directory itself.
        let builder = builder.sort(None).metadata(search.sort_by_metadata.is_some());
        let mut printer = Printer {
            shared: &shared,
            out: writer(),
        };
        builder.visit_tree(order, &mut printer);
        printer.out.flush();
        return if search.quiet {
            Outcome::HasResults(shared.found.load(Ordering::Relaxed))
        } else {
            Outcome::Success
        };
    }
    walker.visit(
        builder,
        || Printer {
            shared: &shared,
            out: writer(),
        },
        drop,
    );
    let found = shared.found.load(Ordering::Relaxed);
    if let Some((chunks, order)) = shared.early.finish() {
        let mut out = writer();
        for (c, e) in order {
            if !out.emit(&chunks[c].get(e), chunks[c].prefix()) {
                break;
            }
        }
        out.flush();
    }
    if shared.limited.load(Ordering::Relaxed) {
        Outcome::Error
    } else if search.quiet {
        Outcome::HasResults(found)
    } else {
        Outcome::Success
    }
}
