//! What the fuzz targets reach that is not public API: a directory handed
//! over by another process of the walk, taken in from its bytes.

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
