//! The scanned tree, for the views that need all of it (`--tree`,
//! `--json`): one compact [`TreeNode`] per entry, built bottom-up as
//! directories complete ([`TreeBuilder`]), read top-down ([`TreeNode::children`]).

/// One entry of a scanned tree: 24 bytes, its name kept in its parent's
/// packed name buffer (so a file costs 24 bytes plus its name's bytes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeNode {
    pub amount: u64,
    name_start: u32,
    name_len: u32,
    kids: Option<Box<Kids>>,
}

/// A directory's entries: their names end to end, and the entries.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Kids {
    names: Box<[u8]>,
    nodes: Box<[TreeNode]>,
}

impl TreeNode {
    /// The entries inside, with their names.
    pub fn children(&self) -> impl ExactSizeIterator<Item = (&[u8], &TreeNode)> + '_ {
        let (names, nodes): (&[u8], &[TreeNode]) = match &self.kids {
            Some(k) => (&k.names, &k.nodes),
            None => (&[], &[]),
        };
        nodes
            .iter()
            .map(move |n| (&names[n.name_start as usize..(n.name_start + n.name_len) as usize], n))
    }

    pub fn child(&self, index: usize) -> (&[u8], &TreeNode) {
        let k = self.kids.as_ref().expect("index of an existing child");
        let n = &k.nodes[index];
        (&k.names[n.name_start as usize..(n.name_start + n.name_len) as usize], n)
    }

    pub fn is_empty(&self) -> bool {
        self.kids.is_none()
    }
}

/// A directory's entries as the scan gathers them.
#[derive(Debug, Default)]
pub struct TreeBuilder {
    names: Vec<u8>,
    nodes: Vec<TreeNode>,
}

impl TreeBuilder {
    pub fn leaf(&mut self, name: &[u8], amount: u64) {
        self.dir(name, amount, TreeBuilder::default());
    }

    /// A directory whose entries are in `kids`.
    pub fn dir(&mut self, name: &[u8], amount: u64, kids: TreeBuilder) {
        let name_start = self.names.len() as u32;
        self.names.extend_from_slice(name);
        self.nodes.push(TreeNode {
            amount,
            name_start,
            name_len: name.len() as u32,
            kids: kids.build(),
        });
    }

    /// Move `other`'s entries here (a worker's batch into its directory).
    pub fn append(&mut self, other: &mut TreeBuilder) {
        let base = self.names.len() as u32;
        self.names.append(&mut other.names);
        self.nodes.extend(other.nodes.drain(..).map(|n| TreeNode {
            name_start: n.name_start + base,
            ..n
        }));
    }

    fn build(self) -> Option<Box<Kids>> {
        (!self.nodes.is_empty()).then(|| {
            Box::new(Kids {
                names: self.names.into_boxed_slice(),
                nodes: self.nodes.into_boxed_slice(),
            })
        })
    }

    /// The node of a directory holding these entries.
    pub fn into_node(self, amount: u64) -> TreeNode {
        TreeNode {
            amount,
            name_start: 0,
            name_len: 0,
            kids: self.build(),
        }
    }
}

/// An operand's tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    pub name: Box<[u8]>,
    pub node: TreeNode,
}

impl Root {
    pub fn new(name: &[u8], node: TreeNode) -> Root {
        Root {
            name: name.into(),
            node,
        }
    }

    pub fn leaf(name: &[u8], amount: u64) -> Root {
        Root::new(name, TreeBuilder::default().into_node(amount))
    }
}
