//! The search: one walk whose filter decides, on the reading thread, what
//! is a result (ignore rules, then name, then type/size/time/owner) and
//! where to descend; the visitor only writes results.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use fnd_walk::ignore::IgnoreFilter;
use fnd_walk::{
    Chunk, Decision, DirInfo, EntryFilter, EntryRef, Error, ErrorKind, FilterState, Flow, RawEntry, Visitor,
    WalkBuilder,
};

use crate::cli::SortArg;
use crate::config::Config;
use crate::early::{EarlyResults, Offer};
use crate::error::{print_error, Outcome};
use crate::filter::{Candidate, EntryFilters};
use crate::pattern::NameMatcher;
use crate::results::{ResultWriter, Sink};

/// The walk's filter: ignore rules first, then the search criteria.
struct Finder {
    ignore: Option<IgnoreFilter>,
    matcher: NameMatcher,
    /// Tells this finder's matcher apart from another's in `MATCHING`.
    id: usize,
    filters: EntryFilters,
    follow: bool,
    min_depth: usize,
    prune: bool,
}

/// What a reading thread keeps between entries: the path built for `-p`,
/// and its own clone of the finder's matcher. A regex shares one cache pool
/// between all the threads that use it, and a thread other than the
/// first takes a lock on every match: a regex search of a 60k-entry tree
/// spent 14.3 ms of user time with two threads against 10.2 ms with one.
/// A clone has a pool of its own.
#[derive(Default)]
struct Matching {
    scratch: Vec<u8>,
    matcher: Option<(usize, NameMatcher)>,
}

thread_local! {
    static MATCHING: std::cell::RefCell<Matching> = std::cell::RefCell::default();
}

static FINDERS: AtomicUsize = AtomicUsize::new(0);

impl Finder {
    fn is_result(&self, entry: &RawEntry<'_>) -> bool {
        let name_ok = MATCHING.with_borrow_mut(|Matching { scratch, matcher }| {
            let matcher = match matcher {
                Some((id, m)) if *id == self.id => m,
                _ => &matcher.insert((self.id, self.matcher.clone())).1,
            };
            matcher.matches(entry.parent_prefix, entry.name, scratch)
        });
        name_ok && (self.filters.is_empty() || self.filters.matches(&Candidate::new(entry, self.follow)))
    }
}

impl EntryFilter for Finder {
    fn enter(&self, dir: &DirInfo<'_>, parent: Option<&FilterState>) -> Option<FilterState> {
        self.ignore.as_ref().and_then(|i| i.enter(dir, parent))
    }

    fn probe_names(&self) -> &[Vec<u8>] {
        self.ignore.as_ref().map_or(&[], |i| i.probe_names())
    }

    fn decide(&self, state: Option<&FilterState>, entry: &RawEntry<'_>) -> Decision {
        let base = match &self.ignore {
            Some(ignore) => ignore.decide(state, entry),
            None => Decision::KEEP,
        };
        if !base.emit || entry.depth < self.min_depth {
            // Shallower than --min-depth: never a result, never pruned.
            return base;
        }
        if self.is_result(entry) {
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
    cfg: &'a Config,
    results: AtomicUsize,
    found: AtomicBool,
    early: EarlyResults,
}

/// Writes the results of one worker thread.
struct Printer<'a> {
    shared: &'a Shared<'a>,
    out: ResultWriter<'a>,
}

impl Printer<'_> {
    /// Count `n` results: how many of them are within `--max-results`, and
    /// whether the limit is reached.
    fn admit(&self, n: usize) -> (usize, bool) {
        match self.shared.cfg.max_results {
            None => (n, false),
            Some(max) => {
                let before = self.shared.results.fetch_add(n, Ordering::Relaxed);
                (max.saturating_sub(before).min(n), before + n >= max)
            }
        }
    }
}

/// Write every entry of a chunk (its `prefix`, then its `entries`); false when output is gone.
fn print_chunk<'e>(out: &mut ResultWriter<'_>, prefix: &[u8], mut entries: impl Iterator<Item = EntryRef<'e>>) -> bool {
    entries.all(|entry| out.entry(&entry, prefix))
}

impl Visitor for Printer<'_> {
    fn visit(&mut self, chunk: &mut Chunk) -> Flow {
        let shared = self.shared;
        let cfg = shared.cfg;
        if chunk.is_empty() {
            return Flow::Continue;
        }
        if cfg.quiet {
            shared.found.store(true, Ordering::Relaxed);
            return Flow::Stop;
        }
        let (allowed, last) = self.admit(chunk.len());
        if allowed == 0 {
            return Flow::Stop;
        }
        let after = if last { Flow::Stop } else { Flow::Continue };
        let out = &mut self.out;
        if let Some(key) = cfg.sort_by_metadata {
            let prefix = chunk.prefix();
            let order = sorted_by(chunk, key);
            let printed = order[..allowed].iter().all(|&i| out.entry(&chunk.get(i), prefix));
            return if printed { after } else { Flow::Stop };
        }
        if allowed < chunk.len() {
            let mut kept = 0;
            chunk.retain(|_| {
                kept += 1;
                kept <= allowed
            });
        }
        match shared
            .early
            .offer(chunk, |held| print_chunk(out, held.prefix(), held.iter()))
        {
            Offer::Held => after,
            Offer::Print if print_chunk(out, chunk.prefix(), chunk.iter()) => after,
            Offer::Print | Offer::Stop => Flow::Stop,
        }
    }

    fn error(&mut self, error: Error) -> Flow {
        if self.shared.cfg.show_errors {
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

/// The chunk's entries ordered by size or modification time (ties keep the
/// name order the walk sorted them in).
fn sorted_by(chunk: &Chunk, key: SortArg) -> Vec<usize> {
    let mut keyed: Vec<((i64, u32), usize)> = chunk
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let m = e.metadata().ok();
            let k = match key {
                SortArg::Size => m.map_or((0, 0), |m| (m.size as i64, 0)),
                _ => m.map_or((0, 0), |m| (m.mtime, m.mtime_nsec)),
            };
            (k, i)
        })
        .collect();
    keyed.sort_by_key(|&(k, _)| k);
    keyed.into_iter().map(|(_, i)| i).collect()
}

/// Run the search and write its results.
pub fn run(mut cfg: Config, sink: &Sink) -> Outcome {
    let ignore = cfg.ignore.take();
    // A root holding an --ignore-contain marker yields nothing, as in fd.
    let roots: Vec<_> = cfg
        .roots
        .iter()
        .filter(|r| !ignore.as_ref().is_some_and(|i| i.skips_root(r)))
        .cloned()
        .collect();
    let Some(first) = roots.first() else {
        return if cfg.quiet {
            Outcome::HasResults(false)
        } else {
            Outcome::Success
        };
    };
    let mut builder = WalkBuilder::new(first);
    for root in &roots[1..] {
        builder = builder.add_root(root);
    }
    let needs_finder = ignore.is_some() || !cfg.matcher.matches_all() || !cfg.filters.is_empty() || cfg.prune;
    let finder = needs_finder.then(|| {
        Arc::new(Finder {
            ignore,
            matcher: cfg.matcher.clone(),
            id: FINDERS.fetch_add(1, Ordering::Relaxed),
            filters: cfg.filters.clone(),
            follow: cfg.follow,
            min_depth: cfg.min_depth,
            prune: cfg.prune,
        }) as Arc<dyn EntryFilter>
    });
    builder = builder
        .order(cfg.order)
        .threads(cfg.threads)
        .io_depth(cfg.io_depth)
        // A search that stops at its first results finds shallow ones sooner.
        .shallow_first(cfg.quiet || cfg.max_results.is_some())
        .min_depth(cfg.min_depth)
        .max_depth(cfg.max_depth)
        .follow_links(cfg.follow)
        .same_file_system(cfg.one_file_system)
        .skip_hidden(cfg.skip_hidden)
        .sort(cfg.sort)
        .filter(finder);

    let stdout = sink.stdout();
    let shared = Shared {
        cfg: &cfg,
        results: AtomicUsize::new(0),
        found: AtomicBool::new(false),
        early: EarlyResults::new(cfg.hold_early),
    };
    builder.visit(
        || Printer {
            shared: &shared,
            out: sink.writer(),
        },
        drop,
    );
    let found = shared.found.load(Ordering::Relaxed);
    if let Some((chunks, order)) = shared.early.finish() {
        let mut out = sink.writer();
        for (c, e) in order {
            if !out.entry(&chunks[c].get(e), chunks[c].prefix()) {
                break;
            }
        }
        out.flush();
    }
    if let Some(errno) = stdout.failure() {
        print_error(format_args!(
            "Could not write to output: {}",
            std::io::Error::from(errno)
        ));
        return Outcome::Error;
    }
    if stdout.is_broken() {
        // The reader went away (`fnd | head -1`): fd exits 1 without a word.
        return Outcome::Error;
    }
    if cfg.quiet {
        Outcome::HasResults(found)
    } else {
        Outcome::Success
    }
}
