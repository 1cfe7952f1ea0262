//! The messages between fdu's ranks under MPI (`fdu::wire`): whatever the
//! bytes, each decoder returns a message or an error (never a panic, never
//! an allocation larger than the input allows), and a decoded message
//! encodes back to the same bytes. Run with `cargo +nightly fuzz run
//! fdu_ranks`.
#![no_main]

use libfuzzer_sys::fuzz_target;

use fdu::wire::{
    decode_indexes, decode_operands, decode_roots, encode_indexes, encode_operands, encode_roots, Adopted, Claim,
    RankEnd, Subtotal, Totals,
};

fuzz_target!(|data: &[u8]| {
    let Some((&kind, bytes)) = data.split_first() else {
        return;
    };
    match kind % 8 {
        0 => {
            if let Ok(m) = Adopted::decode(bytes) {
                assert_eq!(m.encode(), bytes, "a handover encodes back differently");
            }
        }
        1 => {
            if let Ok(m) = Subtotal::decode(bytes) {
                let tree = m.tree.map(|(name, kids)| (name, kids.into_node(0)));
                let again = Subtotal::encode(m.id, m.total, tree.as_ref().map(|(n, t)| (&n[..], t)));
                assert_eq!(again, bytes, "a subtotal encodes back differently");
            }
        }
        2 => {
            if let Ok(claims) = Claim::decode_all(bytes) {
                assert_eq!(Claim::encode_all(&claims), bytes, "claims encode back differently");
            }
        }
        3 => {
            if let Ok(indexes) = decode_indexes(bytes) {
                assert_eq!(encode_indexes(&indexes), bytes, "verdicts encode back differently");
            }
        }
        6 => {
            if let Ok(read) = decode_operands(bytes) {
                assert_eq!(
                    encode_operands(read.as_ref()),
                    bytes,
                    "operands encode back differently"
                );
            }
        }
        5 => {
            if let Ok(roots) = decode_roots(bytes) {
                assert_eq!(encode_roots(&roots), bytes, "trees encode back differently");
            }
        }
        4 => {
            if let Ok(m) = RankEnd::decode(bytes) {
                assert_eq!(m.encode(), bytes, "a rank's end encodes back differently");
            }
        }
        _ => {
            if let Ok(m) = Totals::decode(bytes) {
                assert_eq!(m.encode(), bytes, "a rank's totals encode back differently");
            }
        }
    }
});
