//! The check that keeps a crate in layers: every `crate::…` path in a
//! module names a module of a lower layer.
//!
//! The layers are listed once, in the workspace's `ARCHITECTURE.md`: a
//! heading `` ### `crate-name` `` and under it a table, one row a layer,
//! bottom first, the row's first cell its modules in backticks
//! ([`from_architecture`]); a crate's `tests/layers.rs` calls
//! [`assert_crate_layered`]. Modules of one layer may not use each other. A file belongs to its top-level
//! module (`src/schedule/pool.rs` is `schedule`), so a module's own
//! submodules reach each other freely. The crate root (`lib.rs`,
//! `main.rs`) may use everything: it only assembles.
//!
//! ```
//! let dir = tempfile::tempdir().unwrap();
//! std::fs::write(dir.path().join("lib.rs"), "mod low;\nmod high;\n").unwrap();
//! std::fs::write(dir.path().join("low.rs"), "pub fn f() {}\n").unwrap();
//! std::fs::write(dir.path().join("high.rs"), "use crate::low::f;\n").unwrap();
//! let layers: &[&[&str]] = &[&["low"], &["high"]];
//! assert!(fnd_test_support::layers::violations(dir.path(), layers).is_empty());
//! let upside_down: &[&[&str]] = &[&["high"], &["low"]];
//! assert_eq!(fnd_test_support::layers::violations(dir.path(), upside_down).len(), 1);
//! ```

use std::path::{Path, PathBuf};

/// One `crate::…` path that does not point down.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The file the path is written in, relative to `src`.
    pub file: PathBuf,
    /// 1-based line number.
    pub line: usize,
    /// The module the file belongs to, and the one it names.
    pub from: String,
    pub to: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.line == 0 {
            return write!(f, "{}: the module `{}` is in no layer", self.file.display(), self.from);
        }
        write!(
            f,
            "{}:{}: `{}` uses `crate::{}`, which is not in a lower layer",
            self.file.display(),
            self.line,
            self.from,
            self.to
        )
    }
}

/// Every `crate::` path under `src` that does not point to a lower layer,
/// and every top-level module missing from `layers`.
pub fn violations(src: &Path, layers: &[&[&str]]) -> Vec<Violation> {
    let layer_of = |module: &str| layers.iter().position(|layer| layer.contains(&module));
    let files = rust_files(src);
    // A name that is no module's file is an item of the root (a function,
    // a module written inside `lib.rs`), or text in a string.
    let modules: std::collections::HashSet<String> = files
        .iter()
        .filter_map(|f| top_module(f.strip_prefix(src).ok()?))
        .collect();
    let mut found = Vec::new();
    for file in files {
        let rel = file.strip_prefix(src).expect("under src").to_path_buf();
        let Some(from) = top_module(&rel) else { continue };
        let Some(from_layer) = layer_of(&from) else {
            found.push(Violation {
                file: rel,
                line: 0,
                from: from.clone(),
                to: "(module not in any layer)".into(),
            });
            continue;
        };
        let text = std::fs::read_to_string(&file).expect("read source");
        for (line, to) in named_modules(&text) {
            if to != from && modules.contains(&to) && layer_of(&to).is_none_or(|l| l >= from_layer) {
                found.push(Violation {
                    file: rel.clone(),
                    line,
                    from: from.clone(),
                    to,
                });
            }
        }
    }
    found
}

/// Panic with every violation, one a line.
pub fn assert_layered(src: &Path, layers: &[&[&str]]) {
    let found = violations(src, layers);
    let listed: String = found.iter().map(|v| format!("\n  {v}")).collect();
    assert!(found.is_empty(), "imports that do not point down:{listed}");
}

/// The workspace's map, which lists every crate's layers.
pub const ARCHITECTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../ARCHITECTURE.md");

/// For a crate's `tests/layers.rs`: the crate in `manifest_dir` (its
/// `CARGO_MANIFEST_DIR`) keeps the layers [`ARCHITECTURE`] lists for
/// `name` (its `CARGO_PKG_NAME`). Panics, saying what is wrong, when the
/// page has no table for the crate, when a module the table names has no
/// file, or with every [`violations`] (an import that points up, a module
/// the table leaves out).
pub fn assert_crate_layered(manifest_dir: &str, name: &str) {
    let page = std::fs::read_to_string(ARCHITECTURE).unwrap_or_else(|e| panic!("{ARCHITECTURE}: {e}"));
    let layers = from_architecture(&page, name).unwrap_or_else(|why| panic!("{ARCHITECTURE}: {why}"));
    let src = Path::new(manifest_dir).join("src");
    let missing: Vec<&String> = layers
        .iter()
        .flatten()
        .filter(|m| !src.join(format!("{m}.rs")).is_file() && !src.join(m).is_dir())
        .collect();
    assert!(
        missing.is_empty(),
        "{ARCHITECTURE} lists modules of {name} that {} does not have: {missing:?}",
        src.display()
    );
    let layers: Vec<Vec<&str>> = layers.iter().map(|l| l.iter().map(String::as_str).collect()).collect();
    let layers: Vec<&[&str]> = layers.iter().map(Vec::as_slice).collect();
    assert_layered(&src, &layers);
}

/// The layers of crate `name` in `page` (the text of `ARCHITECTURE.md`),
/// bottom first: the table after the heading `` ### `name` ``, a layer a
/// row, the modules of the row's first cell. Everything else on the page
/// is prose. Errs when there is no such heading or table, when a first
/// cell holds anything but module names in backticks separated by
/// commas, or when a module is named twice.
///
/// ```
/// let page = "# Map\n\n### `demo`\n\nBottom first.\n\n| modules | what |\n| --- | --- |\n\
///             | `low`, `io` | the bottom |\n| `high` | uses `low` |\n\nMore prose.\n";
/// let layers = fnd_test_support::layers::from_architecture(page, "demo").unwrap();
/// assert_eq!(layers, [vec!["low", "io"], vec!["high"]]);
/// assert!(fnd_test_support::layers::from_architecture(page, "other").is_err());
/// ```
pub fn from_architecture(page: &str, name: &str) -> Result<Vec<Vec<String>>, String> {
    let heading = format!("### `{name}`");
    let mut lines = page.lines().skip_while(|l| l.trim_end() != heading);
    if lines.next().is_none() {
        return Err(format!("no heading {heading}"));
    }
    let rows: Vec<&str> = lines
        .take_while(|l| !l.starts_with('#'))
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .collect();
    // The header and the line under it.
    if rows.len() < 3 || !rows[1].contains("---") {
        return Err(format!("no table of layers under {heading}"));
    }
    let mut layers = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for row in &rows[2..] {
        let cell = row.split('|').nth(1).unwrap_or("").trim();
        let mut layer = Vec::new();
        for item in cell.split(',') {
            let module = item
                .trim()
                .strip_prefix('`')
                .and_then(|m| m.strip_suffix('`'))
                .filter(|m| {
                    !m.is_empty()
                        && m.chars()
                            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
                })
                .ok_or_else(|| format!("under {heading}, not a list of modules: {cell:?}"))?;
            if !seen.insert(module) {
                return Err(format!("under {heading}, `{module}` is in two layers"));
            }
            layer.push(module.to_string());
        }
        layers.push(layer);
    }
    Ok(layers)
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("read src").flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// The top-level module a file under `src` belongs to; `None` for the crate root.
fn top_module(rel: &Path) -> Option<String> {
    let first = rel.components().next()?.as_os_str().to_str()?;
    let name = first.strip_suffix(".rs").unwrap_or(first);
    (!matches!(name, "lib" | "main")).then(|| name.to_string())
}

/// The modules named by `crate::NAME` in a file, with the line each is
/// on; comments are left out, and a `use crate::{…}` group may span lines.
fn named_modules(text: &str) -> Vec<(usize, String)> {
    let code: String = text
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    let line_at = |offset: usize| code[..offset].matches('\n').count() + 1;
    let mut names = Vec::new();
    let mut from = 0;
    while let Some(found) = code[from..].find("crate::") {
        let at = from + found;
        from = at + "crate::".len();
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
            continue;
        }
        let rest = &code[from..];
        if let Some(group) = rest.strip_prefix('{') {
            // Each item's first segment, at nesting depth one.
            let mut depth = 1;
            let mut item_start = 0;
            for (i, c) in group.char_indices() {
                let item_end = match c {
                    '{' => {
                        depth += 1;
                        None
                    }
                    '}' => {
                        depth -= 1;
                        (depth == 0).then_some(i)
                    }
                    ',' if depth == 1 => Some(i),
                    _ => None,
                };
                if let Some(end) = item_end {
                    let item = &group[item_start..end];
                    let lead = item.len() - item.trim_start().len();
                    if let Some(name) = first_segment(item.trim_start()) {
                        names.push((line_at(from + 1 + item_start + lead), name));
                    }
                    item_start = i + 1;
                }
                if depth == 0 {
                    break;
                }
            }
        } else if let Some(name) = first_segment(rest) {
            names.push((line_at(at), name));
        }
    }
    names
}

fn first_segment(path: &str) -> Option<String> {
    let name: String = path.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
    // `crate::Item` names an item of the root, not a module.
    (!name.is_empty() && name.starts_with(|c: char| c.is_lowercase())).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_paths_in_uses_and_expressions_but_not_comments() {
        let names = |text| named_modules(text).into_iter().collect::<Vec<_>>();
        let one = |name: &str| vec![(1, name.to_string())];
        assert_eq!(names("use crate::dir::{Dir, Job};"), one("dir"));
        assert_eq!(
            names("use crate::{entry::Chunk, meta};"),
            [(1, "entry".into()), (1, "meta".into())]
        );
        assert_eq!(
            names("    let x = crate::io::pool_size(1, 2); // crate::walker"),
            one("io")
        );
        assert!(names("/// see crate::walker").is_empty());
        assert!(names("pub use crate::Error;").is_empty());
        assert!(names("fnd_crate::x").is_empty());
        let group = "use crate::{\n    dir::{Dir, Job},\n    // crate::no\n    meta::Metadata,\n};";
        assert_eq!(names(group), [(2, "dir".into()), (4, "meta".into())]);
    }

    #[test]
    fn a_table_that_is_not_a_list_of_layers_is_refused() {
        let table = |rows: &str| format!("### `c`\n\n| modules | what |\n| --- | --- |\n{rows}\n");
        let layers = |rows: &str| from_architecture(&table(rows), "c");
        assert!(layers("| `a` | x |\n| `b`, `c` | y |").is_ok());
        for bad in [
            "| a | no backticks |",
            "| `a` (feature `mpi`) | a note in the cell |",
            "| | empty |",
            "| `a` | x |\n| `a` | twice |",
            "| `A` | not a module's name |",
        ] {
            assert!(layers(bad).is_err(), "{bad}");
        }
        assert!(from_architecture("### `c`\n\nno table\n\n### `d`\n| `a` |\n| --- |\n| `b` |\n", "c").is_err());
        // The table ends at the first line that is not a row.
        let page = format!("{}\n| `z` | not a layer |\n", table("| `a` | x |"));
        assert_eq!(from_architecture(&page, "c").unwrap(), [vec!["a"]]);
    }
}
