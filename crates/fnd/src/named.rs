//! Which names of an index's name table a selection's pattern matches:
//! each distinct name judged once, not once per entry that has it; and
//! where the pattern holds literals, only the names that hold one are
//! judged, found by one search of the whole table (in million's 200k
//! names, a query whose literal is one common letter, so that most names
//! are judged, took 12.8 ms of CPU; `lexer71.java` 5.8 ms, all of it).

use aho_corasick::{AhoCorasick, Input};
use fnd_index::format::Index;
use memchr::memmem;

use crate::pattern::Literals;
use crate::select::Selection;

/// For each name id of `index`, whether `selection`'s pattern matches it;
/// `None` when the pattern looks at more than the name (`-p`) or matches
/// every name.
pub fn matching_names(index: &Index<'_>, selection: &Selection) -> Option<Vec<bool>> {
    if !selection.judges_names_only() || selection.matches_all_names() {
        return None;
    }
    let mut matched = vec![false; index.name_count()];
    match selection.name_literals().and_then(LiteralSearch::new) {
        Some(search) => search.each_start(index.name_table(), |start| {
            // A hit can straddle two names: judge the one it starts in,
            // then search on from the next.
            let (id, name, next) = index.name_holding(start)?;
            selection.names_matching([(id, name)], |id| matched[id as usize] = true);
            Some(next)
        }),
        None => selection.names_matching(index.names(), |id| matched[id as usize] = true),
    }
    Some(matched)
}

/// A search of the name table for where a pattern's literals start.
enum LiteralSearch {
    /// One literal, in this case.
    Exact(memmem::Finder<'static>),
    /// One literal (its letters in lowercase), in either ASCII case.
    EitherCase(memmem::Finder<'static>),
    /// Several literals.
    Any(AhoCorasick),
}

impl LiteralSearch {
    fn new(literals: &Literals) -> Option<LiteralSearch> {
        match &literals.strings[..] {
            [one] if !one.is_empty() && !literals.ascii_case_insensitive => {
                Some(LiteralSearch::Exact(memmem::Finder::new(one).into_owned()))
            }
            [one] if !one.is_empty() => Some(LiteralSearch::EitherCase(
                memmem::Finder::new(&one.to_ascii_lowercase()).into_owned(),
            )),
            _ => AhoCorasick::builder()
                .ascii_case_insensitive(literals.ascii_case_insensitive)
                .build(&literals.strings)
                .ok()
                .map(LiteralSearch::Any),
        }
    }

    /// Call `found` with the start of each literal found in `hay`, in
    /// order; it says where to search on from, or `None` to stop.
    fn each_start(&self, hay: &[u8], mut found: impl FnMut(usize) -> Option<usize>) {
        let mut at = 0;
        match self {
            LiteralSearch::Exact(finder) => {
                while let Some(i) = hay.get(at..).and_then(|rest| finder.find(rest)) {
                    let Some(next) = found(at + i) else { return };
                    at = next.max(at + i + 1);
                }
            }
            LiteralSearch::Any(ac) => {
                while let Some(m) = hay.get(at..).and_then(|_| ac.find(Input::new(hay).range(at..))) {
                    let Some(next) = found(m.start()) else { return };
                    at = next.max(m.start() + 1);
                }
            }
            LiteralSearch::EitherCase(finder) => each_start_either_case(hay, finder, found),
        }
    }
}

/// [`LiteralSearch::each_start`] for a lowercase needle in either ASCII case.
///
/// The table is lowercased a block at a time into a buffer that stays in
/// the cache, and searched there with memchr's `memmem`. For `lexer71`,
/// aho-corasick (its rare-byte prefilter, then its automaton) took 1.45
/// ms of a 5.2 ms query of million's 199k names, this 0.2 ms (whole query 6.0
/// ms against 4.6, 2026-11-26).
fn each_start_either_case(hay: &[u8], finder: &memmem::Finder<'_>, mut found: impl FnMut(usize) -> Option<usize>) {
    const BLOCK: usize = 32 * 1024;
    // A hit may start near a block's end and run into the next.
    let overlap = finder.needle().len() - 1;
    let mut folded = Vec::with_capacity(BLOCK + overlap);
    let mut at = 0;
    let mut block = 0;
    while block < hay.len() {
        let end = (block + BLOCK + overlap).min(hay.len());
        folded.clear();
        folded.extend(hay[block..end].iter().map(u8::to_ascii_lowercase));
        // Hits that start in this block; later ones are the next block's.
        let starts = (block + BLOCK).min(end);
        while at < starts {
            let Some(i) = finder.find(&folded[at - block..]) else {
                break;
            };
            let start = at + i;
            if start >= starts {
                break;
            }
            let Some(next) = found(start) else { return };
            at = next.max(start + 1);
        }
        block += BLOCK;
        at = at.max(block);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every start of one of `strings` in `hay`, compared the plain way.
    fn naive(hay: &[u8], strings: &[&[u8]], either_case: bool) -> Vec<usize> {
        (0..hay.len())
            .filter(|&i| {
                strings.iter().any(|s| {
                    hay.get(i..i + s.len()).is_some_and(|h| {
                        if either_case {
                            h.eq_ignore_ascii_case(s)
                        } else {
                            h == *s
                        }
                    })
                })
            })
            .collect()
    }

    fn starts(hay: &[u8], strings: &[&[u8]], either_case: bool) -> Vec<usize> {
        let literals = Literals {
            strings: strings.iter().map(|s| s.to_vec()).collect(),
            ascii_case_insensitive: either_case,
        };
        let mut starts = Vec::new();
        let search = LiteralSearch::new(&literals).unwrap();
        search.each_start(hay, |start| {
            starts.push(start);
            Some(start + 1)
        });
        starts
    }

    #[test]
    fn finds_every_start_a_plain_search_finds() {
        // A small generator: bytes around the needles', in both cases,
        // over lengths across the search's blocks.
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let alphabet = b"aAbB71._\xff\x00";
        for needles in [
            &[&b"a"[..]][..],
            &[b"ab"],
            &[b"ba7"],
            &[b"a_b_a"],
            &[b"\xffa"],
            &[b"ab", b"7"],
        ] {
            for len in [0, 1, 2, 5, 100, 32 * 1024 - 1, 32 * 1024 + 3, 70_000] {
                let hay: Vec<u8> = (0..len).map(|_| alphabet[next() as usize % alphabet.len()]).collect();
                for either_case in [false, true] {
                    let lower: Vec<&[u8]> = needles.to_vec();
                    assert_eq!(
                        starts(&hay, &lower, either_case),
                        naive(&hay, &lower, either_case),
                        "{needles:?}, length {len}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_caller_says_where_to_go_on_and_when_to_stop() {
        let table = b"main.rs\x00Lexer71.JAVA\x00lexer71.java\x00LEXER71LEXER71";
        let mut seen = Vec::new();
        let literals = Literals {
            strings: vec![b"lexer71".to_vec()],
            ascii_case_insensitive: true,
        };
        LiteralSearch::new(&literals).unwrap().each_start(table, |start| {
            seen.push(start);
            (seen.len() < 3).then_some(start + 13)
        });
        assert_eq!(seen, [8, 21, 34]);
    }
}
