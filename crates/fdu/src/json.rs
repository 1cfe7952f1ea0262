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

use crate::tree::TreeNode;

pub fn write(roots: &[TreeNode], measure: &str, out: &mut Vec<u8>) {
    out.extend_from_slice(format!("{{\"fdu\":1,\"measure\":\"{measure}\",\"roots\":[").as_bytes());
    for (i, root) in roots.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_node(root, out);
    }
    out.extend_from_slice(b"]}\n");
}

/// Depth-first with an explicit stack: deep trees must not exhaust ours.
fn write_node(root: &TreeNode, out: &mut Vec<u8>) {
    enum Step<'a> {
        Open(&'a TreeNode),
        Close,
    }
    let mut stack = vec![Step::Open(root)];
    let mut first = true;
    while let Some(step) = stack.pop() {
        match step {
            Step::Open(node) => {
                if !first && out.last() != Some(&b'[') {
                    out.push(b',');
                }
                first = false;
                out.push(b'{');
                match std::str::from_utf8(&node.name) {
                    Ok(name) => {
                        out.extend_from_slice(b"\"name\":");
                        serde_json::to_writer(&mut *out, name).expect("writing to a Vec cannot fail");
                    }
                    Err(_) => {
                        out.extend_from_slice(b"\"name_bytes\":");
                        serde_json::to_writer(&mut *out, &node.name).expect("writing to a Vec cannot fail");
                    }
                }
                out.extend_from_slice(format!(",\"size\":{}", node.amount).as_bytes());
                if node.children.is_empty() {
                    out.push(b'}');
                } else {
                    out.extend_from_slice(b",\"children\":[");
                    stack.push(Step::Close);
                    for child in node.children.iter().rev() {
                        stack.push(Step::Open(child));
                    }
                }
            }
            Step::Close => out.extend_from_slice(b"]}"),
        }
    }
}

/// Parse what [`write`] wrote.
pub fn read(text: &[u8]) -> Result<Vec<TreeNode>, String> {
    let value: Value = serde_json::from_slice(text).map_err(|e| e.to_string())?;
    let roots = value.get("roots").and_then(Value::as_array).ok_or("no \"roots\" array")?;
    roots.iter().map(node).collect()
}

fn node(v: &Value) -> Result<TreeNode, String> {
    let name: Box<[u8]> = match (v.get("name").and_then(Value::as_str), v.get("name_bytes").and_then(Value::as_array)) {
        (Some(s), _) => s.as_bytes().into(),
        (None, Some(bytes)) => bytes
            .iter()
            .map(|b| b.as_u64().and_then(|b| u8::try_from(b).ok()).ok_or("bad name_bytes"))
            .collect::<Result<_, _>>()?,
        _ => return Err("an entry has no name".into()),
    };
    let amount = v.get("size").and_then(Value::as_u64).ok_or("an entry has no size")?;
    let children = match v.get("children").and_then(Value::as_array) {
        Some(c) => c.iter().map(node).collect::<Result<Vec<_>, _>>()?,
        None => Vec::new(),
    };
    Ok(TreeNode::dir(name, amount, children))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_including_non_utf8_names() {
        let tree = TreeNode::dir(
            b"d"[..].into(),
            12,
            vec![
                TreeNode::leaf(b"\xffbad", 4),
                TreeNode::dir(b"e"[..].into(), 8, vec![TreeNode::leaf(b"f", 8)]),
            ],
        );
        let mut out = Vec::new();
        write(std::slice::from_ref(&tree), "disk", &mut out);
        assert_eq!(read(&out).unwrap(), vec![tree]);
    }
}
