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
//! - [`Subtotal`]: a completed subtree's total, back to the parent's rank,
//!   with its entries when the tree is kept (`--json`, `--tree`);
//! - [`Claim`]: a link of a multiply-linked file, to the inode's owner
//!   rank, which answers with the indexes of the links that count;
//! - [`RankEnd`]: what a rank tells the others after an operand;
//! - [`Totals`]: what a rank tells rank 0 at the end;
//! - [`encode_roots`]: the operands' trees a rank completed, for rank 0;
//! - [`encode_operands`]: the operands rank 0 read (`--files0-from`).
//!
//! Trees travel as their entries in pre-order (name, amount, number of
//! entries inside), written and read with a stack of their own: a tree is
//! as deep as the file system.

use fnd_mpi::codec::{DecodeError, Reader, Writer};

use crate::tree::{Root, TreeBuilder, TreeNode};
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
/// goes to; with the tree kept, its name and entries.
#[derive(Debug)]
pub struct Subtotal {
    pub id: u64,
    pub total: Usage,
    pub tree: Option<(Vec<u8>, TreeBuilder)>,
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
        let inode_sort = read_flag(&mut r)?;
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
    /// The subtotal of directory `id`, with its `name` and its entries
    /// (`tree`) when the tree is kept.
    pub fn encode(id: u64, total: Usage, tree: Option<(&[u8], &TreeNode)>) -> Vec<u8> {
        let mut w = Writer::new();
        w.u64(id);
        usage(&mut w, total);
        match tree {
            None => {
                w.u8(0);
            }
            Some((name, node)) => {
                w.u8(1).bytes(name);
                write_kids(&mut w, node);
            }
        }
        w.finish()
    }

    pub fn decode(bytes: &[u8]) -> Result<Subtotal, DecodeError> {
        let mut r = Reader::new(bytes);
        let id = r.u64()?;
        let total = read_usage(&mut r)?;
        let tree = match read_flag(&mut r)? {
            false => None,
            true => {
                let name = r.bytes()?.to_vec();
                Some((name, read_kids(&mut r)?))
            }
        };
        r.end()?;
        Ok(Subtotal { id, total, tree })
    }
}

/// The entries inside `top`, in pre-order.
fn write_kids(w: &mut Writer, top: &TreeNode) {
    w.u32(top.children().len() as u32);
    let mut stack = vec![top.children()];
    while let Some(level) = stack.last_mut() {
        match level.next() {
            Some((name, node)) => {
                w.bytes(name).u64(node.amount).u32(node.children().len() as u32);
                stack.push(node.children());
            }
            None => {
                stack.pop();
            }
        }
    }
}

/// Name, amount and count: the least an entry takes.
const ENTRY_MIN: usize = 16;

/// What [`write_kids`] wrote, as a directory's entries.
fn read_kids(r: &mut Reader<'_>) -> Result<TreeBuilder, DecodeError> {
    struct Level {
        kids: TreeBuilder,
        name: Vec<u8>,
        amount: u64,
        left: usize,
    }
    let left = r.count(ENTRY_MIN)?;
    let mut stack = vec![Level {
        kids: TreeBuilder::default(),
        name: Vec::new(),
        amount: 0,
        left,
    }];
    loop {
        let top = stack.last_mut().expect("the top level stays until the end");
        if top.left == 0 {
            let done = stack.pop().expect("a level");
            match stack.last_mut() {
                None => return Ok(done.kids),
                Some(parent) => parent.kids.dir(&done.name, done.amount, done.kids),
            }
            continue;
        }
        top.left -= 1;
        let name = r.bytes()?;
        if !fnd_walk::is_file_name(name) {
            return Err(r.error("a name that is not a file name"));
        }
        let amount = r.u64()?;
        let left = r.count(ENTRY_MIN)?;
        if left == 0 {
            top.kids.leaf(name, amount);
        } else {
            stack.push(Level {
                kids: TreeBuilder::default(),
                name: name.to_vec(),
                amount,
                left,
            });
        }
    }
}

/// Operands' trees, in order.
pub fn encode_roots(roots: &[Root]) -> Vec<u8> {
    let mut w = Writer::new();
    w.u32(roots.len() as u32);
    for root in roots {
        w.bytes(&root.name).u64(root.node.amount);
        write_kids(&mut w, &root.node);
    }
    w.finish()
}

pub fn decode_roots(bytes: &[u8]) -> Result<Vec<Root>, DecodeError> {
    let mut r = Reader::new(bytes);
    let n = r.count(ENTRY_MIN)?;
    let mut roots = Vec::with_capacity(n);
    for _ in 0..n {
        let name = r.bytes()?.to_vec();
        let amount = r.u64()?;
        let kids = read_kids(&mut r)?;
        roots.push(Root::new(&name, kids.into_node(amount)));
    }
    r.end()?;
    Ok(roots)
}

/// The operands rank 0 read from `--files0-from`, and whether a name was
/// bad; `None` when it could not read the file.
pub fn encode_operands(read: Option<&(Vec<Vec<u8>>, bool)>) -> Vec<u8> {
    let mut w = Writer::new();
    match read {
        None => {
            w.u8(0);
        }
        Some((operands, bad_name)) => {
            w.u8(1).u8(u8::from(*bad_name)).u32(operands.len() as u32);
            for op in operands {
                w.bytes(op);
            }
        }
    }
    w.finish()
}

pub type Operands = Option<(Vec<Vec<u8>>, bool)>;

pub fn decode_operands(bytes: &[u8]) -> Result<Operands, DecodeError> {
    let mut r = Reader::new(bytes);
    if !read_flag(&mut r)? {
        r.end()?;
        return Ok(None);
    }
    let bad_name = read_flag(&mut r)?;
    let n = r.count(4)?;
    let operands = (0..n)
        .map(|_| r.bytes().map(<[u8]>::to_vec))
        .collect::<Result<_, _>>()?;
    r.end()?;
    Ok(Some((operands, bad_name)))
}

fn read_flag(r: &mut Reader<'_>) -> Result<bool, DecodeError> {
    match r.u8()? {
        0 => Ok(false),
        1 => Ok(true),
        _ => Err(r.error("a flag that is neither 0 nor 1")),
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
        let entered = read_flag(&mut r)?;
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
        let failed = read_flag(&mut r)?;
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
        let sub = Subtotal::decode(&Subtotal::encode(1, usage(7), None)).unwrap();
        assert_eq!((sub.id, sub.total, sub.tree.is_none()), (1, usage(7), true));
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
    fn trees_travel_whole_and_deep() {
        let mut below = TreeBuilder::default();
        below.leaf(b"f", 3);
        let mut kids = TreeBuilder::default();
        kids.dir(b"d", 10, below);
        kids.leaf(b"empty", 4);
        let node = kids.into_node(20);
        let bytes = Subtotal::encode(5, usage(20), Some((b"top", &node)));
        let sub = Subtotal::decode(&bytes).unwrap();
        let (name, kids) = sub.tree.unwrap();
        assert_eq!(name, b"top");
        assert_eq!(kids.into_node(20), node);
        let roots = vec![Root::new(b"op", node), crate::tree::chain(100_000)];
        let again = decode_roots(&encode_roots(&roots)).unwrap();
        assert!(again == roots, "roots changed on the way");
        let ops = (vec![b"a".to_vec(), b"b c".to_vec()], true);
        assert_eq!(decode_operands(&encode_operands(Some(&ops))).unwrap(), Some(ops));
        assert_eq!(decode_operands(&encode_operands(None)).unwrap(), None);
    }

    #[test]
    fn damaged_messages_are_errors() {
        let sub = Subtotal::encode(1, usage(7), None);
        assert!(Subtotal::decode(&sub[..sub.len() - 1]).is_err());
        assert!(Subtotal::decode(&[sub.clone(), vec![0]].concat()).is_err());
        // A count of four billion claims in a few bytes.
        assert!(Claim::decode_all(&[0xff, 0xff, 0xff, 0xff, 0]).is_err());
        assert!(RankEnd::decode(&[2, 0, 0, 0, 0]).is_err());
        for name in [&b".."[..], b"a/b", b"", b"\0"] {
            let mut kids = TreeBuilder::default();
            kids.leaf(name, 1);
            let node = kids.into_node(1);
            let bytes = Subtotal::encode(1, usage(1), Some((b"top", &node)));
            assert!(Subtotal::decode(&bytes).is_err(), "{name:?}");
        }
    }
}
