//! What the fuzz targets reach that is not public API: a directory handed
//! over by another process of the walk, decoded from its bytes and taken
//! in.

use crate::builder::WalkBuilder;
use crate::schedule::handoff::Handoff;

/// Take `bytes`, a directory another rank handed over, into `walk` as a
/// rank does before reading it: decoded, checked against the walk's roots,
/// its parent's filter state imported (which may read the ignore files of
/// the directories on its way). `Ok` when it would be read (or reported as
/// unreadable), `Err` with why it is refused. Nothing is read.
pub fn take_in(walk: &WalkBuilder, bytes: &[u8]) -> Result<(), String> {
    let handoff = Handoff::decode(bytes).map_err(|e| e.to_string())?;
    let shared = walk.resolve(None);
    handoff.into_job(&shared).map(drop)
}

/// `bytes` decoded as a directory another rank handed over and encoded
/// again, when they decode: a decoder that accepts two spellings of one
/// directory gives back other bytes.
pub fn reencode(bytes: &[u8]) -> Option<Vec<u8>> {
    Handoff::decode(bytes).ok().map(|handoff| handoff.encode())
}

/// `bytes` decoded as a handed-over directory whose path is put under
/// `dir` (`dir/path`), and encoded again: so that a fuzzed path lies
/// under a walk's root and gets past the first check.
pub fn under(dir: &[u8], bytes: &[u8]) -> Option<Vec<u8>> {
    let mut handoff = Handoff::decode(bytes).ok()?;
    handoff.path = [dir, b"/", &handoff.path].concat();
    Some(handoff.encode())
}
