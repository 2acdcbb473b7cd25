"""Reference trees and transcriptions for the tree2seq tests (Nguyen et al. 2020): trees as nested children
lists (independent of the span arithmetic under test), a loop-based transcription of eqs. (5)-(10), padded
batching, and a pair of tree attentions."""

import numpy as np
import torch

from fairseq_tree.modules.hierarchical_accumulation import VARIANTS
from fairseq_tree.modules.tree_attention import TreeMultiheadAttention


# ---------------------------------------------------------------------------------------- trees
class RefTree:
    """A tree as nested children lists (independent of the span arithmetic under test).

    ``children[i]``: list of ("leaf", j) / ("node", t); nodes in post-order, root last."""

    def __init__(self, n, children):
        self.n, self.children = n, children
        self.m = len(children)
        self.spans = [(min(self.leaves(i)), max(self.leaves(i)) + 1) for i in range(self.m)]

    def leaves(self, i):
        out = set()
        for kind, x in self.children[i]:
            out |= {x} if kind == "leaf" else self.leaves(x)
        return out

    def subtree(self, i):  # R(x_i): nodes of the subtree rooted at i, i included
        out = {i}
        for kind, x in self.children[i]:
            if kind == "node":
                out |= self.subtree(x)
        return out

    def depth(self, i):  # root = 1
        parents = {x: p for p in range(self.m) for kind, x in self.children[p] if kind == "node"}
        d = 1
        while i in parents:
            i, d = parents[i], d + 1
        return d


def random_tree(rng, n, max_children=4):
    """Random n-ary tree over n leaves, every node >= 2 children (canonical form); n == 1 -> m == 0."""
    children = []

    def build(s, e):
        if e - s == 1:
            return ("leaf", s)
        k = rng.randint(2, min(max_children, e - s))
        cuts = sorted(rng.sample(range(s + 1, e), k - 1))
        bounds = [s] + cuts + [e]
        kids = [build(a, b) for a, b in zip(bounds, bounds[1:])]
        children.append(kids)
        return ("node", len(children) - 1)

    build(0, n)
    return RefTree(n, children)


def bpe_tree():
    """(S (NP the cat@@ s) (VP sat@@ down)) after BPE: 'cats' -> 'cat@@ s', 'sat' -> 'sa@@ t'.
    Leaves: the cat@@ s sa@@ t down (6); nodes: NN(1,3) NP(0,3) VBD(3,5) VP(3,6) S(0,6)."""
    return RefTree(6, [
        [("leaf", 1), ("leaf", 2)],
        [("leaf", 0), ("node", 0)],
        [("leaf", 3), ("leaf", 4)],
        [("node", 2), ("leaf", 5)],
        [("node", 1), ("node", 3)],
    ])


# ---------------------------------------------------------------------------------------- reference
def reference_accumulation(tree, l, nodes, w, ev, eh, variant, hier=True):
    """Direct transcription of eqs. (5)-(10) for one sentence and one head (numpy, float64).

    l [n, d] leaf values, nodes [m, d] node values, w [n] weights, ev [Kv, d_v] / eh [Kh, d_h] tables.
    Row r of S / E is the paper's row r + 1 (row 0 = leaves, row t + 1 = node t)."""
    n, d = l.shape
    m = tree.m
    paper = variant == "paper"
    S = np.zeros((m + 1, n, d))
    E = np.zeros((m + 1, n, d))
    S[0] = l  # eq. 5, i = 1
    for t in range(m):
        for j in tree.leaves(t):
            S[t + 1, j] = nodes[t]  # eq. 5, x_j in R(x_t)
            if hier:  # eq. 9
                V = sum(1 for u in tree.subtree(t) if j in tree.leaves(u))  # |V_j^t|
                H = sum(1 for u in tree.leaves(t) if u <= j)  # |H_j^t|
                vert = V if paper else tree.depth(t)
                E[t + 1, j] = np.concatenate([ev[min(vert, len(ev)) - 1], eh[min(H, len(eh)) - 1]])
    T = S + E  # eq. 10
    out = np.zeros((m, d))
    for i in range(m):
        acc = np.zeros((n, d))  # U(S)_i (eq. 6)
        for j in range(n):
            if j not in tree.leaves(i):
                continue  # S_{i+1, j} = 0
            C = [T[0, j]] + [T[t + 1, j] for t in sorted(tree.subtree(i)) if j in tree.leaves(t)]
            acc[j] = np.sum(C, 0) / (len(C) if paper else len(C) - 1)
        leaves = tree.leaves(i)
        out[i] = sum(w[j] * acc[j] for j in leaves) / len(leaves)  # eq. 7
    return out


# ---------------------------------------------------------------------------------------- batching
def collate(trees, rng, pad_value=1e3, extra_n=0, extra_m=0):
    """Pack trees into [B, N] / [B, M] slots with padding on a random side (left or right, leaves and
    nodes independently). Padded spans get garbage. Returns (spans, node_pad, leaf_pad, leaf_pos,
    node_pos) with leaf_pos[b][j] / node_pos[b][i] the slot of leaf j / node i."""
    B = len(trees)
    N = max(t.n for t in trees) + extra_n
    M = max(t.m for t in trees) + extra_m
    spans = torch.randint(0, N + 1, (B, M, 2))
    node_pad = torch.ones(B, M, dtype=torch.bool)
    leaf_pad = torch.ones(B, N, dtype=torch.bool)
    leaf_pos, node_pos = [], []
    for b, t in enumerate(trees):
        lo = rng.choice([0, N - t.n])
        no = rng.choice([0, M - t.m])
        leaf_pad[b, lo:lo + t.n] = False
        node_pad[b, no:no + t.m] = False
        for i, s in enumerate(t.spans):
            spans[b, no + i] = torch.tensor(s)
        leaf_pos.append([lo + j for j in range(t.n)])
        node_pos.append([no + i for i in range(t.m)])
    return spans, node_pad, leaf_pad, leaf_pos, node_pos


def _attention_pair(variant, E=16, H=4):
    torch.manual_seed(0)
    kw = dict(VARIANTS[variant])
    enc = TreeMultiheadAttention(E, H, self_attention=True, **kw).eval()
    dec = TreeMultiheadAttention(E, H, encoder_decoder_attention=True, **kw).eval()
    return enc, dec
