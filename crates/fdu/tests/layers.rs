//! fdu's modules import only downwards: plain settings and the tree model
//! at the bottom, the faces (command line, views, JSON) over the
//! formatting, the per-directory totals over those, and the walk on top.

use std::path::Path;

#[test]
fn modules_import_only_downwards() {
    fnd_test_support::layers::assert_layered(
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/src")),
        &[
            &["interrupt"],
            &[
                "settings",
                "messages",
                "tree",
                "json_stream",
                "exclude",
                "operands",
                "progress",
                "getopt",
            ],
            &["usage", "output", "groups", "exports"],
            &["format", "wire", "json"],
            &["cli", "view", "run"],
            &["ncdu", "command", "report"],
            &["node"],
            &["hardlinks", "relay"],
            &["scan", "export", "tally"],
            &["ranks", "browse", "diff", "ordered"],
        ],
    );
}
