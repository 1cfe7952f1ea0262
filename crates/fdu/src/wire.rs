//! The bytes fdu's ranks send each other under MPI (feature `mpi`), and
//! their decoders. No MPI here: the messages are plain data, so that the
//! decoders are fuzzed (`fuzz/`, target `fdu_ranks`) and tested without a
//! launcher. A message from another rank is checked, never trusted: a
//! decoder says what is wrong instead of panicking, and never allocates
//! more than the message could hold.
//!
//! - [`Adopted`]: a subdirectory handed to another rank, as its parent's
//!   rank describes it (where its subtotal goes, how it was listed, where
//!   du meets it);
//! - [`Subtotal`]: a completed subtree's total, back to the parent's rank;
//! - [`Claim`]: a link of a multiply-linked file, to the inode's owner
//!   rank, which answers with the indexes of the links that count;
//! - [`RankEnd`]: what a rank tells the others after an operand;
//! - [`Totals`]: what a rank tells rank 0 at the end.

use fnd_mpi::codec::{DecodeError, Reader, Writer};

use crate::usage::{Stamp, Usage};

/// A subdirectory given to another rank, with what its node needs there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Adopted {
    /// The rank that holds its parent, and the parent's id there.
    pub rank: u32,
    pub id: u64,
    /// Its own usage, as its parent's listing statted it.
    pub own: Usage,
    /// Where it comes in its parent's listing, its device and inode.
    pub position: u64,
    pub dev: u64,
    pub ino: u64,
    /// du's order key of the directory itself, from the operand down
    /// (see `Node::visit_order`).
    pub key: Vec<u64>,
    /// The operand's file system is one where fts sorts big directories by inode.
    pub inode_sort: bool,
}

/// A completed subtree's total for its parent's node, `id` on the rank it
/// goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Subtotal {
    pub id: u64,
    pub total: Usage,
}

/// One link of a multiply-linked file: its inode, du's order key of the
/// link, and its index among the sender's links.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Claim {
    pub dev: u64,
    pub ino: u64,
    pub key: Vec<u64>,
    pub index: u64,
}

/// What a rank tells every other one once an operand is done.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RankEnd {
    /// It entered the operand (read its directory).
    pub entered: bool,
    /// It met these later operands inside this one (du skips them).
    pub seen: Vec<u32>,
}

/// What a rank tells rank 0 at the end of the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Totals {
    /// It reported an error.
    pub failed: bool,
    /// What the operands it completed added up to.
    pub total: Usage,
}

fn usage(w: &mut Writer, u: Usage) {
    w.u64(u.amount).u64(u.stamp.secs as u64).u32(u.stamp.nsec);
}

fn read_usage(r: &mut Reader<'_>) -> Result<Usage, DecodeError> {
    let amount = r.u64()?;
    let secs = r.u64()? as i64;
    let nsec = r.u32()?;
    if nsec >= 1_000_000_000 {
        return Err(r.error("nanoseconds past a second"));
    }
    Ok(Usage {
        amount,
        stamp: Stamp { secs, nsec },
    })
}

fn key(w: &mut Writer, key: &[u64]) {
    w.u32(key.len() as u32);
    for k in key {
        w.u64(*k);
    }
}

fn read_key(r: &mut Reader<'_>) -> Result<Vec<u64>, DecodeError> {
    let n = r.count(8)?;
    (0..n).map(|_| r.u64()).collect()
}

impl Adopted {
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.u32(self.rank).u64(self.id);
        usage(&mut w, self.own);
        w.u64(self.position).u64(self.dev).u64(self.ino);
        key(&mut w, &self.key);
        w.u8(u8::from(self.inode_sort));
        w.finish()
    }

    pub fn decode(bytes: &[u8]) -> Result<Adopted, DecodeError> {
        let mut r = Reader::new(bytes);
        let rank = r.u32()?;
        let id = r.u64()?;
        let own = read_usage(&mut r)?;
        let (position, dev, ino) = (r.u64()?, r.u64()?, r.u64()?);
        let key = read_key(&mut r)?;
        let inode_sort = match r.u8()? {
            0 => false,
            1 => true,
            _ => return Err(r.error("a flag that is neither 0 nor 1")),
        };
        r.end()?;
        Ok(Adopted {
            rank,
            id,
            own,
            position,
            dev,
            ino,
            key,
            inode_sort,
        })
    }
}

impl Subtotal {
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.u64(self.id);
        usage(&mut w, self.total);
        w.finish()
    }

    pub fn decode(bytes: &[u8]) -> Result<Subtotal, DecodeError> {
        let mut r = Reader::new(bytes);
        let id = r.u64()?;
        let total = read_usage(&mut r)?;
        r.end()?;
        Ok(Subtotal { id, total })
    }
}

impl Claim {
    /// Claims, one after the other, in one buffer.
    pub fn encode_all(claims: &[Claim]) -> Vec<u8> {
        let mut w = Writer::new();
        w.u32(claims.len() as u32);
        for c in claims {
            w.u64(c.dev).u64(c.ino).u64(c.index);
            key(&mut w, &c.key);
        }
        w.finish()
    }

    pub fn decode_all(bytes: &[u8]) -> Result<Vec<Claim>, DecodeError> {
        let mut r = Reader::new(bytes);
        let n = r.count(28)?;
        let mut claims = Vec::with_capacity(n);
        for _ in 0..n {
            let (dev, ino, index) = (r.u64()?, r.u64()?, r.u64()?);
            let key = read_key(&mut r)?;
            claims.push(Claim { dev, ino, key, index });
        }
        r.end()?;
        Ok(claims)
    }
}

/// The indexes of the links that count, for the rank that claimed them.
pub fn encode_indexes(indexes: &[u64]) -> Vec<u8> {
    let mut w = Writer::new();
    key(&mut w, indexes);
    w.finish()
}

pub fn decode_indexes(bytes: &[u8]) -> Result<Vec<u64>, DecodeError> {
    let mut r = Reader::new(bytes);
    let indexes = read_key(&mut r)?;
    r.end()?;
    Ok(indexes)
}

impl RankEnd {
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.u8(u8::from(self.entered)).u32(self.seen.len() as u32);
        for s in &self.seen {
            w.u32(*s);
        }
        w.finish()
    }

    pub fn decode(bytes: &[u8]) -> Result<RankEnd, DecodeError> {
        let mut r = Reader::new(bytes);
        let entered = match r.u8()? {
            0 => false,
            1 => true,
            _ => return Err(r.error("a flag that is neither 0 nor 1")),
        };
        let n = r.count(4)?;
        let seen = (0..n).map(|_| r.u32()).collect::<Result<_, _>>()?;
        r.end()?;
        Ok(RankEnd { entered, seen })
    }
}

impl Totals {
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.u8(u8::from(self.failed));
        usage(&mut w, self.total);
        w.finish()
    }

    pub fn decode(bytes: &[u8]) -> Result<Totals, DecodeError> {
        let mut r = Reader::new(bytes);
        let failed = match r.u8()? {
            0 => false,
            1 => true,
            _ => return Err(r.error("a flag that is neither 0 nor 1")),
        };
        let total = read_usage(&mut r)?;
        r.end()?;
        Ok(Totals { failed, total })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(amount: u64) -> Usage {
        Usage {
            amount,
            stamp: Stamp { secs: -5, nsec: 7 },
        }
    }

    #[test]
    fn every_message_decodes_to_what_was_encoded() {
        let adopted = Adopted {
            rank: 3,
            id: 9,
            own: usage(4096),
            position: 1 << 33,
            dev: 1,
            ino: 2,
            key: vec![0, 5, 1 << 40],
            inode_sort: true,
        };
        assert_eq!(Adopted::decode(&adopted.encode()).unwrap(), adopted);
        let sub = Subtotal { id: 1, total: usage(7) };
        assert_eq!(Subtotal::decode(&sub.encode()).unwrap(), sub);
        let claims = vec![
            Claim {
                dev: 1,
                ino: 2,
                key: vec![3],
                index: 0,
            },
            Claim {
                dev: 1,
                ino: 2,
                key: vec![],
                index: 1,
            },
        ];
        assert_eq!(Claim::decode_all(&Claim::encode_all(&claims)).unwrap(), claims);
        assert_eq!(decode_indexes(&encode_indexes(&[4, 2])).unwrap(), [4, 2]);
        let end = RankEnd {
            entered: true,
            seen: vec![2, 5],
        };
        assert_eq!(RankEnd::decode(&end.encode()).unwrap(), end);
        let totals = Totals {
            failed: true,
            total: usage(9),
        };
        assert_eq!(Totals::decode(&totals.encode()).unwrap(), totals);
    }

    #[test]
    fn damaged_messages_are_errors() {
        let sub = Subtotal { id: 1, total: usage(7) }.encode();
        assert!(Subtotal::decode(&sub[..sub.len() - 1]).is_err());
        assert!(Subtotal::decode(&[sub.clone(), vec![0]].concat()).is_err());
        // A count of four billion claims in a few bytes.
        assert!(Claim::decode_all(&[0xff, 0xff, 0xff, 0xff, 0]).is_err());
        assert!(RankEnd::decode(&[2, 0, 0, 0, 0]).is_err());
    }
}
