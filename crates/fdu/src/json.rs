//! `--json`: the scanned trees as nested JSON, and reading it back
//! (`--from-json`) for the tree view.
//!
//! ```json
//! {"fdu":1,"measure":"disk","roots":[{"name":"src","size":4096,"children":[{"name":"a","size":8}]}]}
//! ```
//! `size` is in bytes (or inodes, with `--inodes`); directories have
//! `children`. A name that is not UTF-8 is written as `name_bytes`, an
//! array of byte values, so paths survive the round trip exactly.

use serde_json::Value;

use crate::settings::Measure;
use crate::tree::{Root, TreeBuilder, TreeNode};

pub fn write(roots: &[Root], measure: Measure, out: &mut Vec<u8>) {
    let measure = measure.name();
    out.extend_from_slice(format!("{{\"fdu\":1,\"measure\":\"{measure}\",\"roots\":[").as_bytes());
    for (i, root) in roots.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_node(&root.name, &root.node, out);
    }
    out.extend_from_slice(b"]}\n");
}

/// Depth-first with an explicit stack: deep trees must not exhaust ours.
fn write_node(name: &[u8], root: &TreeNode, out: &mut Vec<u8>) {
    enum Step<'a> {
        Open(&'a [u8], &'a TreeNode),
        Close,
    }
    let mut stack = vec![Step::Open(name, root)];
    let mut first = true;
    while let Some(step) = stack.pop() {
        match step {
            Step::Open(name, node) => {
                if !first && out.last() != Some(&b'[') {
                    out.push(b',');
                }
                first = false;
                out.push(b'{');
                match std::str::from_utf8(name) {
                    Ok(name) => {
                        out.extend_from_slice(b"\"name\":");
                        serde_json::to_writer(&mut *out, name).expect("writing to a Vec cannot fail");
                    }
                    Err(_) => {
                        out.extend_from_slice(b"\"name_bytes\":");
                        serde_json::to_writer(&mut *out, name).expect("writing to a Vec cannot fail");
                    }
                }
                out.extend_from_slice(format!(",\"size\":{}", node.amount).as_bytes());
                if !node.has_children() {
                    out.push(b'}');
                } else {
                    out.extend_from_slice(b",\"children\":[");
                    stack.push(Step::Close);
                    let kids: Vec<_> = node.children().collect();
                    for (name, child) in kids.into_iter().rev() {
                        stack.push(Step::Open(name, child));
                    }
                }
            }
            Step::Close => out.extend_from_slice(b"]}"),
        }
    }
}

/// Parse what [`write`] wrote.
pub fn read(text: &[u8]) -> Result<Vec<Root>, String> {
    let value: Value = serde_json::from_slice(text).map_err(|e| e.to_string())?;
    let roots = value
        .get("roots")
        .and_then(Value::as_array)
        .ok_or("no \"roots\" array")?;
    roots
        .iter()
        .map(|v| {
            let (name, amount, kids) = node(v)?;
            Ok(Root::new(&name, kids.into_node(amount)))
        })
        .collect()
}

fn node(v: &Value) -> Result<(Vec<u8>, u64, TreeBuilder), String> {
    let name: Vec<u8> = match (
        v.get("name").and_then(Value::as_str),
        v.get("name_bytes").and_then(Value::as_array),
    ) {
        (Some(s), _) => s.as_bytes().to_vec(),
        (None, Some(bytes)) => bytes
            .iter()
            .map(|b| b.as_u64().and_then(|b| u8::try_from(b).ok()).ok_or("bad name_bytes"))
            .collect::<Result<_, _>>()?,
        _ => return Err("an entry has no name".into()),
    };
    let amount = v.get("size").and_then(Value::as_u64).ok_or("an entry has no size")?;
    let mut kids = TreeBuilder::default();
    for child in v.get("children").and_then(Value::as_array).into_iter().flatten() {
        let (name, amount, grandkids) = node(child)?;
        kids.dir(&name, amount, grandkids);
    }
    Ok((name, amount, kids))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_including_non_utf8_names() {
        let mut e = TreeBuilder::default();
        e.leaf(b"f", 8);
        let mut d = TreeBuilder::default();
        d.leaf(b"\xffbad", 4);
        d.dir(b"e", 8, e);
        let tree = Root::new(b"d", d.into_node(12));
        let mut out = Vec::new();
        write(std::slice::from_ref(&tree), Measure::Disk, &mut out);
        assert_eq!(read(&out).unwrap(), vec![tree]);
    }
}
