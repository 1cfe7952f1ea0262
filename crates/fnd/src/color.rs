//! Colours from `LS_COLORS` (parsed by the `lscolors` crate), or fd's
//! built-in palette when it is unset, so `fnd` looks like fd out of the box.
//!
//! The style of an entry is chosen as `lscolors` chooses it, but from what
//! the walk already knows: the type from `getdents64`, and metadata (for
//! set-id, executable, sticky and other-writable colours) from one
//! `fstatat` relative to the parent directory. `LsColors::style_for` would
//! need a `std::fs::Metadata`, which only a full-path stat can produce.

use std::collections::HashMap;
use std::io::Write as _;

use fnd_walk::FileType;
use lscolors::{Indicator, LsColors, Style};

use crate::found::Found;

/// fd 10.5's palette (`vivid --color-mode 8-bit generate molokai`), byte for
/// byte: its stray newlines make a few keys unreadable in fd too.
const DEFAULT_LS_COLORS: &str = include_str!("default_ls_colors.txt");

/// The escape sequence that ends any colour.
pub const RESET: &[u8] = b"\x1b[0m";

/// When `--color` asks for colour.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorWhen {
    /// show colors if the output goes to an interactive console (default)
    Auto,
    /// always use colorized output
    Always,
    /// do not use colorized output
    Never,
}

impl ColorWhen {
    /// Whether to colour, as fd decides: `auto` colours a terminal unless
    /// `NO_COLOR` is set to something (`no_color`, see [`no_color`]).
    pub fn enabled(self, stdout_is_terminal: bool, no_color: bool) -> bool {
        match self {
            ColorWhen::Always => true,
            ColorWhen::Never => false,
            ColorWhen::Auto => stdout_is_terminal && !no_color,
        }
    }
}

/// Whether `NO_COLOR` asks for no colour (set to something, as fd reads it).
pub fn no_color() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
}

/// `LS_COLORS`, when set (and Unicode, as `lscolors` reads it).
pub fn ls_colors() -> Option<String> {
    std::env::var("LS_COLORS").ok()
}

/// The palette in use.
pub struct Colors {
    ls: LsColors,
    file_needs_metadata: bool,
    dir_needs_metadata: bool,
    check_orphans: bool,
}

impl Colors {
    /// From `LS_COLORS`, else fd's default palette.
    pub fn from_env() -> Colors {
        Colors::from_spec(ls_colors().as_deref())
    }

    /// From an `LS_COLORS` value, else (`None`) fd's default palette.
    pub fn from_spec(spec: Option<&str>) -> Colors {
        Colors::new(LsColors::from_string(spec.unwrap_or(DEFAULT_LS_COLORS)))
    }

    #[cfg(test)]
    pub fn from_string(spec: &str) -> Colors {
        Colors::new(LsColors::from_string(spec))
    }

    fn new(ls: LsColors) -> Colors {
        let has = |i| ls.has_explicit_style_for(i);
        Colors {
            file_needs_metadata: has(Indicator::Setuid)
                || has(Indicator::Setgid)
                || has(Indicator::ExecutableFile)
                || has(Indicator::MultipleHardLinks),
            dir_needs_metadata: has(Indicator::StickyAndOtherWritable)
                || has(Indicator::OtherWritable)
                || has(Indicator::Sticky),
            check_orphans: has(Indicator::OrphanedSymbolicLink),
            ls,
        }
    }

    /// The directory style, used for the parent part of every path.
    pub fn directory(&self) -> Option<&Style> {
        self.ls.style_for_indicator(Indicator::Directory)
    }

    /// The style of an entry's name.
    pub fn style_for(&self, entry: &impl Found) -> Option<&Style> {
        let indicator = self.indicator(entry);
        if indicator == Indicator::RegularFile {
            // As in lscolors: a name that is not UTF-8 gets no colour at all.
            let name = std::str::from_utf8(entry.name_bytes()).ok()?;
            if let Some(style) = self.ls.style_for_str(name) {
                return Some(style);
            }
        }
        self.ls.style_for_indicator(indicator)
    }

    fn indicator(&self, entry: &impl Found) -> Indicator {
        let has = |i| self.ls.has_explicit_style_for(i);
        match entry.target_type() {
            FileType::File => {
                if self.file_needs_metadata {
                    if let Ok(m) = entry.metadata_follow() {
                        if has(Indicator::Setuid) && m.mode & 0o4000 != 0 {
                            return Indicator::Setuid;
                        } else if has(Indicator::Setgid) && m.mode & 0o2000 != 0 {
                            return Indicator::Setgid;
                        } else if has(Indicator::ExecutableFile) && m.mode & 0o111 != 0 {
                            return Indicator::ExecutableFile;
                        } else if has(Indicator::MultipleHardLinks) && m.nlink > 1 {
                            return Indicator::MultipleHardLinks;
                        }
                    }
                }
                Indicator::RegularFile
            }
            FileType::Dir => {
                if self.dir_needs_metadata {
                    if let Ok(m) = entry.metadata_follow() {
                        if has(Indicator::StickyAndOtherWritable) && m.mode & 0o1002 == 0o1002 {
                            return Indicator::StickyAndOtherWritable;
                        } else if has(Indicator::OtherWritable) && m.mode & 0o002 != 0 {
                            return Indicator::OtherWritable;
                        } else if has(Indicator::Sticky) && m.mode & 0o1000 != 0 {
                            return Indicator::Sticky;
                        }
                    }
                }
                Indicator::Directory
            }
            FileType::Symlink => {
                if self.check_orphans && entry.metadata_follow().is_err() {
                    return Indicator::OrphanedSymbolicLink;
                }
                Indicator::SymbolicLink
            }
            FileType::Fifo => Indicator::FIFO,
            FileType::Socket => Indicator::Socket,
            FileType::BlockDevice => Indicator::BlockDevice,
            FileType::CharDevice => Indicator::CharacterDevice,
            FileType::Unknown => Indicator::MissingFile,
        }
    }
}

/// A thread's escape sequences, by style: rendering a style's sequence
/// costs a `fmt` round, a lookup does not. Styles live as long as the
/// palette, so their address names them.
#[derive(Default)]
pub struct Painter {
    sequences: HashMap<usize, Box<[u8]>>,
}

impl Painter {
    /// Append `text` in `style` (as `nu_ansi_term`'s `paint` writes it:
    /// nothing added for a plain style).
    pub fn paint(&mut self, style: Option<&Style>, text: &[u8], out: &mut Vec<u8>) {
        let start = self.start(style);
        if start.is_empty() {
            out.extend_from_slice(text);
        } else {
            out.extend_from_slice(start);
            out.extend_from_slice(text);
            out.extend_from_slice(RESET);
        }
    }

    /// The sequence that starts `style` (empty for no colour).
    pub fn start(&mut self, style: Option<&Style>) -> &[u8] {
        let Some(style) = style else { return b"" };
        self.sequences.entry(style as *const Style as usize).or_insert_with(|| {
            let s = style.to_nu_ansi_term_style();
            let mut seq = Vec::new();
            if !s.is_plain() {
                let _ = write!(seq, "{}", s.prefix());
            }
            seq.into()
        })
    }
}

/// On Ctrl-C, leave the terminal in its normal colours (and outside any
/// hyperlink) even if the interrupt cut a write short, then die of SIGINT
/// as the shell expects. Records are written whole, so this only matters
/// for a write the terminal took in part.
pub fn reset_terminal_on_interrupt() {
    use nix::sys::signal::{signal, SigHandler, Signal};
    extern "C" fn on_interrupt(_: nix::libc::c_int) {
        const RESET_ALL: &[u8] = b"\x1b[0m\x1b]8;;\x1b\\";
        // SAFETY: write(2), signal(2) and raise(3) are async-signal-safe.
        unsafe {
            nix::libc::write(1, RESET_ALL.as_ptr().cast(), RESET_ALL.len());
            nix::libc::signal(nix::libc::SIGINT, nix::libc::SIG_DFL);
            nix::libc::raise(nix::libc::SIGINT);
        }
    }
    // SAFETY: the handler only makes async-signal-safe calls.
    let _ = unsafe { signal(Signal::SIGINT, SigHandler::Handler(on_interrupt)) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paints_like_nu_ansi_term() {
        let colors = Colors::from_string("di=01;34:*.gz=4;38;5;203");
        let mut painter = Painter::default();
        let mut out = Vec::new();
        painter.paint(colors.directory(), b"a/", &mut out);
        painter.paint(None, b"x", &mut out);
        assert_eq!(out, b"\x1b[1;34ma/\x1b[0mx");
    }

    #[test]
    fn default_palette_is_fds() {
        let colors = Colors::from_string(DEFAULT_LS_COLORS);
        let mut painter = Painter::default();
        assert_eq!(painter.start(colors.directory()), b"\x1b[38;5;81m");
    }
}
