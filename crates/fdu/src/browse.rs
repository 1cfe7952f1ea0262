//! `fdu -i`: the scanned tree in a full-screen browser, as ncdu shows it.
//!
//! The scan is the same parallel scan as du's lines (with a detail per
//! entry: 40 bytes and its name), run on its own thread while this one
//! draws its progress. Then [`model`] holds the tree and answers keys, and
//! [`draw`] paints the screen. Deleting goes through the engine's
//! `remove` (descriptors, no symlink followed), rescanning through the same
//! scan as the first.
//!
//! The terminal is always given back as it was: on quit, on Ctrl-C (a key
//! in raw mode), after an error, after a panic (a hook restores it before
//! the message is printed), and when killed by SIGTERM, SIGHUP, SIGINT or
//! SIGQUIT (a handler restores it, then dies of the signal). Messages of the scan (unreadable
//! folders…) are held while the screen is in use and printed after.

pub mod draw;
pub mod model;

use std::io::{IsTerminal, Stdout};
use std::os::unix::ffi::OsStrExt;
use std::process::ExitCode;
use std::sync::{Arc, Once, OnceLock};
use std::time::{Duration, Instant};

use crossterm::event::{self, Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use crossterm::terminal::{self, EnterAlternateScreen, LeaveAlternateScreen};
use crossterm::{cursor, execute};
use ratatui::backend::CrosstermBackend;
use ratatui::widgets::Paragraph;
use ratatui::Terminal;

use crate::messages::{self, report};
use crate::progress::Progress;
use crate::settings::{Measure, Settings};
use crate::tree::{Detail, Root, TreeNode};
use model::{Actions, Key, Model, Outcome};

/// How the browser scans: the one operand of `settings`, into a detailed tree.
pub type ScanTree = fn(&Settings, &Arc<Progress>) -> Option<Root>;

/// The terminal in raw mode on the alternate screen, given back on drop.
struct Screen {
    terminal: Terminal<CrosstermBackend<Stdout>>,
}

/// The terminal's settings before raw mode, for [`on_fatal_signal`].
static COOKED: OnceLock<rustix::termios::Termios> = OnceLock::new();

/// A signal that ends the process: the terminal is given back with only
/// what a handler may call (an ioctl, a write), then the signal does what
/// it would have done.
extern "C" fn on_fatal_signal(signal: libc::c_int) {
    // SAFETY: fd 0 is the terminal whose settings were saved.
    let stdin = unsafe { std::os::fd::BorrowedFd::borrow_raw(0) };
    if let Some(cooked) = COOKED.get() {
        let _ = rustix::termios::tcsetattr(stdin, rustix::termios::OptionalActions::Now, cooked);
    }
    const LEAVE_SCREEN: &[u8] = b"\x1b[?1049l\x1b[?25h";
    // SAFETY: write, signal and raise are async-signal-safe.
    unsafe {
        libc::write(1, LEAVE_SCREEN.as_ptr().cast(), LEAVE_SCREEN.len());
        libc::signal(signal, libc::SIG_DFL);
        libc::raise(signal);
    }
}

impl Screen {
    fn enter() -> std::io::Result<Screen> {
        static HOOKS: Once = Once::new();
        HOOKS.call_once(|| {
            let previous = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                restore();
                previous(info);
            }));
            // SAFETY: fd 0, when a terminal, is the one raw mode changes.
            let stdin = unsafe { std::os::fd::BorrowedFd::borrow_raw(0) };
            if let Ok(cooked) = rustix::termios::tcgetattr(stdin) {
                let _ = COOKED.set(cooked);
            }
            for signal in [libc::SIGTERM, libc::SIGHUP, libc::SIGINT, libc::SIGQUIT] {
                // SAFETY: the handler calls only async-signal-safe functions.
                unsafe {
                    libc::signal(
                        signal,
                        on_fatal_signal as extern "C" fn(libc::c_int) as libc::sighandler_t,
                    )
                };
            }
        });
        terminal::enable_raw_mode()?;
        let mut stdout = std::io::stdout();
        if let Err(e) = execute!(stdout, EnterAlternateScreen, cursor::Hide) {
            restore();
            return Err(e);
        }
        match Terminal::new(CrosstermBackend::new(stdout)) {
            Ok(terminal) => Ok(Screen { terminal }),
            Err(e) => {
                restore();
                Err(e)
            }
        }
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        restore();
    }
}

/// Give the terminal back: cooked mode, the main screen, a cursor.
fn restore() {
    let _ = terminal::disable_raw_mode();
    let _ = execute!(std::io::stdout(), LeaveAlternateScreen, cursor::Show);
}

/// The whole `-i` run.
pub fn run(mut settings: Settings, scan: ScanTree) -> ExitCode {
    // The tree keeps disk usage and apparent size both; `-b` or
    // `--apparent-size` only chooses which is shown first.
    let apparent = settings.measure == Measure::Apparent;
    settings.measure = Measure::Disk;
    // Keys come from stdin, or from /dev/tty when stdin is an export (`-f -`).
    if !std::io::stdout().is_terminal() {
        report("--interactive needs a terminal on stdout");
        return ExitCode::from(1);
    }
    // What cannot be scanned at all is said before the screen is taken.
    if settings.input_file.is_none() {
        let operand = settings.operands.first().map_or(&b"."[..], |o| o);
        if let Err(e) = std::fs::symlink_metadata(std::ffi::OsStr::from_bytes(operand)) {
            report(&format!(
                "cannot access {}: {}",
                messages::quote(operand),
                messages::error_text(&e)
            ));
            return ExitCode::from(1);
        }
    }
    messages::hold();
    let mut screen = match Screen::enter() {
        Ok(s) => s,
        Err(e) => {
            messages::release();
            report(&format!("cannot use the terminal: {}", messages::error_text(&e)));
            return ExitCode::from(1);
        }
    };
    let result = keys_ready().and_then(|()| browse(&mut screen, &settings, scan, apparent));
    drop(screen);
    let held = messages::release();
    for line in &held {
        eprint!("{line}");
    }
    match result {
        Ok(()) if held.is_empty() => ExitCode::SUCCESS,
        Ok(()) => ExitCode::from(1),
        Err(message) => {
            report(&message);
            ExitCode::from(1)
        }
    }
}

/// The terminal's key reader, set up before the scan, and room left for
/// the walk. The reader takes three descriptors of its own once and for
/// all (epoll, a socket pair for SIGWINCH); set up during the scan it raced
/// the walk for them: under `ulimit -n 5` the whole tree was drawn and then
/// left at once, at 6 the walk lost the root to it and showed an empty
/// folder, at 7 every folder but the root waited and failed. The walk goes
/// on with two (a directory and its child) and no fewer. Where either
/// cannot be had, nothing is scanned: one line says why.
fn keys_ready() -> Result<(), String> {
    let limit = || match rustix::process::getrlimit(rustix::process::Resource::Nofile).current {
        Some(n) => format!("ulimit -n is {n}"),
        None => "ulimit -n".into(),
    };
    if let Err(e) = event::poll(Duration::ZERO) {
        return Err(if spare_descriptors(3) {
            format!("cannot read keys from the terminal: {e}")
        } else {
            format!(
                "cannot read keys from the terminal: {e} (too few file descriptors: {})",
                limit()
            )
        });
    }
    if !spare_descriptors(WALK_DESCRIPTORS) {
        return Err(format!(
            "too few file descriptors left to read the tree ({}): fdu -i needs {} beside the terminal's",
            limit(),
            WALK_DESCRIPTORS
        ));
    }
    Ok(())
}

/// Descriptors the walk cannot do without: a directory open, and its child.
const WALK_DESCRIPTORS: usize = 2;

/// Whether `n` more descriptors can be opened now (tried, then closed).
fn spare_descriptors(n: usize) -> bool {
    let held: Vec<_> = (0..n)
        .map_while(|_| rustix::io::fcntl_dupfd_cloexec(rustix::stdio::stderr(), 0).ok())
        .collect();
    held.len() == n
}

/// Scan, then answer keys until `q`. `Err`: why it stopped early.
fn browse(screen: &mut Screen, settings: &Settings, scan: ScanTree, apparent: bool) -> Result<(), String> {
    let root = scan_with_progress(screen, settings, scan)?;
    let mut model = Model::new(root);
    model.show_apparent(apparent);
    let mut actions = Disk { settings, scan };
    loop {
        let size = draw(screen, &mut model)?;
        let key = match event::read().map_err(|e| format!("cannot read the terminal: {e}"))? {
            Event::Key(k) if k.kind != KeyEventKind::Release => match key_of(k) {
                Some(key) => key,
                None => continue,
            },
            // A resize (or anything else) redraws at the new size.
            _ => continue,
        };
        let confirmed =
            matches!(model.dialog, Some(model::Dialog::ConfirmDelete { .. })) && matches!(key, Key::Char('y' | 'Y'));
        let rescan = model.dialog.is_none() && key == Key::Char('r');
        if confirmed || rescan {
            // A rescan or a deletion can take a while: say so first.
            let _ = screen.terminal.draw(|f| {
                let area = f.area();
                f.render_widget(Paragraph::new(" working…"), ratatui::layout::Rect { height: 1, ..area });
            });
        }
        if model.key(key, size, &mut actions) == Outcome::Quit {
            return Ok(());
        }
    }
}

/// Draw the model; how many entries a page shows.
fn draw(screen: &mut Screen, model: &mut Model) -> Result<usize, String> {
    let mut page = 1;
    screen
        .terminal
        .draw(|f| {
            page = draw::page_height(f.area());
            draw::render(model, f);
        })
        .map_err(|e| format!("cannot draw on the terminal: {e}"))?;
    Ok(page)
}

/// The scan on its own thread; this one shows its progress and listens
/// for `q` and Ctrl-C.
fn scan_with_progress(screen: &mut Screen, settings: &Settings, scan: ScanTree) -> Result<Root, String> {
    let progress = Arc::<Progress>::default();
    let owned = (settings.clone(), progress.clone());
    let worker = match std::thread::Builder::new().spawn(move || scan(&owned.0, &owned.1)) {
        Ok(worker) => worker,
        // No thread to spare (`ulimit -u`, a pids cgroup): scan here,
        // without progress and without a key to stop it, as ncdu does.
        Err(_) => {
            draw_progress(screen, settings, &progress, Instant::now())?;
            return scan(settings, &progress).ok_or_else(|| "nothing to show".to_string());
        }
    };
    let started = Instant::now();
    let mut drawn: Option<Instant> = None;
    while !worker.is_finished() {
        if drawn.is_none_or(|at| at.elapsed() >= REDRAW) {
            drawn = Some(Instant::now());
            draw_progress(screen, settings, &progress, started)?;
        }
        // Short waits: the first screen follows the end of the scan by at
        // most this, not by a whole redraw period.
        if event::poll(Duration::from_millis(5)).unwrap_or(false) {
            if let Ok(Event::Key(k)) = event::read() {
                if matches!(key_of(k), Some(Key::Interrupt | Key::Char('q'))) {
                    return Err("interrupted while scanning".into());
                }
            }
        }
    }
    let root = worker.join().map_err(|_| "the scan failed".to_string())?;
    root.ok_or_else(|| "nothing to show".to_string())
}

/// How often the progress of a scan is drawn.
const REDRAW: Duration = Duration::from_millis(100);

fn draw_progress(
    screen: &mut Screen,
    settings: &Settings,
    progress: &Progress,
    started: Instant,
) -> Result<(), String> {
    let elapsed = started.elapsed().as_secs_f64();
    let text = format!(
        "\n  Scanning {}…\n\n  {} entries, {} on disk, {} errors, {elapsed:.1} s\n\n  {}\n\n  q or Ctrl-C: stop",
        draw::printable(settings.operands.first().map_or(&b"."[..], |o| o)),
        progress.entries.load(std::sync::atomic::Ordering::Relaxed),
        draw::human(progress.bytes.load(std::sync::atomic::Ordering::Relaxed)),
        messages::held_count(),
        draw::printable(&progress.current()),
    );
    screen
        .terminal
        .draw(|f| f.render_widget(Paragraph::new(text), f.area()))
        .map(drop)
        .map_err(|e| format!("cannot draw on the terminal: {e}"))
}

fn key_of(k: KeyEvent) -> Option<Key> {
    if k.modifiers.contains(KeyModifiers::CONTROL) {
        return matches!(k.code, KeyCode::Char('c')).then_some(Key::Interrupt);
    }
    Some(match k.code {
        KeyCode::Up => Key::Up,
        KeyCode::Down => Key::Down,
        KeyCode::PageUp => Key::PageUp,
        KeyCode::PageDown => Key::PageDown,
        KeyCode::Home => Key::Home,
        KeyCode::End => Key::End,
        KeyCode::Enter | KeyCode::Right => Key::Open,
        KeyCode::Backspace | KeyCode::Left => Key::Back,
        KeyCode::Esc => Key::Cancel,
        KeyCode::Char(c) => Key::Char(c),
        _ => return None,
    })
}

/// The browser's actions on the real file system.
struct Disk<'a> {
    settings: &'a Settings,
    scan: ScanTree,
}

impl Disk<'_> {
    /// A tree read from an export is shown, not changed: what is on disk
    /// now may not be what the export describes.
    fn imported(&self) -> bool {
        self.settings.input_file.is_some()
    }
}

impl Actions for Disk<'_> {
    fn delete(&mut self, root: &[u8], below: &[u8], name: &[u8]) -> Result<(), String> {
        if self.imported() {
            return Err("A tree read from an export is browsed, not changed: nothing was deleted.".into());
        }
        let mut dir = root.to_vec();
        if !below.is_empty() {
            dir.push(b'/');
            dir.extend_from_slice(below);
        }
        let root = std::path::Path::new(std::ffi::OsStr::from_bytes(root));
        let parent = fnd_walk::remove::open_dir(root, below)
            .map_err(|e| format!("cannot open {}: {}", draw::printable(&dir), messages::error_text(&e)))?;
        let removal = fnd_walk::remove::remove(std::os::fd::AsFd::as_fd(&parent), name);
        if removal.complete() {
            return Ok(());
        }
        let count = removal.failures.len() as u64 + removal.more_failures;
        let mut text = format!("{count} entries could not be deleted:");
        for (path, error) in removal.failures.iter().take(5) {
            let mut full = dir.to_vec();
            full.push(b'/');
            full.extend_from_slice(path);
            text.push_str(&format!(
                "\n{}: {}",
                draw::printable(&full),
                messages::error_text(error)
            ));
        }
        Err(text)
    }

    fn rescan(&mut self, path: &[u8]) -> Option<(TreeNode, Detail)> {
        if self.imported() {
            return None;
        }
        let mut settings = self.settings.clone();
        settings.operands = vec![path.to_vec()];
        settings.files0_from = None;
        let root = (self.scan)(&settings, &Arc::default())?;
        Some((root.node, root.detail))
    }
}
