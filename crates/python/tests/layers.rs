//! The package's modules import only downwards: paths, then errors, at the
//! bottom, the stream of batches over them, the four functions on top.

use std::path::Path;

#[test]
fn modules_import_only_downwards() {
    fnd_test_support::layers::assert_layered(
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/src")),
        &[&["text"], &["errors"], &["stream"], &["walk", "scan", "find", "usage"]],
    );
}
