//! The reader of `fdu -f` (ncdu's export format) and du's lines printed
//! from what it read: whatever the bytes, an error or a result, never a
//! panic; and the three measures read the same entries. Run with
//! `cargo +nightly fuzz run ncdu_json`.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;

use fdu::cli::{parse, Parsed};
use fdu::output::Output;
use fdu::run::Run;
use fdu::settings::{Measure, Settings};

/// `-a -c` with a time column: every line du's options can ask for.
fn settings() -> &'static Settings {
    static SETTINGS: OnceLock<Settings> = OnceLock::new();
    SETTINGS.get_or_init(|| {
        let args = ["fdu", "-a", "-c", "--time", "--no-progress"].map(Into::into).to_vec();
        match parse(args) {
            Ok(Parsed::Run(settings)) => *settings,
            _ => panic!("the fuzz target's own options parse"),
        }
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(disk) = fdu::ncdu::read(data, Measure::Disk) else {
        assert!(
            fdu::ncdu::read(data, Measure::Inodes).is_err(),
            "a measure changed what reads"
        );
        return;
    };
    let inodes = fdu::ncdu::read(data, Measure::Inodes).expect("what reads with one measure reads with all");
    assert_eq!(disk.len(), inodes.len());
    let null = std::fs::File::create("/dev/null").expect("/dev/null");
    let run = Run::new(settings().clone(), Output::to(fnd_output::Writer::new(null.into())));
    disk.replay(&run);
    run.out.finish();
});
