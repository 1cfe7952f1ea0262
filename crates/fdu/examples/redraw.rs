//! How long `fdu -i` takes to answer a key in a folder of many entries:
//! the model's work and a full draw into ratatui's test backend (what a
//! terminal then receives is only the cells that changed). Run by
//! `bench/browse.sh`; by hand: `cargo run --release -p fdu --example redraw [ENTRIES]`.

use std::time::{Duration, Instant};

use fdu::browse::draw::render;
use fdu::browse::model::{Actions, Key, Model};
use fdu::tree::{Detail, Root, TreeBuilder, TreeNode};
use ratatui::backend::TestBackend;
use ratatui::Terminal;

struct NoDisk;

impl Actions for NoDisk {
    fn delete(&mut self, _: &[u8], _: &[u8], _: &[u8]) -> Result<(), String> {
        Err("not here".into())
    }
    fn rescan(&mut self, _: &[u8]) -> Option<(TreeNode, Detail)> {
        None
    }
}

fn folder(entries: u64) -> Model {
    let mut kids = TreeBuilder::default();
    let mut total = 4096;
    for i in 0..entries {
        // Sizes and times that do not come in name order.
        let size = (i * 7919) % 1_000_003 * 512;
        kids.detailed_leaf(
            format!("file-{i:07}.dat").as_bytes(),
            size,
            Detail::new(size, (i * 31) as i64, 0),
        );
        total += size;
    }
    let (node, detail) = kids.into_detailed_node(total, Detail::new(4096, 0, Detail::DIR));
    let mut root = Root::new(b"/big", node);
    root.detail = detail;
    Model::new(root)
}

fn main() {
    let entries: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(100_000);
    let mut model = folder(entries);
    let mut terminal = Terminal::new(TestBackend::new(160, 50)).expect("a test terminal");
    terminal.draw(|f| render(&mut model, f)).expect("draw");
    let keys = [
        ("down", Key::Down),
        ("page down", Key::PageDown),
        ("end", Key::End),
        ("sort by name", Key::Char('n')),
        ("sort by size", Key::Char('s')),
        ("apparent sizes", Key::Char('a')),
        ("sort by mtime", Key::Char('M')),
    ];
    println!("{entries} entries in one folder, 160x50 cells; per key: median, worst of 21");
    for (what, key) in keys {
        let mut times: Vec<Duration> = (0..21)
            .map(|_| {
                let start = Instant::now();
                model.key(key, 47, &mut NoDisk);
                terminal.draw(|f| render(&mut model, f)).expect("draw");
                start.elapsed()
            })
            .collect();
        times.sort();
        println!(
            "{what:>16}: {:>8.2} ms  {:>8.2} ms",
            times[10].as_secs_f64() * 1e3,
            times[20].as_secs_f64() * 1e3
        );
    }
}
