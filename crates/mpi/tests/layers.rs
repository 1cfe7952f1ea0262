//! The crate's modules import only downwards, in the order its doc lists.

#[test]
fn modules_import_only_downwards() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    fnd_test_support::layers::assert_layered(
        &src,
        &[
            &["codec"],
            &["protocol", "output", "stdio"],
            &["launch"],
            &["world"],
            &["transport"],
            &["job"],
        ],
    );
}
