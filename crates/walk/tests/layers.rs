//! The library's modules form layers: every `use crate::…` points to a
//! lower one (see the crate's README, "Inside").

use std::path::Path;

#[test]
fn modules_import_only_downwards() {
    fnd_test_support::layers::assert_layered(
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/src")),
        &[
            // System calls: what the kernel says.
            &["error", "dirent", "mounts", "open"],
            &["meta", "remove"],
            // The filter contract.
            &["filter"],
            // Descriptors and their budget.
            &["budget"],
            &["dir"],
            // What a visitor is handed, and what a walk is: the contracts
            // the reader and every scheduler are written against.
            &["entry"],
            &["visit", "settings"],
            // Reading one directory.
            &["io", "split"],
            &["read"],
            // Who reads what next.
            &["schedule"],
            &["ordered"],
            // The public face.
            &["hooks", "ignore"],
            &["builder"],
            &["iter", "walker"],
            &["ranks", "fuzzing"],
        ],
    );
}
