"""Hierarchical accumulation and tree attention (Nguyen et al. 2020).

The fast path (matmuls + pair scatter-adds, fairseq_tree.modules) is checked against a slow, loop-based
transcription of the paper's eqs. (5)-(10) kept in this file, for the paper and the code variants.
"""

import random

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from fairseq_tree.modules.hierarchical_accumulation import VARIANTS, HierarchicalAccumulation
from fairseq_tree.modules.tree_attention import TreeMultiheadAttention
from fairseq_tree.modules.tree_structure import TreeStructure

torch.set_num_threads(1)


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


def make_module(variant, dh, H, din, hier=True, kh=100, kv=100, dtype=torch.float64):
    mod = HierarchicalAccumulation.from_variant(variant, dh, H, din, hier_embed=hier,
                                                max_horizontal=kh, max_vertical=kv).to(dtype)
    return mod


# ---------------------------------------------------------------------------------------- (a) parity
def check_parity(trees, variant, seed, kh=100, kv=100, hier=True, dtype=torch.float64, tol=1e-5):
    rng = random.Random(seed)
    g = torch.Generator().manual_seed(seed)
    H, dh, din = 2, 6, 5
    spans, node_pad, leaf_pad, leaf_pos, node_pos = collate(trees, rng, extra_n=rng.randint(0, 2),
                                                             extra_m=rng.randint(0, 2))
    tree = TreeStructure.build(spans, node_pad, leaf_pad, max_horizontal=kh, max_vertical=kv)
    B, N, M = len(trees), leaf_pad.size(1), node_pad.size(1)
    mod = make_module(variant, dh, H, din, hier, kh, kv, dtype)
    x = torch.randn(B, N, din, generator=g, dtype=dtype)
    vl = torch.randn(B, H, N, dh, generator=g, dtype=dtype)
    vn = torch.randn(B, H, M, dh, generator=g, dtype=dtype)
    # garbage in the padding: it must not leak
    vl = vl.masked_fill(leaf_pad[:, None, :, None], 1e4)
    vn = vn.masked_fill(node_pad[:, None, :, None], float("nan"))
    with torch.no_grad():
        w = mod.compute_weights(x.transpose(0, 1))
        out = mod(vl, vn, w, tree)
    assert out.shape == (B, H, M, dh) and out.dtype == dtype
    assert torch.isfinite(out).all()
    assert (out.masked_select(node_pad[:, None, :, None]) == 0).all()
    ev = mod.vertical_embed.weight.detach().double().numpy() if hier else None
    eh = mod.horizontal_embed.weight.detach().double().numpy() if hier else None
    for b, t in enumerate(trees):
        for h in range(H):
            wh = w[b, h if w.size(1) > 1 else 0, leaf_pos[b]].double().numpy()
            ref = reference_accumulation(
                t, vl[b, h, leaf_pos[b]].double().numpy(), vn[b, h, node_pos[b]].double().numpy(),
                wh, ev, eh, variant, hier)
            got = out[b, h, node_pos[b]].double().numpy()
            np.testing.assert_allclose(got, ref, atol=tol, rtol=tol)


@pytest.mark.parametrize("variant", ["paper", "code"])
@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2 ** 31 - 1), max_children=st.sampled_from([2, 3, 5]))
def test_parity_random_trees(variant, seed, max_children):
    rng = random.Random(seed)
    trees = [random_tree(rng, rng.randint(1, 11), max_children) for _ in range(rng.randint(1, 4))]
    check_parity(trees, variant, seed)


@pytest.mark.parametrize("variant", ["paper", "code"])
def test_parity_special_trees(variant):
    rng = random.Random(0)
    one_word = random_tree(rng, 1)
    assert one_word.m == 0
    chain = RefTree(7, [[("leaf", 5), ("leaf", 6)]] + [[("leaf", 4 - k), ("node", k)] for k in range(5)])
    assert chain.spans[-1] == (0, 7) and chain.m == 6
    trees = [one_word, bpe_tree(), chain, random_tree(rng, 9, 2)]
    check_parity(trees, variant, 1)
    check_parity([one_word], variant, 2)  # M = 0, Np = 0
    check_parity(trees, variant, 3, hier=False)
    # clamping of the indices at |E| (small tables, deep chain, long spans)
    check_parity(trees, variant, 4, kh=3, kv=2)
    # fp32 inputs
    check_parity(trees, variant, 5, dtype=torch.float32, tol=1e-5)


def test_fp16_computes_in_fp32():
    rng = random.Random(7)
    trees = [random_tree(rng, 8), random_tree(rng, 5)]
    spans, node_pad, leaf_pad, _, _ = collate(trees, rng)
    tree = TreeStructure.build(spans, node_pad, leaf_pad)
    mod = make_module("paper", 4, 2, 3, dtype=torch.float32)
    B, N, M = 2, leaf_pad.size(1), node_pad.size(1)
    vl = torch.randn(B, 2, N, 4).to(torch.bfloat16)
    vn = torch.randn(B, 2, M, 4).to(torch.bfloat16)
    w = mod.compute_weights(torch.randn(N, B, 3))
    ref = mod(vl.float(), vn.float(), w, tree)
    mod.to(torch.bfloat16)  # as under --bf16: the tables become bf16 too
    out = mod(vl, vn, w, tree)
    assert out.dtype == torch.bfloat16
    assert torch.allclose(out.float(), ref, atol=0.05, rtol=0.02)


# ---------------------------------------------------------------------------------------- (b) batch invariance
def _attention_pair(variant, E=16, H=4):
    torch.manual_seed(0)
    kw = dict(VARIANTS[variant])
    enc = TreeMultiheadAttention(E, H, self_attention=True, **kw).eval()
    dec = TreeMultiheadAttention(E, H, encoder_decoder_attention=True, **kw).eval()
    return enc, dec


@pytest.mark.parametrize("variant", ["paper", "code"])
def test_batch_invariance(variant):
    rng = random.Random(11)
    E, H, T = 16, 4, 3
    enc, dec = _attention_pair(variant, E, H)
    alone = random_tree(rng, 5)
    others = [random_tree(rng, 9), random_tree(rng, 1), random_tree(rng, 12, 2)]
    g = torch.Generator().manual_seed(3)
    x_leaves = torch.randn(alone.n, 1, E, generator=g)
    x_nodes = torch.randn(alone.m, 1, E, generator=g)
    y = torch.randn(T, 1, E, generator=g)

    def run(trees, slot, xl, xn, yq):
        spans, node_pad, leaf_pad, leaf_pos, node_pos = collate(trees, rng, extra_n=1, extra_m=1)
        tree = TreeStructure.build(spans, node_pad, leaf_pad)
        B, N, M = len(trees), leaf_pad.size(1), node_pad.size(1)
        L = torch.randn(N, B, E, generator=g) * 5  # garbage everywhere, real rows overwritten
        Nd = torch.randn(M, B, E, generator=g) * 5
        L[leaf_pos[slot], slot] = xl[:, 0]
        Nd[node_pos[slot], slot] = xn[:, 0]
        Y = torch.randn(T, B, E, generator=g)
        Y[:, slot] = yq[:, 0]
        with torch.no_grad():
            out, _ = enc(torch.cat([L, Nd]), tree)
            vl = enc._heads(enc.v_proj(L))
            vn = enc._heads(enc.v_proj(Nd))
            acc = enc.accumulation(vl, vn, enc.accumulation.compute_weights(L), tree)
            cross, _ = dec(Y, torch.cat([L, Nd]), tree)
        return (out[leaf_pos[slot], slot], out[[N + i for i in node_pos[slot]], slot],
                acc[slot][:, node_pos[slot]], cross[:, slot])

    single = run([alone], 0, x_leaves, x_nodes, y)
    for slot in range(4):
        trees = others[:slot] + [alone] + others[slot:]
        batched = run(trees, slot, x_leaves, x_nodes, y)
        for a, b in zip(single, batched):
            assert torch.allclose(a, b, atol=1e-6, rtol=0), (a - b).abs().max()


# ---------------------------------------------------------------------------------------- (c) gradients
@pytest.mark.parametrize("variant", ["paper", "code"])
def test_gradients_reach_parameters(variant):
    rng = random.Random(5)
    trees = [bpe_tree(), random_tree(rng, 7)]
    spans, node_pad, leaf_pad, _, _ = collate(trees, rng)
    tree = TreeStructure.build(spans, node_pad, leaf_pad)
    E, H = 16, 4
    enc = TreeMultiheadAttention(E, H, self_attention=True, **VARIANTS[variant])
    N, M = leaf_pad.size(1), node_pad.size(1)
    x = torch.randn(N + M, 2, E, requires_grad=True)
    vn = torch.randn(2, H, M, E // H, requires_grad=True)
    vl = enc._heads(enc.v_proj(x[:N]))
    w = enc.accumulation.compute_weights(x[:N])
    acc = enc.accumulation(vl, vn, w, tree)
    out, _ = enc(x, tree)
    ((acc * torch.randn_like(acc)).sum() + (out * torch.randn_like(out)).sum()).backward()
    acc_mod = enc.accumulation
    u = acc_mod.weight_proj.weight  # u_s ([1, d]) or the per-head Linear
    for name, p in [("u_s", u), ("vertical_embed", acc_mod.vertical_embed.weight),
                    ("horizontal_embed", acc_mod.horizontal_embed.weight), ("node values", vn),
                    ("v_proj", enc.v_proj.weight), ("input", x)]:
        assert p.grad is not None and torch.isfinite(p.grad).all() and p.grad.abs().sum() > 0, name
    # padded node values get no gradient (they are invisible)
    assert (vn.grad.masked_select(node_pad[:, None, :, None]) == 0).all()
    # only the embedding rows of indices that occur are touched
    assert (acc_mod.horizontal_embed.weight.grad[7:] == 0).all()


@pytest.mark.parametrize("variant", ["paper", "code"])
def test_leaf_weight_gradients_through_tree_attention_match_finite_differences(variant):
    """w = L u_s (eq. 16; the code: a per-head Linear): the encoder self-attention's output, through the
    accumulated node values, gives u_s and the leaf states L the gradient that central finite differences of
    the forward give (float64), and u_s's is not zero."""
    rng = random.Random(2)
    trees = [bpe_tree(), random_tree(rng, 4)]
    spans, node_pad, leaf_pad, _, _ = collate(trees, rng)
    tree = TreeStructure.build(spans, node_pad, leaf_pad)
    E, H = 8, 2
    torch.manual_seed(0)
    enc = TreeMultiheadAttention(E, H, self_attention=True, **VARIANTS[variant]).double().eval()
    name = "accumulation.weight_proj.weight"
    N, M = leaf_pad.size(1), node_pad.size(1)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(N + M, 2, E, generator=g, dtype=torch.float64)
    probe = torch.randn(N + M, 2, E, generator=g, dtype=torch.float64)
    u0 = dict(enc.named_parameters())[name].detach().clone()

    def loss(u, xx):
        out, _ = torch.func.functional_call(enc, {name: u}, (xx, tree))
        return (out * probe).sum()

    u, xg = u0.clone().requires_grad_(), x.clone().requires_grad_()
    gu, gx = torch.autograd.grad(loss(u, xg), (u, xg))

    def numeric(f, t, eps=1e-6):
        out = torch.zeros_like(t)
        flat = out.view(-1)
        for k in range(t.numel()):
            d = torch.zeros_like(t).view(-1)
            d[k] = eps
            flat[k] = (f(t + d.view_as(t)) - f(t - d.view_as(t))) / (2 * eps)
        return out

    with torch.no_grad():
        nu = numeric(lambda t: loss(t, x), u0)
        nx = numeric(lambda t: loss(u0, torch.cat([t, x[N:]])), x[:N])  # the leaf rows: w's input
    assert nu.abs().max() > 1e-3  # the output depends on u_s
    torch.testing.assert_close(gu, nu, atol=1e-7, rtol=1e-6)
    torch.testing.assert_close(gx[:N], nx, atol=1e-7, rtol=1e-6)


def reference_tree_attention(mod, tree, queries, leaves, nodes, variant, self_attention):
    """Eqs. (12)-(18) (encoder: queries [leaves; nodes], keys the same, subtree mask of Section 4.3) or
    (21)-(24) (decoder: keys [nodes; leaves], no mask) written out for one sentence in numpy float64, head by
    head, with the projections of ``mod`` and N' from :func:`reference_accumulation`. queries [T, E], leaves
    [n, E], nodes [m, E]."""
    P = {k: v.detach().double().numpy() for k, v in mod.named_parameters()}
    lin = lambda x, name: x @ P[f"{name}.weight"].T + P[f"{name}.bias"]  # noqa: E731
    H, dh = mod.num_heads, mod.head_dim
    acc = mod.accumulation
    ev = P["accumulation.vertical_embed.weight"]
    eh = P["accumulation.horizontal_embed.weight"]
    w = leaves @ P["accumulation.weight_proj.weight"].T  # eq. 16: w = L u_s [n, 1] (code: [n, H] + bias)
    if acc.leaf_weights == "per_head":
        w = w + P["accumulation.weight_proj.bias"]
    q = lin(queries, "q_proj") * dh ** -0.5
    keys = np.concatenate([leaves, nodes] if self_attention else [nodes, leaves])
    k = lin(keys, "k_proj")
    vl, vn = lin(leaves, "v_proj"), lin(nodes, "v_proj")
    n, m = len(leaves), len(nodes)
    allowed = np.ones((len(queries), n + m), dtype=bool)
    if self_attention:  # Section 4.3: a leaf query sees the leaves only; a node query the leaves it spans
        allowed[:n, n:] = False  # and the nodes of its subtree
        for i in range(m):
            allowed[n + i] = False
            allowed[n + i, sorted(tree.leaves(i))] = True
            allowed[n + i, [n + t for t in tree.subtree(i)]] = True
    heads = []
    for h in range(H):
        sl = slice(h * dh, (h + 1) * dh)
        acc_h = reference_accumulation(tree, vl[:, sl], vn[:, sl], w[:, h if w.shape[1] > 1 else 0], ev, eh,
                                       variant) if m else np.zeros((0, dh))
        v = np.concatenate([vl[:, sl], acc_h] if self_attention else [acc_h, vl[:, sl]])
        scores = np.where(allowed, q[:, sl] @ k[:, sl].T, -np.inf)
        probs = np.exp(scores - scores.max(1, keepdims=True))
        heads.append((probs / probs.sum(1, keepdims=True)) @ v)
    return lin(np.concatenate(heads, 1), "out_proj")


@pytest.mark.parametrize("variant", ["paper", "code"])
@pytest.mark.parametrize("need_weights", [False, True])
def test_tree_attention_is_eqs_12_to_24_written_out(variant, need_weights):
    """Both attention modes, on a padded batch, against :func:`reference_tree_attention` sentence by
    sentence: the projections, [L W_V; N'] values, the subtree mask and the [nodes; leaves] cross keys."""
    rng = random.Random(4)
    E, H, T = 12, 3, 3
    torch.manual_seed(0)
    kw = dict(VARIANTS[variant])
    enc = TreeMultiheadAttention(E, H, self_attention=True, **kw).double().eval()
    dec = TreeMultiheadAttention(E, H, encoder_decoder_attention=True, **kw).double().eval()
    for mod in (enc, dec):  # non-zero biases, so a dropped bias shows
        for name, p in mod.named_parameters():
            if name.endswith("bias"):
                torch.nn.init.uniform_(p, -0.5, 0.5)
    trees = [bpe_tree(), random_tree(rng, 5, 2), random_tree(rng, 1)]
    spans, node_pad, leaf_pad, leaf_pos, node_pos = collate(trees, rng, extra_n=1, extra_m=1)
    tree = TreeStructure.build(spans, node_pad, leaf_pad)
    N = leaf_pad.size(1)
    x = torch.randn(N + node_pad.size(1), len(trees), E, dtype=torch.float64)
    y = torch.randn(T, len(trees), E, dtype=torch.float64)
    with torch.no_grad():
        out, _ = enc(x, tree, need_weights=need_weights)
        cross, _ = dec(y, x, tree, need_weights=need_weights)
    for b, t in enumerate(trees):
        leaves = x[leaf_pos[b], b].numpy()
        nodes = x[[N + i for i in node_pos[b]], b].numpy().reshape(t.m, E)
        rows = leaf_pos[b] + [N + i for i in node_pos[b]]
        ref = reference_tree_attention(enc, t, np.concatenate([leaves, nodes]), leaves, nodes, variant, True)
        np.testing.assert_allclose(out[rows, b].numpy(), ref, atol=1e-10)
        ref = reference_tree_attention(dec, t, y[:, b].numpy(), leaves, nodes, variant, False)
        np.testing.assert_allclose(cross[:, b].numpy(), ref, atol=1e-10)


# ---------------------------------------------------------------------------------------- (d) masks
def test_subtree_mask_hand_made():
    # ((a b) c): node 0 = (0, 2), node 1 = root (0, 3). Layout [a, b, c, n0, n1].
    spans = torch.tensor([[[0, 2], [0, 3]]])
    tree = TreeStructure.build(spans, torch.tensor([[False, False]]), torch.tensor([[False] * 3]))
    expected = torch.tensor([
        # a  b  c  n0 n1
        [1, 1, 1, 0, 0],  # a
        [1, 1, 1, 0, 0],  # b
        [1, 1, 1, 0, 0],  # c
        [1, 1, 0, 1, 0],  # n0 sees its leaves and itself
        [1, 1, 1, 1, 1],  # root sees everything
    ], dtype=torch.bool)
    assert torch.equal(tree.self_attn_mask[0], expected)
    # the decoder's key bias: every real leaf and node, [leaves; nodes]; rows padded to a stride of 8
    assert tree.attn_bias("cross", torch.float32).tolist() == [[[[0.0] * 5]]]
    assert tree.attn_bias("self", torch.float32).stride(-2) == 8
    assert tree.depth.tolist() == [[2, 1]]
    assert tree.P.tolist() == [[[1, 1, 0], [2, 2, 1]]]  # nodes on the path leaf -> node
    assert tree.horizontal.tolist() == [[[1, 2, 0], [1, 2, 3]]]
    clamped = TreeStructure.build(spans, None, None, max_horizontal=2, max_vertical=1, num_leaves=3)
    assert clamped.horizontal.tolist() == [[[1, 2, 0], [1, 2, 2]]]
    assert clamped.vertical_path.tolist() == [[[1, 1, 0], [1, 1, 1]]]
    assert clamped.vertical_depth.tolist() == [[[1, 1, 0], [1, 1, 1]]]
    assert clamped.pair_horizontal.tolist() == [[1, 2, 1, 2, 2]]  # pairs (0,0) (0,1) (1,0) (1,1) (1,2)

    # the same tree left-padded by one leaf and one node next to a 4-leaf sentence (a (b (c d)))
    spans = torch.tensor([[[9, 9], [0, 2], [0, 3]], [[2, 4], [1, 4], [0, 4]]])
    node_pad = torch.tensor([[True, False, False], [False, False, False]])
    leaf_pad = torch.tensor([[True, False, False, False], [False] * 4])
    tree = TreeStructure.build(spans, node_pad, leaf_pad)
    # layout [pad, a, b, c, pad-node, n0, n1]; a padded query sees itself only
    expected = torch.tensor([
        [1, 0, 0, 0, 0, 0, 0],
        [0, 1, 1, 1, 0, 0, 0],
        [0, 1, 1, 1, 0, 0, 0],
        [0, 1, 1, 1, 0, 0, 0],
        [0, 0, 0, 0, 1, 0, 0],
        [0, 1, 1, 0, 0, 1, 0],
        [0, 1, 1, 1, 0, 1, 1],
    ], dtype=torch.bool)
    assert torch.equal(tree.self_attn_mask[0], expected)
    # the decoder's key bias over [leaves; nodes]: -inf on the padded leaf and node
    inf = float("-inf")
    assert tree.attn_bias("cross", torch.float32)[0, 0, 0].tolist() == [inf, 0, 0, 0, inf, 0, 0]
    assert torch.equal(tree.attn_bias("self", torch.float16)[0, 0] == 0, expected)
    assert tree.depth.tolist() == [[0, 2, 1], [3, 2, 1]]


# ---------------------------------------------------------------------------------------- (e) no NaN
@pytest.mark.parametrize("need_weights", [False, True])
def test_no_nan_single_word_and_padding(need_weights):
    E, H = 16, 4
    enc, dec = _attention_pair("paper", E, H)
    # one-word sentence alone: M = 0
    tree = TreeStructure.build(torch.zeros(1, 0, 2, dtype=torch.long), torch.zeros(1, 0, dtype=torch.bool),
                               torch.zeros(1, 1, dtype=torch.bool))
    out, attn = enc(torch.randn(1, 1, E), tree, need_weights=need_weights)
    assert out.shape == (1, 1, E) and torch.isfinite(out).all()
    cross, _ = dec(torch.randn(2, 1, E), torch.randn(1, 1, E), tree,
                   need_weights=need_weights)
    assert torch.isfinite(cross).all()
    # a batch where the one-word sentence has only padded node rows and leaf padding
    rng = random.Random(1)
    trees = [random_tree(rng, 1), random_tree(rng, 6)]
    spans, node_pad, leaf_pad, leaf_pos, node_pos = collate(trees, rng)
    tree = TreeStructure.build(spans, node_pad, leaf_pad)
    N, M = leaf_pad.size(1), node_pad.size(1)
    x = torch.randn(N + M, 2, E)
    out, attn = enc(x, tree, need_weights=need_weights)
    assert torch.isfinite(out).all()
    pad = torch.cat([leaf_pad, node_pad], 1).t()
    assert (out[pad] == 0).all()
    if need_weights:
        assert torch.isfinite(attn).all()
        assert torch.allclose(attn.sum(-1), torch.ones_like(attn.sum(-1)))
    cross, _ = dec(torch.randn(3, 2, E), x, tree, need_weights=need_weights)
    assert torch.isfinite(cross).all()


# ---------------------------------------------------------------------------------------- attention API
def test_sdpa_matches_explicit_and_masks_are_respected():
    rng = random.Random(2)
    E, H = 16, 4
    enc, dec = _attention_pair("paper", E, H)
    trees = [random_tree(rng, 7), random_tree(rng, 4)]
    spans, node_pad, leaf_pad, _, _ = collate(trees, rng)
    tree = TreeStructure.build(spans, node_pad, leaf_pad)
    N, M = leaf_pad.size(1), node_pad.size(1)
    x = torch.randn(N + M, 2, E)
    fast, _ = enc(x, tree)
    slow, attn = enc(x, tree, need_head_weights=True)
    assert torch.allclose(fast, slow, atol=1e-6)
    assert attn.shape == (H, 2, N + M, N + M)
    assert (attn[:, ~tree.self_attn_mask] == 0).all()
    # -SubMask ablation: the real rows see every real key
    enc.subtree_mask = False
    _, attn = enc(x, tree, need_weights=True)
    real = torch.cat([tree.leaf_mask, tree.node_mask], 1)
    assert ((attn > 0) == (real[:, :, None] & real[:, None, :]) | ((attn > 0) & ~real[:, :, None])).all()
    y = torch.randn(3, 2, E)
    a, _ = dec(y, x, tree)
    b, w = dec(y, x, tree, need_weights=True)
    assert torch.allclose(a, b, atol=1e-6) and w.shape == (2, 3, M + N)
    keys = torch.cat([tree.node_mask, tree.leaf_mask], 1)  # the weights' order: [nodes; leaves] (eq. 24)
    assert (w[~keys[:, None, :].expand(2, 3, M + N)] == 0).all() and (w[keys[:, None, :].expand(2, 3, M + N)] > 0).all()


def test_incremental_cross_attention_and_beam_reorder():
    rng = random.Random(3)
    E, H, beam = 16, 4, 2
    _, dec = _attention_pair("code", E, H)
    trees = [random_tree(rng, 6), random_tree(rng, 3)]
    spans, node_pad, leaf_pad, _, _ = collate(trees, rng)
    tree = TreeStructure.build(spans, node_pad, leaf_pad)
    N, M = leaf_pad.size(1), node_pad.size(1)
    leaves, nodes = torch.randn(N, 2, E), torch.randn(M, 2, E)
    # expand to the beam, as fairseq's reorder_encoder_out does
    order = torch.arange(2).repeat_interleave(beam)
    enc_b, tree_b = torch.cat([leaves, nodes])[:, order], tree.index_select(order)
    y = torch.randn(4, 2 * beam, E)
    full, _ = dec(y, enc_b, tree_b)
    state = {}
    steps = [dec(y[s:s + 1], enc_b, tree_b, incremental_state=state)[0] for s in range(2)]
    # the cache is used from then on: no encoder input needed
    steps += [dec(y[s:s + 1], incremental_state=state)[0] for s in range(2, 4)]
    assert torch.allclose(torch.cat(steps), full, atol=1e-6)
    # precomputed encoder (k, v, mask) gives the same
    kv = dec.encoder_kv(enc_b, tree_b)
    assert torch.allclose(dec(y, encoder_kv=kv)[0], full, atol=1e-6)
    # batch shrinks to sentence 1 only: the cache follows
    keep = torch.tensor([2, 3])
    dec.reorder_incremental_state(state, keep)
    out, _ = dec(y[:1, keep], incremental_state=state)
    assert torch.allclose(out, full[:1, keep], atol=1e-6)


def test_per_batch_weights_hand_computed_and_not_shared_by_copies():
    """TreeStructure.mean_weights / pair_weights (built once per batch, shared by the layers) on the tree
    ((w0 w1) w2): A = [[1,1,0],[1,1,1]], D = [[1,0],[1,1]], P = D A = [[1,1,0],[2,2,1]], c = [2, 3];
    eq. 6 with the leaf counted (|C| = P + 1) or not (max(P, 1)); pairs (t, j) node-major:
    (0,0) (0,1) (1,0) (1,1) (1,2). A reordered copy starts with an empty cache."""
    tree = TreeStructure.build(torch.tensor([[[0, 2], [0, 3]]]), None, None, num_leaves=3)
    paper = torch.tensor([[[1 / 4, 1 / 4, 0], [1 / 9, 1 / 9, 1 / 6]]])
    code = torch.tensor([[[1 / 2, 1 / 2, 0], [1 / 6, 1 / 6, 1 / 3]]])
    torch.testing.assert_close(tree.mean_weights(True), paper)
    torch.testing.assert_close(tree.mean_weights(False), code)
    torch.testing.assert_close(tree.pair_weights(True), torch.tensor(
        [[[1 / 4, 1 / 4, 0, 0, 0], [1 / 9, 1 / 9, 1 / 9, 1 / 9, 1 / 6]]]))
    assert tree.mean_weights(True) is tree.mean_weights(True)  # cached
    assert tree.mean_weights(True, torch.float64).dtype == torch.float64
    copy = tree.index_select(torch.tensor([0, 0]))
    assert copy.materialize()._cache == {} and copy.mean_weights(True).shape == (2, 2, 3)


def test_reordered_tree_is_lazy_and_composes():
    """Beam search reorders the tree at every step: ReorderedTree answers sizes without building anything,
    composes successive orders, and builds the same structure as one eager index_select."""
    tree = TreeStructure.build(torch.tensor([[[0, 2], [0, 3]], [[1, 3], [0, 3]]]), None, None, num_leaves=3)
    r = tree.index_select(torch.tensor([1, 0, 1])).index_select(torch.tensor([2, 2, 0, 1]))
    assert (r.batch_size, r.num_leaves, r.num_nodes) == (4, 3, 2) and r._tree is None
    eager = tree._map(lambda t: t.index_select(0, torch.tensor([1, 1, 1, 0])))
    assert torch.equal(r.self_attn_mask, eager.self_attn_mask) and torch.equal(r.pair_D, eager.pair_D)
    assert r.materialize() is r.materialize()


def test_pair_embedding_sum_gradients_match_finite_differences():
    """PairEmbeddingSum (the hierarchical-embedding term over (node, leaf) pairs, whose backward looks the
    embedding rows up again instead of keeping them) against torch.autograd.gradcheck, float64, two heads,
    repeated and padded (weight 0) pairs."""
    from fairseq_tree.modules.hierarchical_accumulation import PairEmbeddingSum

    g = torch.Generator().manual_seed(0)
    B, Hw, M, Np, Kv, Kh = 2, 2, 3, 5, 4, 3
    w_pairs = torch.randn(B, Hw, Np, generator=g, dtype=torch.float64, requires_grad=True)
    pw = torch.rand(B, M, Np, generator=g, dtype=torch.float64)
    pw[1, :, -1] = 0.0  # a padded pair
    iv = torch.tensor([[0, 1, 1, 3, 0], [2, 2, 0, 1, 0]])
    ih = torch.tensor([[2, 0, 1, 1, 0], [1, 1, 2, 0, 0]])
    ev = torch.randn(Kv, 2, generator=g, dtype=torch.float64, requires_grad=True)
    eh = torch.randn(Kh, 3, generator=g, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda w, a, b: PairEmbeddingSum.apply(w, pw, iv, ih, a, b), (w_pairs, ev, eh))
    # the forward against its definition written out
    out = PairEmbeddingSum.apply(w_pairs, pw, iv, ih, ev, eh)
    for b in range(B):
        for h in range(Hw):
            for i in range(M):
                ref = sum(pw[b, i, p] * w_pairs[b, h, p] * torch.cat([ev[iv[b, p]], eh[ih[b, p]]]) for p in range(Np))
                torch.testing.assert_close(out[b, h, i], ref)


@pytest.mark.parametrize("need_weights", [False, True])
def test_tree_attention_in_bf16_follows_fp32(need_weights):
    """The whole attention in half precision (the model cast, as under --bf16): the additive mask biases are made
    in the query's dtype (SDPA refuses others), the accumulation runs in fp32 inside, and both modes stay within
    bf16 rounding of the fp32 module; gradients are finite."""
    rng = random.Random(4)
    E, H = 16, 4
    enc, dec = _attention_pair("paper", E, H)
    trees = [bpe_tree(), random_tree(rng, 9), random_tree(rng, 1)]
    spans, node_pad, leaf_pad, _, _ = collate(trees, rng, extra_n=1)
    tree = TreeStructure.build(spans, node_pad, leaf_pad)
    N, M = leaf_pad.size(1), node_pad.size(1)
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(N + M, 3, E, generator=g), torch.randn(2, 3, E, generator=g)
    ref_self, _ = enc(x, tree, need_weights=need_weights)
    ref_cross, _ = dec(y, x, tree, need_weights=need_weights)
    enc, dec = enc.to(torch.bfloat16), dec.to(torch.bfloat16)
    xb = x.to(torch.bfloat16).requires_grad_()
    out_self, _ = enc(xb, tree, need_weights=need_weights)
    out_cross, _ = dec(y.to(torch.bfloat16), xb, tree, need_weights=need_weights)
    assert out_self.dtype == out_cross.dtype == torch.bfloat16
    torch.testing.assert_close(out_self.float(), ref_self, atol=0.05, rtol=0.05)
    torch.testing.assert_close(out_cross.float(), ref_cross, atol=0.05, rtol=0.05)
    (out_self.float().sum() + out_cross.float().sum()).backward()
    assert torch.isfinite(xb.grad.float()).all() and xb.grad.abs().sum() > 0
