//! Where rank 0's output really goes.
//!
//! Open MPI's `mpirun` gives every rank a pseudo-terminal as its stdout
//! and copies what arrives there to its own stdout, through its daemon.
//! Two consequences:
//! - that copy is slow: measured on the 2-core development machine, 81 MB
//!   took 1.4-1.7 s through `mpirun -n 1 cat` (0.02 s for `cat` alone),
//!   and the 159 MB `fnd -u` prints for the million-entry tree took 7-20 s
//!   (1.6 s without `mpirun`), more than the walk itself;
//! - `isatty(1)` is true on every rank, whatever `mpirun`'s own stdout is:
//!   a program cannot tell a terminal from a file by it.
//!
//! So a rank whose parent is the launcher itself (the ranks `mpirun`
//! starts on its own node; rank 0 is one of them unless told otherwise)
//! takes over the launcher's stdout and stderr ([`adopt_launcher_output`]):
//! the very same open files, duplicated with `pidfd_getfd(2)`, as if it
//! had inherited them, so offsets, appending, pipes and terminals behave
//! as for any program the shell starts. Where the kernel refuses that
//! (Yama's `ptrace_scope` 1, say), a pipe, FIFO or character device
//! (`/dev/null`, a terminal) is opened again through `/proc`, which has no
//! offset to share; a regular file is then left to the launcher's copy.
//! `FND_MPI_DIRECT_OUTPUT=0` keeps the launcher's copy in every case.

use std::os::fd::{AsFd, OwnedFd};
use std::sync::OnceLock;

use rustix::fs::{Mode, OFlags};
use rustix::process::{Pid, PidfdFlags, PidfdGetfdFlags};

/// Programs whose children's stdout goes through a pseudo-terminal:
/// Open MPI's launcher under its names (`mpirun` and `mpiexec` are links
/// to `orterun` in Open MPI 4, to `prterun` in 5).
const LAUNCHERS: [&str; 5] = ["mpirun", "mpiexec", "orterun", "prterun", "prte"];

/// Which of the launcher's streams this process writes to directly now.
#[derive(Clone, Copy, Debug, Default)]
struct Adopted {
    /// Stdout is the launcher's own.
    stdout: bool,
    /// Stderr is the launcher's own.
    stderr: bool,
}

/// What [`adopt_launcher_output`] took, once it ran.
static ADOPTED: OnceLock<Adopted> = OnceLock::new();

/// Make this process's stdout and stderr the launcher's own, when its
/// parent is Open MPI's launcher and the kernel allows (see the module
/// doc). Call it before any thread writes to either. Harmless anywhere
/// else: nothing changes. What it took, [`stdout_is_terminal`] and
/// [`stderr_is_terminal`] take into account.
pub fn adopt_launcher_output() {
    let _ = ADOPTED.set(adopt());
}

/// Whether stdout is a terminal the user looks at: not the
/// pseudo-terminal Open MPI gives each task, unless
/// [`adopt_launcher_output`] made stdout the launcher's own.
pub fn stdout_is_terminal() -> bool {
    is_terminal(rustix::stdio::stdout(), ADOPTED.get().is_some_and(|a| a.stdout))
}

/// [`stdout_is_terminal`] for stderr.
pub fn stderr_is_terminal() -> bool {
    is_terminal(rustix::stdio::stderr(), ADOPTED.get().is_some_and(|a| a.stderr))
}

fn adopt() -> Adopted {
    if std::env::var_os("FND_MPI_DIRECT_OUTPUT").is_some_and(|v| v == "0") {
        return Adopted::default();
    }
    let Some(parent) = rustix::process::getppid() else {
        return Adopted::default();
    };
    // The pidfd pins the process: the name read after it is the one whose
    // files are taken.
    let Ok(pidfd) = rustix::process::pidfd_open(parent, PidfdFlags::empty()) else {
        return Adopted::default();
    };
    if !is_launcher(parent) {
        return Adopted::default();
    }
    let take = |fd: i32| -> Option<OwnedFd> {
        match rustix::process::pidfd_getfd(&pidfd, fd, PidfdGetfdFlags::empty()) {
            Ok(file) => Some(file),
            Err(_) => reopen(parent, fd),
        }
    };
    let stdout = take(1).is_some_and(|f| rustix::stdio::dup2_stdout(f.as_fd()).is_ok());
    let stderr = take(2).is_some_and(|f| rustix::stdio::dup2_stderr(f.as_fd()).is_ok());
    Adopted { stdout, stderr }
}

fn is_launcher(pid: Pid) -> bool {
    let comm = std::fs::read(format!("/proc/{}/comm", pid.as_raw_nonzero())).unwrap_or_default();
    let name = String::from_utf8_lossy(&comm);
    LAUNCHERS.contains(&name.trim_end())
}

/// The launcher's file `fd` opened again, when that is the same as sharing
/// it: a pipe, FIFO or character device, which have no offset.
fn reopen(pid: Pid, fd: i32) -> Option<OwnedFd> {
    let path = format!("/proc/{}/fd/{fd}", pid.as_raw_nonzero());
    let st = rustix::fs::stat(&path).ok()?;
    let kind = rustix::fs::FileType::from_raw_mode(st.st_mode);
    if !matches!(kind, rustix::fs::FileType::Fifo | rustix::fs::FileType::CharacterDevice) {
        return None;
    }
    let flags = OFlags::WRONLY | OFlags::CLOEXEC | OFlags::NOCTTY | OFlags::APPEND;
    rustix::fs::open(&path, flags, Mode::empty()).ok()
}

/// Whether `fd` (stdout, stderr) is a terminal the user looks at: false
/// for the pseudo-terminal Open MPI gives each rank (the process runs
/// under Open MPI and the stream was not adopted), whatever is behind it.
fn is_terminal(fd: impl AsFd, adopted: bool) -> bool {
    rustix::termios::isatty(fd) && (adopted || !under_open_mpi())
}

/// Whether Open MPI's launcher started this process (as one task or
/// several): then its stdout and stderr are Open MPI's pseudo-terminal.
pub(crate) fn under_open_mpi() -> bool {
    std::env::var_os("OMPI_COMM_WORLD_SIZE").is_some()
}
