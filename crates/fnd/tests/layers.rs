//! fnd's modules in layers, bottom first, in the order results travel:
//! patterns and filters, the search, formats, then writing and commands.
//! Each module uses only modules of lower layers (see `src/lib.rs`).

use std::path::Path;

#[test]
fn modules_import_only_downwards() {
    fnd_test_support::layers::assert_layered(
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/src")),
        &[
            // What everything after the search knows of a result; path text.
            &["escape", "found", "paths"],
            &["error"],
            // What a name must look like; what an entry must be.
            &["pattern", "filter"],
            // Both, judged on one entry; fd's first 100 ms.
            &["select", "early"],
            &["search"],
            // Which names of an index match.
            &["named"],
            // The same over an index of the tree.
            &["indexed"],
            // How one result looks.
            &["format", "color", "hyperlink"],
            // A `--json` record.
            &["json"],
            // Printing results, or running commands on them.
            &["listing", "exec"],
            // A rank's output on its way to rank 0 (MPI).
            &["forward"],
            &["results"],
            &["cli"],
            // Options into a search and a sink; completions and man page.
            &["config", "generate"],
            // The whole command as one rank of an MPI job.
            &["ranks"],
        ],
    );
}
