//! Which names of an index's name table a selection's pattern matches:
//! each distinct name judged once, not once per entry that has it; and
//! where the pattern holds literals, only the names that hold one are
//! judged, found by one search of the whole table (in million's 200k
//! names, a query whose literal is one common letter, so that most names
//! are judged, took 12.8 ms of CPU; `lexer71.java` 5.8 ms, all of it).

use aho_corasick::{AhoCorasick, Input};
use fnd_index::format::Index;

use crate::select::Selection;

/// For each name id of `index`, whether `selection`'s pattern matches it;
/// `None` when the pattern looks at more than the name (`-p`) or matches
/// every name.
pub fn matching_names(index: &Index<'_>, selection: &Selection) -> Option<Vec<bool>> {
    if !selection.judges_names_only() || selection.matches_all_names() {
        return None;
    }
    let mut matched = vec![false; index.name_count()];
    let literals = selection.name_literals().and_then(|l| {
        AhoCorasick::builder()
            .ascii_case_insensitive(l.ascii_case_insensitive)
            .build(&l.strings)
            .ok()
    });
    match literals {
        Some(ac) => {
            let table = index.name_table();
            let mut at = 0;
            while let Some(m) = ac.find(Input::new(table).range(at..)) {
                // A hit can straddle two names: judge the one it starts in,
                // then search on from the next.
                let Some((id, name, next)) = index.name_holding(m.start()) else {
                    break;
                };
                selection.names_matching([(id, name)], |id| matched[id as usize] = true);
                at = next;
            }
        }
        None => selection.names_matching(index.names(), |id| matched[id as usize] = true),
    }
    Some(matched)
}
