//! Terminal escaping of names: whatever the bytes, what reaches a terminal
//! is UTF-8 with no control character but tab. Run with
//! `cargo +nightly fuzz run escape`.
#![no_main]

use libfuzzer_sys::fuzz_target;

use fnd::escape;

fuzz_target!(|name: &[u8]| {
    let mut out = Vec::new();
    escape::push_escaped(name, &mut out);
    let text = std::str::from_utf8(&out).expect("escaped output is UTF-8");
    assert!(
        text.chars().all(|c| c == '\t' || !c.is_control()),
        "a control character got through: {text:?}"
    );
});
