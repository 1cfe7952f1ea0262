//! What one run of fdu is asked to do, as plain data: the command line
//! parses into [`Settings`] (`cli`), and the scan, the hard-link rules, the
//! formats and the views read it. Nothing here reads the environment or
//! the file system; how sizes and times are spelled and parsed is
//! `format`'s business.

/// Everything a run needs, checked.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Files and directories to measure, as given (empty: `.`).
    pub operands: Vec<Vec<u8>>,
    /// Operands come from this NUL-separated file (`--files0-from`; `-`: stdin).
    pub files0_from: Option<Vec<u8>>,

    /// What is added up per entry.
    pub measure: Measure,
    /// Which symbolic links are followed.
    pub follow: Follow,
    /// Count a multiply-linked file at each of its links (`-l`).
    pub count_links: bool,
    /// A directory's line leaves out its subdirectories (`-S`).
    pub separate_dirs: bool,
    /// Stay on the operand's file system (`-x`).
    pub one_file_system: bool,
    /// Glob patterns of entries left out (`--exclude`, `-X`).
    pub excludes: Vec<String>,

    /// A line for files too, not only directories (`-a`).
    pub all: bool,
    /// Lines only for entries at most this many levels below an operand.
    pub max_depth: usize,
    /// A last line with the grand total (`-c`).
    pub total: bool,
    /// How amounts are written.
    pub size: SizeFormat,
    /// Which entries get a line, by amount (`-t`).
    pub threshold: Threshold,
    /// A time column (`--time`): which time, and how it is written.
    pub time: Option<(TimeKind, TimeFormat)>,
    /// End lines with NUL rather than newline (`-0`).
    pub null: bool,

    /// Worker threads (0: one per core).
    pub threads: usize,
    /// Most directory reads waiting on the file system at once (0: the walk's default).
    pub io_depth: usize,

    /// Show the tree view (`--tree`) instead of du's lines.
    pub tree: Option<TreeOptions>,
    /// Write the scanned tree as JSON (`--json`) instead of du's lines.
    pub json: bool,
    /// Show a tree read from this file (`--from-json`; `-`: stdin) instead of scanning.
    pub from_json: Option<Vec<u8>>,
    /// Write the tree in ncdu's export format to this file (`-o`; `-`: stdout) instead of du's lines.
    pub export_file: Option<Vec<u8>>,
    /// `-e`: the export also holds each entry's uid, gid, mode and mtime (ncdu's extended mode).
    pub extended: bool,
    /// Read an export in ncdu's format (`-f`; `-`: stdin) instead of scanning.
    pub input_file: Option<Vec<u8>>,
    /// A progress line on stderr, when it is a terminal.
    pub progress: bool,
    /// Browse the tree in the terminal (`-i`) instead of printing du's lines.
    pub browse: bool,

    /// Usage per group of entries (`--by`), instead of du's lines; empty: not asked.
    pub by: Vec<GroupKey>,
    /// Users and groups by number, never looked up (`--numeric-ids`).
    pub numeric_ids: bool,
    /// Most groups or changes shown (`--top`; 0: all).
    pub top: usize,
    /// What changed between two scans (`--diff OLD [NEW]`): OLD, and NEW
    /// (an export, or a directory to scan; `None`: OLD's own root, live).
    pub diff: Option<(Vec<u8>, Option<Vec<u8>>)>,
}

/// What `--by` groups entries by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupKey {
    /// The owner (by name, or number).
    User,
    /// The group.
    Group,
    /// The final extension of the name, lower-cased.
    Ext,
    /// File, directory, symlink...
    Type,
    /// How long ago the time `--time` picks (mtime by default) was.
    Age,
}

impl Settings {
    /// Whether the scan keeps the whole tree (for `--tree`, `--json` or
    /// the browser); du's lines are then not printed.
    pub fn keeps_tree(&self) -> bool {
        self.tree.is_some() || self.json || self.browse
    }
}

/// What is added up per entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Measure {
    /// Allocated blocks (`st_blocks * 512`).
    Disk,
    /// Apparent size (`st_size`).
    Apparent,
    /// One per inode (`--inodes`).
    Inodes,
}

impl Measure {
    /// Its name in `--json` output.
    pub fn name(self) -> &'static str {
        match self {
            Measure::Disk => "disk",
            Measure::Apparent => "apparent",
            Measure::Inodes => "inodes",
        }
    }
}

/// Which symlinks are followed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Follow {
    /// None (`-P`, the default).
    Never,
    /// Command-line operands only (`-H`, `-D`).
    Operands,
    /// All of them (`-L`).
    All,
}

/// Which timestamp `--time` shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeKind {
    Modified,
    Accessed,
    Changed,
}

/// `-t`: a positive threshold hides smaller entries, a negative one larger.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Threshold {
    AtLeast(u64),
    AtMost(u64),
}

impl Threshold {
    /// Whether an entry of this amount gets a line.
    pub fn shows(self, amount: u64) -> bool {
        match self {
            Threshold::AtLeast(t) => amount >= t,
            Threshold::AtMost(t) => amount <= t,
        }
    }
}

/// How an amount (bytes, or inodes) is written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SizeFormat {
    /// `ceil(amount / block)`, followed by `suffix` (`-BM` prints `1M`; `-B1M` prints `1`).
    Blocks { block: u64, suffix: String },
    /// Scaled by powers of `base` with one decimal below 10 (`-h`: 1024, `--si`: 1000).
    Human { base: u64 },
}

impl SizeFormat {
    /// Plain numbers: bytes, or inodes.
    pub fn units() -> SizeFormat {
        SizeFormat::Blocks {
            block: 1,
            suffix: String::new(),
        }
    }
}

/// How `--time` writes a time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimeFormat {
    /// A strftime format (du's `--time-style`).
    pub strftime: String,
}

/// The tree view's shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TreeOptions {
    /// Levels below the root shown.
    pub depth: usize,
    /// Most lines shown.
    pub lines: usize,
    /// Width of the bar.
    pub bar_width: usize,
}
