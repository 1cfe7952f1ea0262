//! Hidden entries and ignore files as a [`DirHook`]: `.gitignore`,
//! `.git/info/exclude`, git's global excludes file, `.ignore`, custom ignore
//! file names (`.fdignore`, say), explicit ignore files and override globs,
//! with the precedence of the `ignore` crate (whose gitignore matcher does the
//! matching; only the traversal is this crate's).
//!
//! Ignore files are read when their directory is entered, with `openat`
//! relative to the directory's descriptor; each directory's rules are chained
//! to its parent's, and (unless told otherwise) to those of the directories
//! above the root.
//!
//! Offers [`IgnoreBuilder`] and the [`IgnoreFilter`] it builds, whose state
//! per directory is its [`Level`] of rules. A hook like any other: it
//! relies on the filter contract (`crate::filter`) alone, and the walk runs
//! it as one of its hooks.
//!
//! ```
//! use fnd_walk::{Chunk, Flow, Order, Visitor, WalkBuilder};
//! use fnd_walk::ignore::IgnoreBuilder;
//!
//! struct Names(Vec<String>);
//! impl Visitor for Names {
//!     fn visit(&mut self, chunk: &mut Chunk<'_>) -> Flow {
//!         self.0.extend(chunk.iter().map(|e| e.file_name().to_string_lossy().into_owned()));
//!         Flow::Continue
//!     }
//! }
//!
//! let dir = tempfile::tempdir().unwrap();
//! std::fs::write(dir.path().join(".ignore"), "*.log\n").unwrap();
//! std::fs::write(dir.path().join("a.log"), "").unwrap();
//! std::fs::write(dir.path().join("a.txt"), "").unwrap();
//! let filter = IgnoreBuilder::new().parents(false).build(&[dir.path()]);
//! let mut names = Vec::new();
//! WalkBuilder::new(dir.path())
//!     .order(Order::DepthFirst)
//!     .min_depth(1)
//!     .hook(filter)
//!     .visit(|| Names(Vec::new()), |n| names = n.0);
//! assert_eq!(names, ["a.txt"]);
//! ```

mod files;
mod handover;

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use ignore::overrides::Override;
use ignore::Match;
use rustix::fs::{Mode, OFlags};

use self::files::{exists_at, rules_from, Lookup};
use crate::filter::{Decision, DirHook, DirInfo, ImportError, MovedDir, RawEntry};

/// Whether a name is hidden as the `ignore` crate (and so fd and ripgrep)
/// judges it: it starts with `.` and does not end with one. The crate takes
/// no file name from a path ending in `.`, so `.foo.`, `...` and `.cfg.`
/// are not hidden there, and here neither.
pub fn is_hidden(name: &[u8]) -> bool {
    name.first() == Some(&b'.') && name.last() != Some(&b'.')
}

/// Configures an [`IgnoreFilter`]. Every source is on by default except
/// custom file names, explicit files, overrides and `ignore_contain`.
#[derive(Clone, Debug)]
pub struct IgnoreBuilder {
    hidden: bool,
    dot_ignore: bool,
    git_ignore: bool,
    git_exclude: bool,
    git_global: bool,
    require_git: bool,
    parents: bool,
    custom_names: Vec<OsString>,
    explicit: Vec<Gitignore>,
    overrides: Option<Override>,
    ignore_contain: Vec<OsString>,
}

impl Default for IgnoreBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl IgnoreBuilder {
    /// Every source on (`.gitignore` and `.git/info/exclude` only inside a
    /// repository, git's global excludes file, `.ignore`), hidden entries
    /// skipped, the directories above each root read.
    pub fn new() -> Self {
        IgnoreBuilder {
            hidden: true,
            dot_ignore: true,
            git_ignore: true,
            git_exclude: true,
            git_global: true,
            require_git: true,
            parents: true,
            custom_names: Vec::new(),
            explicit: Vec::new(),
            overrides: None,
            ignore_contain: Vec::new(),
        }
    }

    /// Skip entries whose name starts with `.` (unless a rule whitelists them).
    pub fn hidden(mut self, yes: bool) -> Self {
        self.hidden = yes;
        self
    }

    /// Read `.ignore` files.
    pub fn dot_ignore(mut self, yes: bool) -> Self {
        self.dot_ignore = yes;
        self
    }

    /// Read `.gitignore` files, `.git/info/exclude` and git's global excludes file.
    pub fn git(mut self, yes: bool) -> Self {
        self.git_ignore = yes;
        self.git_exclude = yes;
        self.git_global = yes;
        self
    }

    /// Apply git's rules only inside a git repository (a directory with `.git` or `.jj`).
    pub fn require_git(mut self, yes: bool) -> Self {
        self.require_git = yes;
        self
    }

    /// Also read ignore files in the directories above each root.
    pub fn parents(mut self, yes: bool) -> Self {
        self.parents = yes;
        self
    }

    /// Read ignore files of this name too (like `.ignore`, with higher precedence).
    pub fn add_custom_name(mut self, name: impl Into<OsString>) -> Self {
        self.custom_names.push(name.into());
        self
    }

    /// Rules that apply everywhere, at the lowest precedence; patterns are
    /// relative to `base` (usually the working directory).
    pub fn add_explicit(mut self, file: &Path, base: &Path) -> (Self, Option<ignore::Error>) {
        let mut builder = GitignoreBuilder::new(base);
        let mut err = builder.add(file);
        match builder.build() {
            Ok(gi) => self.explicit.push(gi),
            Err(e) => err = Some(e),
        }
        (self, err)
    }

    /// Globs that take precedence over every other rule.
    pub fn overrides(mut self, overrides: Override) -> Self {
        self.overrides = (!overrides.is_empty()).then_some(overrides);
        self
    }

    /// Skip directories holding an entry of this name (and all below them).
    pub fn add_ignore_contain(mut self, name: impl Into<OsString>) -> Self {
        self.ignore_contain.push(name.into());
        self
    }

    fn reads_files(&self) -> bool {
        self.dot_ignore || self.git_ignore || self.git_exclude || !self.custom_names.is_empty()
    }

    fn checks_git(&self) -> bool {
        self.require_git && (self.git_ignore || self.git_exclude)
    }

    /// The filter for a walk over `roots` (the rules of the directories above
    /// each root are read now).
    pub fn build<P: AsRef<Path>>(self, roots: &[P]) -> IgnoreFilter {
        let global = if self.git_global {
            let cwd = std::env::current_dir().unwrap_or_default();
            GitignoreBuilder::new(cwd).build_global().0
        } else {
            Gitignore::empty()
        };
        let mut probes: Vec<Vec<u8>> = self.custom_names.iter().map(|n| n.as_bytes().to_vec()).collect();
        for (wanted, name) in [
            (self.dot_ignore, &b".ignore"[..]),
            (self.git_ignore, b".gitignore"),
            (self.checks_git() || self.git_exclude, b".git"),
            (self.checks_git(), b".jj"),
        ] {
            if wanted {
                probes.push(name.to_vec());
            }
        }
        let mut filter = IgnoreFilter {
            opts: self,
            probes,
            global,
            roots: HashMap::new(),
            rebuilt: handover::Rebuilt::default(),
        };
        for root in roots {
            let path = root.as_ref();
            let above = filter.levels_above(path);
            filter.roots.insert(path.as_os_str().as_bytes().to_vec(), above);
        }
        filter
    }
}

/// The rules of one directory's own ignore files.
#[derive(Debug, Default)]
struct Rules {
    custom: Option<Gitignore>,
    dot_ignore: Option<Gitignore>,
    git_ignore: Option<Gitignore>,
    git_exclude: Option<Gitignore>,
}

impl Rules {
    fn is_empty(&self) -> bool {
        self.custom.is_none() && self.dot_ignore.is_none() && self.git_ignore.is_none() && self.git_exclude.is_none()
    }
}

/// A directory's place in the chain of rules: its own, then its parent's
/// (an [`IgnoreFilter`]'s state for the directory).
#[derive(Debug)]
pub struct Level {
    parent: Option<Arc<Level>>,
    rules: Rules,
    /// The directory is a git (or jj) repository root.
    has_git: bool,
    /// This level or one above it is a repository root.
    any_git: bool,
    /// This level or one above it has rules of its own.
    any_rules: bool,
    /// A directory above the walk's root: its patterns see absolute paths.
    above_root: bool,
    root: Arc<RootInfo>,
}

#[derive(Debug, Default)]
struct RootInfo {
    /// Length of the root's path as the walk spells it, with its `/`.
    prefix_len: usize,
    /// The root's canonical path, for matching against the directories above it.
    absolute: PathBuf,
}

impl Level {
    fn chain(&self) -> impl Iterator<Item = &Level> {
        std::iter::successors(Some(self), |l| l.parent.as_deref())
    }
}

/// The filter built by [`IgnoreBuilder`].
#[derive(Debug)]
pub struct IgnoreFilter {
    opts: IgnoreBuilder,
    /// The names a directory's listing is checked for before it is entered.
    probes: Vec<Vec<u8>>,
    global: Gitignore,
    /// Per root path: the chain of the directories above it.
    roots: HashMap<Vec<u8>, Option<Arc<Level>>>,
    /// States of directories handed over by another process, rebuilt here.
    rebuilt: handover::Rebuilt,
}

impl IgnoreFilter {
    /// Read the rules of one directory, open as `dir`, spelt `path`.
    fn rules_of(&self, dir: &Lookup<'_>, path: &[u8], has_git_dir: bool) -> Rules {
        let o = &self.opts;
        let mut rules = Rules::default();
        if !o.custom_names.is_empty() {
            let names: Vec<&[u8]> = o.custom_names.iter().map(|n| n.as_bytes()).collect();
            rules.custom = rules_from(dir, &names, path);
        }
        if o.dot_ignore {
            rules.dot_ignore = rules_from(dir, &[b".ignore"], path);
        }
        if o.git_ignore {
            rules.git_ignore = rules_from(dir, &[b".gitignore"], path);
        }
        if o.git_exclude && has_git_dir {
            rules.git_exclude = rules_from(dir, &[b".git/info/exclude"], path);
        }
        rules
    }

    fn level(
        &self,
        dir: BorrowedFd<'_>,
        present: Option<&[bool]>,
        path: &[u8],
        parent: Option<Arc<Level>>,
        above_root: bool,
        root: Arc<RootInfo>,
    ) -> Level {
        let o = &self.opts;
        let dir = Lookup {
            dir,
            probes: &self.probes,
            present,
        };
        let git_dir = (o.checks_git() || o.git_exclude) && dir.exists(b".git");
        let has_git = o.checks_git() && (git_dir || dir.exists(b".jj"));
        let rules = if !above_root || o.parents {
            self.rules_of(&dir, path, git_dir)
        } else {
            Rules::default()
        };
        let any_git = has_git || parent.as_ref().is_some_and(|p| p.any_git);
        let any_rules = !rules.is_empty() || parent.as_ref().is_some_and(|p| p.any_rules);
        Level {
            parent,
            rules,
            has_git,
            any_git,
            any_rules,
            above_root,
            root,
        }
    }

    /// The chain of levels for the directories above `root`, outermost first.
    fn levels_above(&self, root: &Path) -> Option<Arc<Level>> {
        let o = &self.opts;
        if !(o.parents && o.reads_files() || o.checks_git()) {
            return None;
        }
        let absolute = root.canonicalize().ok()?;
        let mut prefix_len = root.as_os_str().len();
        if !root.as_os_str().as_bytes().ends_with(b"/") {
            prefix_len += 1;
        }
        let info = Arc::new(RootInfo {
            prefix_len,
            absolute: absolute.clone(),
        });
        let mut ancestors: Vec<&Path> = absolute.ancestors().skip(1).collect();
        ancestors.reverse();
        let mut chain: Option<Arc<Level>> = None;
        for dir in ancestors {
            let Ok(fd) = rustix::fs::open(dir, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
            else {
                continue;
            };
            let level = self.level(
                fd.as_fd(),
                None,
                dir.as_os_str().as_bytes(),
                chain.take(),
                true,
                info.clone(),
            );
            chain = Some(Arc::new(level));
        }
        chain
    }

    /// Does any rule ignore (or whitelist) `path`, as the `ignore` crate would decide?
    fn matched(&self, level: &Level, path: &[u8], is_dir: bool) -> Match<()> {
        let path = Path::new(OsStr::from_bytes(path));
        let o = &self.opts;
        let any_git = !o.require_git || level.any_git;
        // Nearest match per source: custom names, .ignore, .gitignore, exclude.
        let mut found: [Match<()>; 4] = [Match::None, Match::None, Match::None, Match::None];
        let mut saw_git = false;
        let mut absolute: Option<PathBuf> = None;
        for lv in level.chain() {
            let p: &Path = if lv.above_root {
                if !o.parents {
                    break;
                }
                absolute.get_or_insert_with(|| {
                    let rel = path
                        .as_os_str()
                        .as_bytes()
                        .get(lv.root.prefix_len..)
                        .unwrap_or_default();
                    lv.root.absolute.join(OsStr::from_bytes(rel))
                })
            } else {
                path
            };
            let sources = [
                &lv.rules.custom,
                &lv.rules.dot_ignore,
                &lv.rules.git_ignore,
                &lv.rules.git_exclude,
            ];
            for (i, gi) in sources.into_iter().enumerate() {
                let git_source = i >= 2;
                if !found[i].is_none() || (git_source && (!any_git || saw_git)) {
                    continue;
                }
                if let Some(gi) = gi {
                    found[i] = gi.matched(p, is_dir).map(|_| ());
                }
            }
            saw_git |= lv.has_git;
        }
        let global = if any_git {
            self.global.matched(path, is_dir).map(|_| ())
        } else {
            Match::None
        };
        let explicit = o
            .explicit
            .iter()
            .rev()
            .map(|gi| gi.matched(path, is_dir).map(|_| ()))
            .find(|m| !m.is_none())
            .unwrap_or(Match::None);
        let [custom, dot_ignore, git_ignore, git_exclude] = found;
        custom
            .or(dot_ignore)
            .or(git_ignore)
            .or(git_exclude)
            .or(global)
            .or(explicit)
    }

    fn has_rules(&self) -> bool {
        let o = &self.opts;
        o.reads_files() || o.git_global || !o.explicit.is_empty()
    }
}

thread_local! {
    static PATH_BUF: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl DirHook for IgnoreFilter {
    type State = Level;

    fn probe_names(&self) -> &[Vec<u8>] {
        if self.has_rules() {
            &self.probes
        } else {
            &[]
        }
    }

    fn enter(&self, dir: &DirInfo<'_>, parent: Option<&Arc<Level>>) -> Option<Arc<Level>> {
        let (parent, root) = match parent.cloned() {
            Some(p) => {
                let root = p.root.clone();
                (Some(p), root)
            }
            None => {
                let above = self.roots.get(dir.path).cloned().flatten();
                let root = above.as_ref().map(|l| l.root.clone()).unwrap_or_default();
                (above, root)
            }
        };
        if !self.has_rules() {
            return None;
        }
        let level = self.level(dir.fd, dir.present, dir.path, parent.clone(), false, root);
        if level.rules.is_empty() && !level.has_git {
            // Nothing new here: the children share the parent's chain.
            if let Some(p) = parent {
                return Some(p);
            }
        }
        Some(Arc::new(level))
    }

    fn decide(&self, level: Option<&Level>, entry: &RawEntry<'_>) -> Decision {
        let is_dir = entry.is_dir();
        // Most directories of most trees have no rule above them: no path to build then.
        let needs_path = self.opts.overrides.is_some()
            || !self.opts.explicit.is_empty()
            || !self.global.is_empty()
            || level.is_some_and(|l| l.any_rules);
        let verdict = if needs_path {
            PATH_BUF.with_borrow_mut(|buf| {
                buf.clear();
                buf.extend_from_slice(entry.parent_prefix);
                buf.extend_from_slice(entry.name);
                let path = Path::new(OsStr::from_bytes(buf));
                if let Some(o) = &self.opts.overrides {
                    let m = o.matched(path, is_dir);
                    if !m.is_none() {
                        return m.map(|_| ());
                    }
                }
                match level {
                    Some(level) => self.matched(level, buf, is_dir),
                    None => Match::None,
                }
            })
        } else {
            Match::None
        };
        match verdict {
            Match::Ignore(()) => return Decision::SKIP,
            Match::None if self.opts.hidden && is_hidden(entry.name) => return Decision::SKIP,
            _ => {}
        }
        if is_dir && !self.opts.ignore_contain.is_empty() && self.contains_marker(entry) {
            return Decision::SKIP;
        }
        Decision::KEEP
    }

    /// A state depends only on the tree: another process rebuilds it from
    /// the path (see `handover`).
    fn export_state(&self, _: &Arc<Level>, _: &MovedDir<'_>) -> Option<Vec<u8>> {
        Some(handover::EXPORTED.to_vec())
    }

    fn import_state(&self, bytes: &[u8], handover: &MovedDir<'_>) -> Result<Arc<Level>, ImportError> {
        if bytes != handover::EXPORTED {
            return Err("not an ignore filter's state".into());
        }
        self.rebuild(handover)
    }
}

impl IgnoreFilter {
    /// Does the directory `entry` hold one of the `ignore_contain` names?
    fn contains_marker(&self, entry: &RawEntry<'_>) -> bool {
        self.opts.ignore_contain.iter().any(|marker| {
            let mut rel = entry.name.to_vec();
            rel.push(b'/');
            rel.extend_from_slice(marker.as_bytes());
            exists_at(entry.dir_fd, &rel)
        })
    }

    /// Whether a root holds one of the `ignore_contain` names (the walk then
    /// yields nothing from it).
    pub fn skips_root(&self, root: &Path) -> bool {
        self.opts.ignore_contain.iter().any(|m| root.join(m).exists())
    }
}
