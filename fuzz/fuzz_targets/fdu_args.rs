//! fdu's command line as du's `getopt_long` reads it: whatever the
//! arguments, getopt's message or a command line spelled out in full,
//! never a panic; and what is spelled out reads again as itself. Run with
//! `cargo +nightly fuzz run fdu_args`.
#![no_main]

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let args: Vec<OsString> = std::iter::once(&b"fdu"[..])
        .chain(data.split(|&b| b == 0))
        .map(|a| OsString::from_vec(a.to_vec()))
        .collect();
    if let Ok(once) = fdu::cli::normalize(&args) {
        let twice = fdu::cli::normalize(&once.args).expect("a spelled-out command line reads again");
        assert_eq!(twice.args, once.args, "spelling out changed a spelled-out command line");
    }
});
