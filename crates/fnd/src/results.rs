//! Where results go: printed (plain, coloured, `--format`) or handed to
//! commands (`-x`, `-X`, `-l`). The search calls one [`ResultWriter`] per
//! thread and does not care which.

use std::io::IsTerminal;

use fnd_output::{Buffer, Writer};
use fnd_walk::EntryRef;

use crate::cli::Cli;
use crate::color::Colors;
use crate::config::Config;
use crate::exec::{ExecConfig, ExecSender, Executor};
use crate::format::Template;
use crate::hyperlink::Hyperlinks;
use crate::listing::{Listing, ListingConfig};

/// The results' destination, for the whole run.
pub struct Sink {
    stdout: Writer,
    target: Target,
}

// One per run: the size of the larger variant does not matter.
#[allow(clippy::large_enum_variant)]
enum Target {
    Print(ListingConfig),
    Exec(Executor),
}

impl Sink {
    /// From the options: `-x`/`-X`/`-l` run commands, anything else prints.
    pub fn from_cli(cli: &Cli, cfg: &Config) -> Sink {
        let terminal = std::io::stdout().is_terminal();
        let colored = cli.color.enabled(terminal);
        let exec = if let Some(exec) = &cli.commands.config {
            Some(exec.clone())
        } else if cli.list_details {
            Some(ExecConfig::list_details(colored))
        } else {
            None
        };
        let target = match exec {
            Some(mut exec) => {
                exec.batch_size = cli.batch_size;
                if cfg.threads > 0 {
                    exec.threads = cfg.threads;
                }
                exec.null_separator = cfg.null_separator;
                exec.path_style = cfg.path_style.clone();
                Target::Exec(Executor::start(exec))
            }
            None => Target::Print(ListingConfig {
                terminator: if cfg.null_separator { b'\0' } else { b'\n' },
                path_style: cfg.path_style.clone(),
                // fd prints --format output uncoloured.
                colors: (colored && cli.format.is_none()).then(Colors::from_env),
                hyperlinks: cli.hyperlink.enabled(colored).then(Hyperlinks::new),
                escape: terminal,
                format: cli.format.as_deref().map(Template::parse),
            }),
        };
        if let Target::Print(cfg) = &target {
            if terminal && (cfg.colors.is_some() || cfg.hyperlinks.is_some()) {
                crate::color::reset_terminal_on_interrupt();
            }
        }
        Sink {
            stdout: Writer::stdout(),
            target,
        }
    }

    /// Whether results feed a command (which keeps `./` prefixes, as in fd).
    pub fn cli_has_command(cli: &Cli) -> bool {
        cli.commands.config.is_some() || cli.list_details
    }

    /// A writer for one walking thread.
    pub fn writer(&self) -> ResultWriter<'_> {
        match &self.target {
            Target::Print(cfg) => ResultWriter::Print(Listing::new(cfg, Buffer::new(self.stdout.clone()))),
            Target::Exec(exec) => ResultWriter::Exec(exec.sender()),
        }
    }

    pub fn stdout(&self) -> &Writer {
        &self.stdout
    }

    /// Wait for the commands; false when one failed or could not run.
    pub fn finish(self) -> bool {
        match self.target {
            Target::Print(_) => true,
            Target::Exec(exec) => exec.finish(),
        }
    }
}

/// One thread's way out for results.
// One per worker thread; boxing the listing would cost an indirection per result.
#[allow(clippy::large_enum_variant)]
pub enum ResultWriter<'a> {
    Print(Listing<'a>),
    Exec(ExecSender),
}

impl ResultWriter<'_> {
    /// One result of a chunk whose prefix is `prefix`; false when the walk
    /// should stop (output closed).
    #[inline]
    pub fn entry(&mut self, entry: &EntryRef<'_>, prefix: &[u8]) -> bool {
        match self {
            ResultWriter::Print(listing) => listing.entry(entry, prefix),
            ResultWriter::Exec(sender) => sender.entry(entry, prefix),
        }
    }

    /// Write out what is buffered (before an error message, say).
    pub fn flush(&mut self) -> bool {
        match self {
            ResultWriter::Print(listing) => listing.flush(),
            ResultWriter::Exec(_) => true,
        }
    }
}
