//! The parsers behind `fdu --by` and `fdu --diff`: the list of keys, a
//! table of groups from another rank, and saved scans (ncdu's exports,
//! `--json` trees) read entry by entry. Whatever the bytes: an error or a
//! result, never a panic; a scan that reads closes every directory it
//! opens, and (ncdu's) reads the same with every measure. Run with
//! `cargo +nightly fuzz run reports`.
#![no_main]

use libfuzzer_sys::fuzz_target;

use fdu::exports::{read, Entry, Input, Sink};
use fdu::groups::{parse_keys, Table};
use fdu::settings::{GroupKey, Measure};

#[derive(Default)]
struct Check {
    open: Vec<usize>,
    entries: usize,
}

impl Sink for Check {
    fn entry(&mut self, e: &Entry<'_>) -> Result<(), String> {
        assert_eq!(
            e.depth,
            self.open.len(),
            "an entry at the depth of the directories open"
        );
        self.entries += 1;
        if e.is_dir {
            self.open.push(e.depth);
        }
        Ok(())
    }

    fn close(&mut self, depth: usize) -> Result<(), String> {
        assert_eq!(self.open.pop(), Some(depth), "a directory closes where it opened");
        Ok(())
    }
}

fuzz_target!(|data: &[u8]| {
    if let Ok(keys) = parse_keys(&String::from_utf8_lossy(data)) {
        assert!(!keys.is_empty() && keys.len() <= 5);
    }
    let keys = [GroupKey::User, GroupKey::Ext, GroupKey::Age];
    if let Ok(table) = Table::decode(&keys, data) {
        let again = Table::decode(&keys, &table.encode()).expect("a table reads back");
        assert_eq!(again.len(), table.len());
    }
    let input = Input::bytes(data.to_vec());
    let mut disk = Check::default();
    let first = read(&input, Measure::Disk, &mut disk);
    let mut inodes = Check::default();
    let second = read(&input, Measure::Inodes, &mut inodes);
    // A `--json` tree is of one measure; an export in ncdu's format, of all.
    let json = data.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{');
    if !json {
        assert_eq!(first.is_ok(), second.is_ok(), "a measure changed what reads");
    }
    if first.is_ok() && second.is_ok() {
        assert!(disk.open.is_empty(), "every directory closed");
        assert_eq!(disk.entries, inodes.entries);
    }
});
