mod cli;
mod output;

use std::os::unix::ffi::OsStrExt;
use std::process::ExitCode;

use clap::Parser;
use fnd_walk::{Chunk, Flow, Order, Visitor, WalkBuilder};

use cli::{Cli, OrderArg};
use output::{Buffer, Stdout};

/// Writes each entry's path, a `/` after directories, one per line.
struct Printer<'a> {
    out: Buffer<'a>,
    strip_dot_slash: bool,
}

impl Visitor for Printer<'_> {
    fn visit(&mut self, chunk: &mut Chunk) -> Flow {
        let prefix = chunk.prefix();
        let prefix = if self.strip_dot_slash && prefix.starts_with(b"./") { &prefix[2..] } else { prefix };
        for entry in chunk.iter() {
            let buf = self.out.bytes();
            buf.extend_from_slice(prefix);
            buf.extend_from_slice(entry.name_bytes());
            if entry.file_type().is_dir() {
                buf.push(b'/');
            }
            buf.push(b'\n');
            if !self.out.end_record() {
                return Flow::Stop;
            }
        }
        Flow::Continue
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let default_root = cli.paths.is_empty();
    let roots = if default_root { vec![std::path::PathBuf::from(".")] } else { cli.paths.clone() };
    let mut builder = WalkBuilder::new(&roots[0]);
    for r in &roots[1..] {
        builder = builder.add_root(r);
    }
    let order = match cli.order {
        OrderArg::Bfs => Order::BreadthFirst,
        OrderArg::Dfs => Order::DepthFirst,
        OrderArg::Parallel => Order::Parallel,
    };
    let hidden = cli.hidden || cli.unrestricted > 0;
    builder = builder.order(order).threads(cli.threads.unwrap_or(0)).min_depth(1).skip_hidden(!hidden);
    let stdout = Stdout::new();
    builder.visit(|| Printer { out: Buffer::new(&stdout), strip_dot_slash: default_root }, drop);
    let _ = std::path::Path::new(".").as_os_str().as_bytes();
    if stdout.failure().is_some() {
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}
