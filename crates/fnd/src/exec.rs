//! `-x/--exec` and `-X/--exec-batch`: run a command per result, or one
//! command over many results, as fd does. Commands are spawned directly,
//! never through a shell, so arguments reach them byte for byte.
//!
//! Arguments are rendered on the walking thread (a metadata placeholder
//! needs the entry's directory, which only that thread holds open) and sent
//! over a channel to the threads that run the commands, many results to a
//! message ([`Jobs`]): one message per result cost `-X` over a million
//! files a futex wake per result, twice fd's time.

use std::ffi::{OsStr, OsString};
use std::io::{self, Write};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::thread::JoinHandle;

use crossbeam_channel::{Receiver, Sender};
use fnd_output::Writer;

use crate::error::print_error;
use crate::format::Template;
use crate::found::Found;
use crate::paths::{printed_prefix, PathStyle};

/// Long help of `-x/--exec`.
pub const EXEC_HELP: &str = concat!(
    "Execute a command for each search result in parallel (use --threads=1 for sequential command \
     execution). There is no guarantee of the order commands are executed in, and the order should not \
     be depended upon. All positional arguments following --exec are considered to be arguments to the \
     command - not to fnd. It is therefore recommended to place the '-x'/'--exec' option last. Use '\\;' \
     to terminate the command template if you need to continue passing fnd arguments afterwards. \
     Commands are run directly, never through a shell.\n",
    crate::format::placeholder_help!("of the current search result"),
    "\n\nIf no placeholder is present, an implicit \"{}\" at the end is assumed.\n\n",
    "Examples:\n\n  ",
    "- find all *.zip files and unzip them:\n\n      fnd -e zip -x unzip\n\n  ",
    "- find *.h and *.cpp files and run \"clang-format -i ..\" for each of them:\n\n      ",
    "fnd -e h -e cpp -x clang-format -i\n\n  ",
    "- search within `src/` and echo each match (place `-x` last):\n\n      fnd . src -x echo\n\n  ",
    "- Convert all *.jpg files to *.png files:\n\n      fnd -e jpg -x convert {} {.}.png"
);

/// Long help of `-X/--exec-batch`.
pub const EXEC_BATCH_HELP: &str = concat!(
    "Execute the given command once, with all search results as arguments.\n",
    "The order of the arguments is non-deterministic, and should not be relied upon.\n",
    "One argument may hold placeholders. ",
    crate::format::placeholder_help!("of all search results"),
    "\n\nIf no placeholder is present, an implicit \"{}\" at the end is assumed.\n\n",
    "Examples:\n\n  ",
    "- Find all test_*.py files and open them in your favorite editor:\n\n      fnd -g 'test_*.py' -X vim\n\n  ",
    "- Find all *.rs files and count the lines with \"wc -l ...\":\n\n      fnd -e rs -X wc -l"
);

/// The commands of `-x` or `-X`, one per occurrence (`-x a \\; -x b`),
/// checked while the options are parsed, as fd does. clap's derive cannot
/// keep occurrences apart, so these two options are declared by hand.
#[derive(Debug, Default, Clone)]
pub struct ExecArgs {
    pub config: Option<ExecConfig>,
}

impl clap::FromArgMatches for ExecArgs {
    fn from_arg_matches(matches: &clap::ArgMatches) -> Result<Self, clap::Error> {
        let occurrences = |id: &str| -> Option<Vec<Vec<OsString>>> {
            matches
                .get_occurrences::<OsString>(id)
                .map(|occ| occ.map(|args| args.cloned().collect()).collect())
        };
        let config = if let Some(commands) = occurrences("exec") {
            Some(ExecConfig::each(&commands))
        } else {
            occurrences("exec_batch").map(|commands| ExecConfig::batch(&commands))
        };
        let config = config
            .transpose()
            .map_err(|msg| clap::Error::raw(clap::error::ErrorKind::InvalidValue, msg))?;
        Ok(ExecArgs { config })
    }

    fn update_from_arg_matches(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}

impl clap::Args for ExecArgs {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        use clap::{Arg, ArgAction};
        let command_arg = |id: &'static str| {
            Arg::new(id)
                .action(ArgAction::Append)
                .num_args(1..)
                .allow_hyphen_values(true)
                .value_terminator(";")
                .value_name("cmd")
                .value_parser(clap::value_parser!(OsString))
                .conflicts_with("list_details")
        };
        cmd.arg(
            command_arg("exec")
                .long("exec")
                .short('x')
                .help("Execute a command for each search result")
                .long_help(EXEC_HELP),
        )
        .arg(
            command_arg("exec_batch")
                .long("exec-batch")
                .short('X')
                .conflicts_with("exec")
                .help("Execute a command with all search results at once")
                .long_help(EXEC_BATCH_HELP),
        )
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}

/// One command of `-x`/`-X`: its arguments as templates, the program first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandTemplate {
    args: Vec<Template>,
}

impl CommandTemplate {
    /// fd's rules: a command without a placeholder gets `{}` appended; the
    /// program of a batch command must be fixed text, and only one of its
    /// arguments may hold placeholders.
    fn new(args: &[OsString], batch: bool) -> Result<CommandTemplate, String> {
        if args.is_empty() {
            return Err("No executable provided for --exec or --exec-batch".into());
        }
        let mut args: Vec<Template> = args
            .iter()
            .map(|a| Template::parse_bytes(a.as_encoded_bytes()))
            .collect();
        if batch && args[0].has_placeholders() {
            return Err("First argument of --exec-batch must be a fixed executable, not a placeholder".into());
        }
        if !args.iter().any(Template::has_placeholders) {
            args.push(Template::path());
        }
        if batch && args.iter().filter(|a| a.has_placeholders()).count() > 1 {
            return Err("Only one placeholder allowed for batch commands".into());
        }
        Ok(CommandTemplate { args })
    }
}

/// Everything `-x`/`-X` need; shared by every thread.
#[derive(Debug, Clone)]
pub struct ExecConfig {
    batch: bool,
    commands: Vec<CommandTemplate>,
    /// `--batch-size` (0: only the system's limit on argument length).
    pub batch_size: usize,
    /// Threads running `-x` commands; with one, commands write straight to
    /// the terminal, with more, each command's output is kept together.
    pub threads: usize,
    /// Keep every command's output (`-X`'s too) and write it whole
    /// through the executor's [`CommandOutput`], however many threads run
    /// them: a rank of an MPI job sends it to rank 0.
    pub capture: bool,
    /// `./` stripping and `--path-separator`, as for printing.
    pub path_style: PathStyle,
    /// `--print0`: a NUL after each `-x` result's output, as fd writes.
    pub null_separator: bool,
}

impl ExecConfig {
    /// `-x`: one or more commands (`-x a \; -x b`), run for each result.
    pub fn each(commands: &[Vec<OsString>]) -> Result<ExecConfig, String> {
        Self::new(commands, false)
    }

    /// `-X`: one or more commands, each run over as many results as fit.
    pub fn batch(commands: &[Vec<OsString>]) -> Result<ExecConfig, String> {
        Self::new(commands, true)
    }

    /// `-l`: fd's long listing, `ls -l` over the results.
    pub fn list_details(colored: bool) -> ExecConfig {
        let color = if colored { "--color=always" } else { "--color=never" };
        let argv: Vec<OsString> = ["ls", "-l", "-h", "-d", color].iter().map(OsString::from).collect();
        Self::new(&[argv], true).expect("a fixed, valid command")
    }

    fn new(commands: &[Vec<OsString>], batch: bool) -> Result<ExecConfig, String> {
        let commands = commands
            .iter()
            .map(|c| CommandTemplate::new(c, batch))
            .collect::<Result<Vec<_>, _>>()?;
        if commands.is_empty() {
            return Err("No executable provided for --exec or --exec-batch".into());
        }
        let threads = fnd_walk::cores();
        Ok(ExecConfig {
            batch,
            commands,
            batch_size: 0,
            threads,
            capture: false,
            path_style: PathStyle::default(),
            null_separator: false,
        })
    }
}

/// Results a walking thread sends at once, each as its rendered arguments,
/// command after command (`-x`: every command's whole line; `-X`: each
/// command's one argument with placeholders), all in one buffer: rendering
/// a result allocates nothing, and a message carries many results.
#[derive(Default)]
pub struct Jobs {
    bytes: Vec<u8>,
    /// Where each argument ends in `bytes`.
    ends: Vec<usize>,
}

impl Jobs {
    fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The arguments in order; the reader knows how many make one result.
    fn args(&self) -> impl Iterator<Item = &OsStr> {
        let starts = std::iter::once(0).chain(self.ends.iter().copied());
        starts
            .zip(&self.ends)
            .map(|(start, &end)| OsStr::from_bytes(&self.bytes[start..end]))
    }
}

/// Results gathered before a message is sent: `-X` runs one command over
/// thousands, so their arrival can wait for a full message; `-x` runs a
/// command per result, and a few to a message keep every runner busy.
const BATCH_RESULTS: usize = 1024;
const EACH_RESULTS: usize = 8;
/// And at most this many bytes of arguments, so a message stays small.
const MESSAGE_BYTES: usize = 64 * 1024;
/// Messages `-X` lets wait: 64 KiB each, a few MiB in all.
const BATCH_MESSAGES: usize = 64;

/// Where the commands' output goes when it is kept: one result's commands
/// (`-x`), or one batch (`-X`), at a time, whole.
pub trait CommandOutput: Send + Sync {
    /// Each command's stdout and stderr, in the order they ran; with
    /// `nul`, a NUL follows the last stdout (`--print0`, as fd writes it).
    fn write(&self, outputs: &[(Vec<u8>, Vec<u8>)], nul: bool);
}

/// This process's: stdout through the sink's writer, stderr directly.
pub struct LocalOutput(pub Writer);

impl CommandOutput for LocalOutput {
    fn write(&self, outputs: &[(Vec<u8>, Vec<u8>)], nul: bool) {
        // Every runner takes the stderr lock first: holding it keeps one
        // result's output together.
        let mut stderr = io::stderr().lock();
        for (stdout_bytes, stderr_bytes) in outputs {
            self.0.write_all(stdout_bytes);
            let _ = stderr.write_all(stderr_bytes);
        }
        if nul {
            self.0.write_all(b"\0");
        }
    }
}

/// The threads running commands.
pub struct Executor {
    cfg: Arc<ExecConfig>,
    tx: Option<Sender<Jobs>>,
    runners: Vec<JoinHandle<bool>>,
    /// No runner could start: the commands sent, and where their output
    /// goes, for the calling thread to run in `finish`.
    inline: Option<(Receiver<Jobs>, Arc<dyn CommandOutput>)>,
}

impl Executor {
    /// Start the threads that run commands; the output of `-x` commands
    /// run by more than one thread (of every command, with `capture`) goes
    /// to `out`, each result's whole.
    pub fn start(cfg: ExecConfig, out: Arc<dyn CommandOutput>) -> Executor {
        let cfg = Arc::new(cfg);
        // As many runners as walking threads, and never more than the walk
        // itself would start (`-j 100000` must not spawn 100000 threads).
        let runners = if cfg.batch {
            1
        } else {
            cfg.threads.clamp(1, fnd_walk::MAX_THREADS)
        };
        // `-X`: room for about a command line's worth of results (a few
        // MiB), so the walk goes on while a batch runs.
        let queued = if cfg.batch { BATCH_MESSAGES } else { 4 * runners };
        let (tx, rx) = crossbeam_channel::bounded::<Jobs>(queued);
        let runners: Vec<_> = (0..runners)
            .map_while(|_| {
                let (cfg, rx, out) = (cfg.clone(), rx.clone(), out.clone());
                std::thread::Builder::new()
                    .spawn(move || {
                        if cfg.batch {
                            run_batches(&cfg, rx, &*out)
                        } else {
                            run_each(&cfg, rx, &*out)
                        }
                    })
                    .ok()
            })
            .collect();
        // Fewer runners only run commands more slowly. With none (`ulimit
        // -u`, a pids cgroup), the commands wait, unbounded, and run on the
        // calling thread once the walk is over.
        let (tx, inline) = if runners.is_empty() {
            let (tx, rx) = crossbeam_channel::unbounded::<Jobs>();
            (tx, Some((rx, out)))
        } else {
            (tx, None)
        };
        Executor {
            cfg,
            tx: Some(tx),
            runners,
            inline,
        }
    }

    /// A sender for one walking thread.
    pub fn sender(&self) -> ExecSender {
        let cfg = self.cfg.clone();
        let results_per_message = if cfg.batch { BATCH_RESULTS } else { EACH_RESULTS };
        ExecSender {
            cfg,
            tx: self.tx.clone().expect("executor running"),
            scratch: Vec::new(),
            pending: Jobs::default(),
            results: 0,
            results_per_message,
        }
    }

    /// Wait for every command; false if any failed or could not run.
    pub fn finish(mut self) -> bool {
        drop(self.tx.take());
        if let Some((rx, out)) = self.inline.take() {
            return if self.cfg.batch {
                run_batches(&self.cfg, rx, &*out)
            } else {
                run_each(&self.cfg, rx, &*out)
            };
        }
        let mut ok = true;
        for runner in self.runners.drain(..) {
            ok &= runner.join().unwrap_or(false);
        }
        ok
    }
}

/// A walking thread's end of the channel.
pub struct ExecSender {
    cfg: Arc<ExecConfig>,
    tx: Sender<Jobs>,
    scratch: Vec<u8>,
    /// Results not sent yet, and how many.
    pending: Jobs,
    results: usize,
    results_per_message: usize,
}

impl ExecSender {
    /// Hand over one result of a chunk whose prefix is `chunk_prefix`.
    pub fn entry(&mut self, entry: &impl Found, chunk_prefix: &[u8]) -> bool {
        let sep = self.cfg.path_style.separator.as_deref();
        let prefix = printed_prefix(
            &self.cfg.path_style,
            chunk_prefix,
            entry.name_bytes(),
            &mut self.scratch,
        );
        let jobs = &mut self.pending;
        for command in &self.cfg.commands {
            for arg in &command.args {
                if self.cfg.batch && !arg.has_placeholders() {
                    continue;
                }
                arg.render(entry, prefix, sep, &mut jobs.bytes);
                jobs.ends.push(jobs.bytes.len());
            }
        }
        self.results += 1;
        if self.results >= self.results_per_message || jobs.bytes.len() >= MESSAGE_BYTES {
            return self.send();
        }
        true
    }

    /// Send what is pending; false when no runner is left to take it.
    pub fn send(&mut self) -> bool {
        if self.pending.is_empty() {
            return true;
        }
        self.results = 0;
        // The next message will be about as big: no regrowing from empty.
        let next = Jobs {
            bytes: Vec::with_capacity(self.pending.bytes.len()),
            ends: Vec::with_capacity(self.pending.ends.len()),
        };
        let job = std::mem::replace(&mut self.pending, next);
        match self.tx.try_send(job) {
            Ok(()) => true,
            Err(crossbeam_channel::TrySendError::Full(job)) => {
                // Waiting for the commands is not the disk being slow: the
                // walk must not add readers for it.
                fnd_walk::waited_elsewhere();
                self.tx.send(job).is_ok()
            }
            Err(crossbeam_channel::TrySendError::Disconnected(_)) => false,
        }
    }
}

impl Drop for ExecSender {
    /// A walking thread's last results go out when it is done.
    fn drop(&mut self) {
        self.send();
    }
}

/// fd's messages for a command that could not run.
fn report_spawn_error(program: Option<&OsStr>, err: &io::Error) {
    match program {
        Some(p) if err.kind() == io::ErrorKind::NotFound => {
            print_error(format_args!("Command not found: {}", p.to_string_lossy()));
        }
        _ => print_error(format_args!("Problem while executing command: {err}")),
    }
}

fn run_each(cfg: &ExecConfig, rx: Receiver<Jobs>, out: &dyn CommandOutput) -> bool {
    let buffered = cfg.threads > 1 || cfg.capture;
    let lens: Vec<usize> = cfg.commands.iter().map(|c| c.args.len()).collect();
    let per_result: usize = lens.iter().sum();
    let mut ok = true;
    for jobs in rx {
        let mut argv: Vec<&OsStr> = Vec::with_capacity(per_result);
        let mut args = jobs.args();
        loop {
            argv.clear();
            argv.extend(args.by_ref().take(per_result));
            if argv.len() < per_result {
                break;
            }
            let mut commands = Vec::with_capacity(lens.len());
            let mut rest = &argv[..];
            for &n in &lens {
                let (command, after) = rest.split_at(n);
                commands.push(command);
                rest = after;
            }
            ok &= run_commands(&commands, buffered, cfg.null_separator, out);
        }
    }
    ok
}

/// Run one result's commands in order, stopping at the first that fails;
/// their output is written together, after the last.
fn run_commands(commands: &[&[&OsStr]], buffered: bool, null_separator: bool, out: &dyn CommandOutput) -> bool {
    let mut outputs = Vec::new();
    let mut ok = true;
    for argv in commands {
        let mut cmd = Command::new(argv[0]);
        cmd.args(&argv[1..]);
        if buffered {
            cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        } else {
            // One runner: the command talks to the terminal directly.
            cmd.stdin(Stdio::inherit());
        }
        let result = fnd_walk::when_descriptors_free(|| cmd.spawn()).and_then(|c| c.wait_with_output());
        match result {
            Ok(output) => {
                let success = output.status.code() == Some(0);
                outputs.push((output.stdout, output.stderr));
                if !success {
                    ok = false;
                    break;
                }
            }
            Err(e) => {
                write_outputs(&outputs, null_separator, out);
                report_spawn_error(Some(argv[0]), &e);
                return false;
            }
        }
    }
    write_outputs(&outputs, null_separator, out);
    ok
}

/// One result's commands' output, in order, to `out`. Once output is
/// gone the rest is dropped, and the commands' exit statuses alone decide
/// fnd's, as in fd.
fn write_outputs(outputs: &[(Vec<u8>, Vec<u8>)], null_separator: bool, out: &dyn CommandOutput) {
    if outputs.iter().all(|(o, e)| o.is_empty() && e.is_empty()) && !null_separator {
        return;
    }
    out.write(outputs, null_separator);
}

/// One batch command being filled.
struct Batch {
    /// The program and the arguments before the one with placeholders.
    pre: Vec<OsString>,
    /// The arguments after it.
    post: Vec<OsString>,
    cmd: argmax::Command,
    count: usize,
    limit: usize,
    /// Keep each run's output and write it through the executor's output.
    capture: bool,
}

impl Batch {
    fn new(template: &CommandTemplate, limit: usize, capture: bool) -> io::Result<Batch> {
        let slot = template
            .args
            .iter()
            .position(Template::has_placeholders)
            .expect("one placeholder");
        let fixed = |range: std::ops::Range<usize>| -> Vec<OsString> {
            template.args[range]
                .iter()
                .map(|t| {
                    let mut out = Vec::new();
                    t.render_parts(b"", b"", None, &mut out);
                    OsString::from_vec(out)
                })
                .collect()
        };
        let (pre, post) = (fixed(0..slot), fixed(slot + 1..template.args.len()));
        let cmd = Self::command(&pre)?;
        Ok(Batch {
            pre,
            post,
            cmd,
            count: 0,
            limit,
            capture,
        })
    }

    fn command(pre: &[OsString]) -> io::Result<argmax::Command> {
        let mut cmd = argmax::Command::new(&pre[0]);
        cmd.stdin(Stdio::inherit())
            .stdout(Stdio::inherit())
            .stderr(Stdio::inherit());
        cmd.try_args(&pre[1..])?;
        Ok(cmd)
    }

    fn push(&mut self, arg: &OsStr, running: &mut Running, out: &dyn CommandOutput) -> io::Result<()> {
        if self.limit > 0 && self.count >= self.limit {
            self.run(running, out)?;
        }
        if !self
            .cmd
            .args_would_fit(std::iter::once(arg).chain(self.post.iter().map(OsString::as_os_str)))
        {
            self.run(running, out)?;
        }
        self.cmd.try_arg(arg)?;
        self.count += 1;
        Ok(())
    }

    /// Start the command over the arguments gathered, once the one
    /// `running` has ended: gathering the next batch goes on while it runs,
    /// and no two run at once (their output stays apart, as fd's).
    fn run(&mut self, running: &mut Running, out: &dyn CommandOutput) -> io::Result<()> {
        if self.count > 0 {
            self.cmd.try_args(&self.post)?;
            running.wait();
            if self.capture {
                self.cmd
                    .stdin(Stdio::null())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped());
                let output = fnd_walk::when_descriptors_free(|| self.cmd.spawn())?.wait_with_output()?;
                write_outputs(&[(output.stdout, output.stderr)], false, out);
                running.failed |= !output.status.success();
            } else {
                running.child = Some(fnd_walk::when_descriptors_free(|| self.cmd.spawn())?);
            }
            self.cmd = Self::command(&self.pre)?;
            self.count = 0;
        }
        Ok(())
    }
}

/// The batch command started last, not yet waited for.
#[derive(Default)]
struct Running {
    child: Option<std::process::Child>,
    /// A command ended unsuccessfully (or could not be waited for).
    failed: bool,
}

impl Running {
    fn wait(&mut self) {
        if let Some(mut child) = self.child.take() {
            self.failed |= !child.wait().is_ok_and(|status| status.success());
        }
    }
}

fn run_batches(cfg: &ExecConfig, rx: Receiver<Jobs>, out: &dyn CommandOutput) -> bool {
    let mut batches = Vec::new();
    for c in &cfg.commands {
        match Batch::new(c, cfg.batch_size, cfg.capture) {
            Ok(b) => batches.push(b),
            Err(e) => {
                report_spawn_error(None, &e);
                rx.iter().for_each(drop);
                return false;
            }
        }
    }
    let mut running = Running::default();
    let fail = |b: &Batch, e: io::Error, rx: &Receiver<Jobs>, running: &mut Running| {
        running.wait();
        report_spawn_error(Some(&b.pre[0]), &e);
        // Keep the walk from blocking on a channel nobody reads.
        rx.iter().for_each(drop);
        false
    };
    // Each result brings one argument for each command, in order.
    for jobs in rx.iter() {
        for (i, arg) in jobs.args().enumerate() {
            let batch = &mut batches[i % cfg.commands.len()];
            if let Err(e) = batch.push(arg, &mut running, out) {
                return fail(batch, e, &rx, &mut running);
            }
        }
    }
    for batch in &mut batches {
        if let Err(e) = batch.run(&mut running, out) {
            return fail(batch, e, &rx, &mut running);
        }
    }
    running.wait();
    !running.failed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn validates_like_fd() {
        assert!(ExecConfig::each(&[args(&["{}"])]).is_ok());
        let err = ExecConfig::batch(&[args(&["{}"])]).err().unwrap();
        assert_eq!(
            err,
            "First argument of --exec-batch must be a fixed executable, not a placeholder"
        );
        let err = ExecConfig::batch(&[args(&["echo", "{}", "{/}"])]).err().unwrap();
        assert_eq!(err, "Only one placeholder allowed for batch commands");
        assert!(ExecConfig::batch(&[args(&["echo", "{}", "{{}}"])]).is_ok());
    }

    #[test]
    fn appends_a_path_when_there_is_no_placeholder() {
        let cfg = ExecConfig::each(&[args(&["echo", "a"])]).unwrap();
        assert_eq!(cfg.commands[0].args.len(), 3);
        assert_eq!(cfg.commands[0].args[2], Template::path());
    }
}
