//! The crate's modules import only downwards, in the layers the
//! workspace's ARCHITECTURE.md lists for it (its one list of them).

#[test]
fn modules_import_only_downwards() {
    fnd_test_support::layers::assert_crate_layered(env!("CARGO_MANIFEST_DIR"), env!("CARGO_PKG_NAME"));
}
