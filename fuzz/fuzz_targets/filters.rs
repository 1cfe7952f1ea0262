//! The values of `-S/--size`, `--changed-within/--changed-before` and
//! `-o/--owner`: any text parses or is refused, never a panic, and a size
//! that parses means what it says. Run with `cargo +nightly fuzz run filters`.
#![no_main]

use fnd::filter::{OwnerFilter, SizeLimit, TimeLimit};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: (&str, u64)| {
    let (text, size) = input;
    if let Ok(limit) = SizeLimit::parse(text) {
        let bound = match limit {
            SizeLimit::Min(b) | SizeLimit::Max(b) | SizeLimit::Equals(b) => b,
        };
        assert!(limit.allows(bound), "{text}: its own bound must pass");
        let _ = limit.allows(size);
    }
    let _ = TimeLimit::parse_time(text);
    if let Ok(owner) = OwnerFilter::parse(text) {
        let _ = owner.active();
    }
});
