//! `fdu --diff OLD [NEW]`: what changed between two scans. OLD is an
//! export in ncdu's format or a `--json` tree; NEW one too, or a directory
//! scanned now (without NEW: OLD's own root, scanned now).
//!
//! ```text
//! grew      +CHANGE  OLD  NEW  PATH     directories, largest change first
//! shrank    -CHANGE  OLD  NEW  PATH
//! appeared  +SIZE    -    NEW  PATH     entries, largest first
//! gone      -SIZE    OLD  -    PATH
//! ```
//!
//! (tab-separated; each part at most `--top N` lines; an entry that
//! appeared or went inside one that did too is not listed again.)
//!
//! Neither tree is held. An entry is known by a 64-bit hash of its path
//! below the root (chained from its parent's, so roots named differently
//! compare, and a collision is a one in 10^13 chance per pair on a million
//! entries); OLD is kept as the set of its files' hashes and the totals
//! of its directories (8 and 16 bytes an entry), NEW is compared with it
//! as it streams (or as the walk reads it), and OLD is read a second time
//! for the paths of what is shown of it. A multiply-linked file counts at
//! the link whose path hashes lowest, on both sides, so the same tree
//! gives the same totals whichever order its scans met the links in
//! (a `--json` tree has its totals from du's rule, and lists only the
//! link that counted: against one, a file's other links are not news).

use std::collections::{HashMap, HashSet};
use std::os::unix::ffi::OsStrExt;
use std::process::ExitCode;
use std::sync::Arc;

use fnd_walk::{Chunk, Error, Flow, Metadata, Visitor, Walker};

use crate::exports::{self, Entry, Input, Sink};
use crate::json_stream::Writer;
use crate::messages::{error_text, quote, report};
use crate::settings::{Measure, Settings};
use crate::tally::Grouping;
use crate::usage::Usage;

/// The root's hash.
const ROOT: u64 = 0x243F_6A88_85A3_08D3;

/// The hash of `name` inside the directory of hash `parent`.
pub fn child_hash(parent: u64, name: &[u8]) -> u64 {
    let mut h = mix(parent ^ (name.len() as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    for chunk in name.chunks(8) {
        let mut word = [0u8; 8];
        word[..chunk.len()].copy_from_slice(chunk);
        h = mix(h ^ u64::from_le_bytes(word));
    }
    h
}

/// splitmix64's finalizer: every bit of the input moves half the output's.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// One link of a multiply-linked file, and the directories it adds to.
struct Link {
    dev: u64,
    ino: u64,
    hash: u64,
    amount: u64,
    /// Its directory's hash and theirs above it, up to the root.
    dirs: Vec<u64>,
}

/// Of each file's links the one whose path hashes lowest adds to its directories.
fn resolve_links(mut links: Vec<Link>, dirs: &mut HashMap<u64, u64>) {
    links.sort_unstable_by_key(|l| (l.dev, l.ino, l.hash));
    let mut last = None;
    for link in links {
        if last == Some((link.dev, link.ino)) {
            continue;
        }
        last = Some((link.dev, link.ino));
        for d in &link.dirs {
            let t = dirs.entry(*d).or_default();
            *t = t.saturating_add(link.amount);
        }
    }
}

/// What a scan leaves to compare: its directories' totals, and OLD's
/// files' hashes (NEW's are only compared).
#[derive(Default)]
struct Side {
    files: HashSet<u64>,
    dirs: HashMap<u64, u64>,
    /// The root as the scan names it.
    root: Vec<u8>,
    /// A `--json` tree lists a multiply-linked file at the link that
    /// counts only: its other links are neither there nor gone.
    one_link_only: bool,
}

/// Something NEW has and OLD had not, at its topmost.
struct Appeared {
    hash: u64,
    is_dir: bool,
    /// A file's amount (a directory's is its total, known at the end).
    amount: u64,
    path: Vec<u8>,
}

/// An export read into a [`Side`]; reading NEW, compared with OLD as it goes.
struct Reading<'a> {
    side: Side,
    /// Open directories: hash, sum so far, the path's length before it, and
    /// the total the file gives (a `--json` tree's).
    open: Vec<(u64, u64, usize)>,
    /// The path below the root of the directory open last.
    path: Vec<u8>,
    totals_given: bool,
    links: Vec<Link>,
    /// OLD, when this reads NEW: its files are taken out as NEW has them.
    old: Option<&'a mut Side>,
    appeared: Vec<Appeared>,
}

impl<'a> Reading<'a> {
    fn new(old: Option<&'a mut Side>) -> Reading<'a> {
        Reading {
            side: Side::default(),
            open: Vec::new(),
            path: Vec::new(),
            totals_given: false,
            links: Vec::new(),
            old,
            appeared: Vec::new(),
        }
    }
}

/// The path below the root of `name` in the directory at `dir`.
fn join(dir: &[u8], name: &[u8]) -> Vec<u8> {
    let mut p = Vec::with_capacity(dir.len() + 1 + name.len());
    p.extend_from_slice(dir);
    if !dir.is_empty() {
        p.push(b'/');
    }
    p.extend_from_slice(name);
    p
}

impl Sink for Reading<'_> {
    fn entry(&mut self, e: &Entry<'_>) -> Result<(), String> {
        if e.depth == 0 {
            self.side.root = e.name.to_vec();
            self.open.push((ROOT, e.amount, 0));
            return Ok(());
        }
        let (parent, _, _) = *self.open.last().ok_or("an entry outside its root")?;
        let hash = child_hash(parent, &e.name);
        let topmost = |old: &Side| old.dirs.contains_key(&parent);
        if e.is_dir {
            if let Some(old) = self.old.as_deref() {
                if !old.dirs.contains_key(&hash) && topmost(old) {
                    self.appeared.push(Appeared {
                        hash,
                        is_dir: true,
                        amount: 0,
                        path: join(&self.path, &e.name),
                    });
                }
            }
            let len = self.path.len();
            if !self.path.is_empty() {
                self.path.push(b'/');
            }
            self.path.extend_from_slice(&e.name);
            self.open.push((hash, e.amount, len));
            return Ok(());
        }
        if let Some(old) = self.old.as_deref_mut() {
            let unlisted_link = old.one_link_only && e.hard_link;
            if !old.files.remove(&hash) && topmost(old) && !unlisted_link {
                self.appeared.push(Appeared {
                    hash,
                    is_dir: false,
                    amount: e.amount,
                    path: join(&self.path, &e.name),
                });
            }
        } else {
            // OLD: what NEW does not take out of this set is gone.
            self.side.files.insert(hash);
        }
        let amount = if e.hard_link {
            if e.nlink.is_some() {
                // Which link counts is decided once the whole scan is read.
                self.links.push(Link {
                    dev: e.dev,
                    ino: e.ino.unwrap_or(0),
                    hash,
                    amount: e.amount,
                    dirs: self.open.iter().map(|o| o.0).collect(),
                });
            }
            // gdu marks only the links after the one it counted.
            0
        } else {
            e.amount
        };
        if let Some(top) = self.open.last_mut().filter(|_| !self.totals_given) {
            top.1 = top.1.saturating_add(amount);
        }
        Ok(())
    }

    fn close(&mut self, _: usize) -> Result<(), String> {
        let (hash, sum, len) = self.open.pop().ok_or("a directory closed twice")?;
        // A `--json` tree gives each directory's total (the sum began
        // there); ncdu's own sizes are added up here.
        let total = sum;
        self.side.dirs.insert(hash, total);
        if !self.totals_given {
            if let Some(parent) = self.open.last_mut() {
                parent.1 = parent.1.saturating_add(total);
            }
        }
        self.path.truncate(len);
        Ok(())
    }
}

/// Read a saved scan: OLD (`old` is `None`), or NEW compared with OLD.
fn read_side(
    input: &Input,
    file: &[u8],
    measure: Measure,
    old: Option<&mut Side>,
) -> Result<(Side, Vec<Appeared>), String> {
    let first = input.as_slice().iter().find(|b| !b.is_ascii_whitespace());
    let mut reading = Reading::new(old);
    reading.totals_given = first == Some(&b'{');
    exports::read(input, measure, &mut reading).map_err(|e| format!("{}: {e}", quote(file)))?;
    let Reading {
        mut side,
        links,
        appeared,
        totals_given,
        ..
    } = reading;
    side.one_link_only = totals_given;
    resolve_links(links, &mut side.dirs);
    Ok((side, appeared))
}

/// What the second reading of OLD finds: the paths of what is shown.
struct Paths<'a> {
    new_dirs: &'a HashMap<u64, u64>,
    /// OLD's files NEW does not have.
    gone_files: &'a HashSet<u64>,
    /// NEW is a `--json` tree, which lists one link of a file.
    new_one_link_only: bool,
    old_dirs: &'a HashMap<u64, u64>,
    /// The changed directories shown, by hash: their paths go here.
    wanted: HashMap<u64, Option<Vec<u8>>>,
    gone: Vec<(u64, Vec<u8>)>,
    open: Vec<(u64, usize)>,
    path: Vec<u8>,
}

impl Sink for Paths<'_> {
    fn entry(&mut self, e: &Entry<'_>) -> Result<(), String> {
        if e.depth == 0 {
            self.open.push((ROOT, 0));
            if let Some(slot) = self.wanted.get_mut(&ROOT) {
                *slot = Some(Vec::new());
            }
            return Ok(());
        }
        let (parent, _) = *self.open.last().ok_or("an entry outside its root")?;
        let hash = child_hash(parent, &e.name);
        let topmost = self.new_dirs.contains_key(&parent);
        let gone = if e.is_dir {
            !self.new_dirs.contains_key(&hash)
        } else {
            self.gone_files.contains(&hash)
        };
        if gone && topmost && !(self.new_one_link_only && e.hard_link) {
            let amount = if e.is_dir {
                self.old_dirs.get(&hash).copied().unwrap_or(0)
            } else {
                e.amount
            };
            self.gone.push((amount, join(&self.path, &e.name)));
        }
        if e.is_dir {
            if let Some(slot) = self.wanted.get_mut(&hash) {
                *slot = Some(join(&self.path, &e.name));
            }
            let len = self.path.len();
            if !self.path.is_empty() {
                self.path.push(b'/');
            }
            self.path.extend_from_slice(&e.name);
            self.open.push((hash, len));
        }
        Ok(())
    }

    fn close(&mut self, _: usize) -> Result<(), String> {
        let (_, len) = self.open.pop().ok_or("a directory closed twice")?;
        self.path.truncate(len);
        Ok(())
    }
}

/// The live side: the walk's threads each add up their part.
#[derive(Default)]
struct Live {
    /// Files OLD has too (taken out of OLD once the walk is over).
    matched: Vec<u64>,
    dirs: HashMap<u64, u64>,
    links: Vec<Link>,
    appeared: Vec<Appeared>,
}

struct LiveVisitor<'a> {
    grouping: &'a Grouping,
    old: &'a Side,
    /// How long the root's part of the walk's prefixes is.
    root_len: usize,
    measure: Measure,
    live: Live,
    /// The directory of the chunks seen last: its path and its chain of
    /// hashes, itself first, up to the root.
    prefix: Vec<u8>,
    chain: Vec<u64>,
    scratch: Vec<u8>,
}

impl LiveVisitor<'_> {
    /// The chain of hashes of the chunk's directory.
    fn chain_for(&mut self, chunk: &Chunk<'_>) {
        let prefix = chunk.prefix();
        if prefix == self.prefix.as_slice() {
            return;
        }
        self.prefix.clear();
        self.prefix.extend_from_slice(prefix);
        self.chain.clear();
        let mut h = ROOT;
        self.chain.push(h);
        let below = prefix.get(self.root_len..).unwrap_or_default();
        for name in below.split(|&b| b == b'/').filter(|n| !n.is_empty()) {
            h = child_hash(h, name);
            self.chain.push(h);
        }
        self.chain.reverse();
    }
}

/// The root's path as the walk's prefixes begin with it, `/` included.
fn root_prefix(root: &[u8]) -> usize {
    if root.ends_with(b"/") {
        root.len()
    } else {
        root.len() + 1
    }
}

impl Visitor for LiveVisitor<'_> {
    fn visit(&mut self, chunk: &mut Chunk) -> Flow {
        self.chain_for(chunk);
        let parent = self.chain[0];
        let topmost = self.old.dirs.contains_key(&parent);
        let mut sum = 0;
        let g = self.grouping;
        let root_len = self.root_len;
        let path = |entry: &fnd_walk::EntryRef<'_>| {
            let mut p = Vec::new();
            entry.write_path(&mut p);
            p.drain(..root_len.min(p.len()));
            p
        };
        for entry in chunk.iter() {
            let Some(m) = entry.cached_metadata() else {
                g.cannot_stat(&entry, &mut self.scratch);
                continue;
            };
            if !g.counts(m) {
                continue;
            }
            let amount = Usage::of(m, self.measure, None).amount;
            let hash = child_hash(parent, entry.name_bytes());
            if m.is_dir() {
                *self.live.dirs.entry(hash).or_default() += amount;
                sum += amount;
                if topmost && !self.old.dirs.contains_key(&hash) {
                    self.live.appeared.push(Appeared {
                        hash,
                        is_dir: true,
                        amount: 0,
                        path: path(&entry),
                    });
                }
                continue;
            }
            if self.old.files.contains(&hash) {
                self.live.matched.push(hash);
            } else if topmost && !(self.old.one_link_only && m.nlink > 1) {
                self.live.appeared.push(Appeared {
                    hash,
                    is_dir: false,
                    amount,
                    path: path(&entry),
                });
            }
            if m.nlink > 1 && !g.settings.count_links {
                self.live.links.push(Link {
                    dev: m.dev,
                    ino: m.ino,
                    hash,
                    amount,
                    dirs: self.chain.clone(),
                });
            } else {
                sum += amount;
            }
        }
        if sum > 0 {
            for d in &self.chain {
                *self.live.dirs.entry(*d).or_default() += sum;
            }
        } else {
            self.live.dirs.entry(parent).or_default();
        }
        Flow::Continue
    }

    fn error(&mut self, error: Error) -> Flow {
        self.grouping.cannot_read(&error);
        Flow::Continue
    }
}

/// Scan `root` now and compare it with `old`, taking NEW's files out of
/// it; and whether an entry could not be read (it was reported).
fn live_side(settings: &Settings, root: &[u8], old: &mut Side) -> Result<(Side, Vec<Appeared>, bool), String> {
    let path = std::path::Path::new(std::ffi::OsStr::from_bytes(root));
    let m: Metadata = fnd_walk::meta::stat_path(path, true)
        .map_err(|e| format!("cannot access {}: {}", quote(root), error_text(&e)))?;
    if !m.is_dir() {
        return Err(format!("{} is not a directory", quote(root)));
    }
    let grouping = Arc::new(Grouping::new(settings.clone(), &[Some((m.dev, m.ino))])?);
    let mut dirs: HashMap<u64, u64> = HashMap::new();
    dirs.insert(ROOT, Usage::of(&m, settings.measure, None).amount);
    let mut matched: Vec<u64> = Vec::new();
    let mut links = Vec::new();
    let mut appeared = Vec::new();
    let old_files: &Side = old;
    fnd_walk::Alone.visit(
        grouping.walk(root, &m),
        || LiveVisitor {
            grouping: &grouping,
            old: old_files,
            root_len: root_prefix(root),
            measure: settings.measure,
            live: Live::default(),
            prefix: Vec::new(),
            chain: Vec::new(),
            scratch: Vec::new(),
        },
        |v| {
            let live = v.live;
            if dirs.len() < live.dirs.len() {
                let mine = std::mem::replace(&mut dirs, live.dirs);
                for (h, t) in mine {
                    *dirs.entry(h).or_default() += t;
                }
            } else {
                for (h, t) in live.dirs {
                    *dirs.entry(h).or_default() += t;
                }
            }
            matched.extend(live.matched);
            links.extend(live.links);
            appeared.extend(live.appeared);
        },
    );
    resolve_links(links, &mut dirs);
    for h in matched {
        old.files.remove(&h);
    }
    let side = Side {
        files: HashSet::new(),
        dirs,
        root: root.to_vec(),
        one_link_only: false,
    };
    Ok((side, appeared, grouping.failed()))
}

/// A directory whose total changed.
struct Changed {
    hash: u64,
    old: u64,
    new: u64,
    path: Vec<u8>,
}

impl Changed {
    fn change(&self) -> u64 {
        self.old.abs_diff(self.new)
    }
}

/// `fdu --diff OLD [NEW]`: its lines (or JSON) on stdout; the exit status.
pub fn run(settings: Settings) -> ExitCode {
    match compare(&settings) {
        Ok(failed) => {
            if failed {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(message) => {
            report(&message);
            ExitCode::from(1)
        }
    }
}

fn compare(settings: &Settings) -> Result<bool, String> {
    let (old_file, new_file) = settings.diff.clone().ok_or("no --diff")?;
    let measure = settings.measure;
    let old_input = Input::open(&old_file)?;
    let (mut old, _) = read_side(&old_input, &old_file, measure, None)?;
    let new_file = new_file.unwrap_or_else(|| old.root.clone());
    let is_dir = std::fs::metadata(std::ffi::OsStr::from_bytes(&new_file)).is_ok_and(|m| m.is_dir());
    let (new, mut appeared, failed) = if is_dir {
        live_side(settings, &new_file, &mut old)?
    } else {
        let input = Input::open(&new_file)?;
        let (side, appeared) = read_side(&input, &new_file, measure, Some(&mut old))?;
        (side, appeared, false)
    };
    let top = |n: usize| if settings.top == 0 { n } else { settings.top.min(n) };

    let mut changed: Vec<Changed> = new
        .dirs
        .iter()
        .filter_map(|(&hash, &n)| {
            let o = *old.dirs.get(&hash)?;
            (o != n).then(|| Changed {
                hash,
                old: o,
                new: n,
                path: Vec::new(),
            })
        })
        .collect();
    changed.sort_unstable_by(|a, b| b.change().cmp(&a.change()).then(a.hash.cmp(&b.hash)));
    changed.truncate(top(changed.len()));

    for a in appeared.iter_mut().filter(|a| a.is_dir) {
        a.amount = new.dirs.get(&a.hash).copied().unwrap_or(0);
    }
    appeared.sort_unstable_by(|a, b| b.amount.cmp(&a.amount).then_with(|| a.path.cmp(&b.path)));
    appeared.truncate(top(appeared.len()));

    // OLD again, for the paths of what is shown of it.
    let mut paths = Paths {
        new_dirs: &new.dirs,
        gone_files: &old.files,
        new_one_link_only: new.one_link_only,
        old_dirs: &old.dirs,
        wanted: changed.iter().map(|c| (c.hash, None)).collect(),
        gone: Vec::new(),
        open: Vec::new(),
        path: Vec::new(),
    };
    exports::read(&old_input, measure, &mut paths).map_err(|e| format!("{}: {e}", quote(&old_file)))?;
    let Paths { wanted, mut gone, .. } = paths;
    for c in &mut changed {
        c.path = wanted.get(&c.hash).cloned().flatten().unwrap_or_default();
    }
    changed.sort_by(|a, b| b.change().cmp(&a.change()).then_with(|| a.path.cmp(&b.path)));
    gone.sort_unstable_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    gone.truncate(top(gone.len()));

    let out = crate::output::Output::stdout();
    let text = if settings.json {
        json(settings, &old.root, &new.root, &changed, &appeared, &gone)
    } else {
        lines(settings, &new.root, &changed, &appeared, &gone)
    };
    out.write(&text);
    out.finish();
    Ok(failed || out.failed())
}

/// A path below the root, shown under the root's name.
fn shown(root: &[u8], rel: &[u8]) -> Vec<u8> {
    let mut p = root.to_vec();
    if !rel.is_empty() {
        if !p.ends_with(b"/") {
            p.push(b'/');
        }
        p.extend_from_slice(rel);
    }
    p
}

fn lines(
    settings: &Settings,
    root: &[u8],
    changed: &[Changed],
    appeared: &[Appeared],
    gone: &[(u64, Vec<u8>)],
) -> Vec<u8> {
    let size = &settings.size;
    let end = if settings.null { 0 } else { b'\n' };
    let mut out = Vec::new();
    let mut line = |word: &str, sign: u8, change: u64, old: Option<u64>, new: Option<u64>, path: &[u8]| {
        out.extend_from_slice(word.as_bytes());
        out.push(b'\t');
        out.push(sign);
        size.write(change, &mut out);
        for amount in [old, new] {
            out.push(b'\t');
            match amount {
                Some(a) => size.write(a, &mut out),
                None => out.push(b'-'),
            }
        }
        out.push(b'\t');
        out.extend_from_slice(&shown(root, path));
        out.push(end);
    };
    for c in changed {
        let (word, sign) = if c.new > c.old {
            ("grew", b'+')
        } else {
            ("shrank", b'-')
        };
        line(word, sign, c.change(), Some(c.old), Some(c.new), &c.path);
    }
    for a in appeared {
        line("appeared", b'+', a.amount, None, Some(a.amount), &a.path);
    }
    for (amount, path) in gone {
        line("gone", b'-', *amount, Some(*amount), None, path);
    }
    out
}

fn json(
    settings: &Settings,
    old_root: &[u8],
    new_root: &[u8],
    changed: &[Changed],
    appeared: &[Appeared],
    gone: &[(u64, Vec<u8>)],
) -> Vec<u8> {
    let mut out = Vec::new();
    let mut w = Writer::new(&mut out);
    let path = |w: &mut Writer<'_>, key: &[u8], p: &[u8]| {
        if std::str::from_utf8(p).is_ok() {
            w.key(key);
            w.string(p);
        } else {
            let mut k = key.to_vec();
            k.extend_from_slice(b"_bytes");
            w.key(&k);
            w.begin_array();
            p.iter().for_each(|&b| w.number(b.into()));
            w.end_array();
        }
    };
    w.begin_object();
    w.key(b"fdu_diff");
    w.number(1);
    w.key(b"measure");
    w.string(settings.measure.name().as_bytes());
    path(&mut w, b"old", old_root);
    path(&mut w, b"new", new_root);
    w.key(b"changed");
    w.begin_array();
    for c in changed {
        w.begin_object();
        path(&mut w, b"path", &shown(new_root, &c.path));
        w.key(b"old");
        w.number(c.old);
        w.key(b"new");
        w.number(c.new);
        w.end_object();
    }
    w.end_array();
    w.key(b"appeared");
    w.begin_array();
    for a in appeared {
        w.begin_object();
        path(&mut w, b"path", &shown(new_root, &a.path));
        w.key(b"size");
        w.number(a.amount);
        w.key(b"dir");
        w.boolean(a.is_dir);
        w.end_object();
    }
    w.end_array();
    w.key(b"gone");
    w.begin_array();
    for (amount, p) in gone {
        w.begin_object();
        path(&mut w, b"path", &shown(new_root, p));
        w.key(b"size");
        w.number(*amount);
        w.end_object();
    }
    w.end_array();
    w.end_object();
    out.push(b'\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_tell_paths_apart_and_chain() {
        let a = child_hash(ROOT, b"a");
        assert_ne!(a, child_hash(ROOT, b"b"));
        assert_ne!(child_hash(a, b"b"), child_hash(ROOT, b"ab"));
        assert_ne!(child_hash(ROOT, b"a\0"), a, "trailing zero bytes count");
        let mut seen = HashSet::new();
        for i in 0..100_000u32 {
            assert!(seen.insert(child_hash(ROOT, format!("f{i}").as_bytes())));
        }
    }

    #[test]
    fn links_count_once_at_the_lowest_hash() {
        let mut dirs = HashMap::new();
        let link = |hash, dir| Link {
            dev: 1,
            ino: 9,
            hash,
            amount: 10,
            dirs: vec![dir, ROOT],
        };
        resolve_links(vec![link(5, 100), link(3, 200)], &mut dirs);
        assert_eq!(dirs.get(&200), Some(&10));
        assert_eq!(dirs.get(&100), None);
        assert_eq!(dirs.get(&ROOT), Some(&10));
    }
}
