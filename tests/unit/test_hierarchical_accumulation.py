"""Hierarchical accumulation (Nguyen et al. 2020, eqs. 5-10, 16).

The fast path (matmuls over the batch's structure and the (node, leaf) pairs, fairseq_tree.modules) is checked
against a slow, loop-based transcription of the paper's eqs. (5)-(10) (tests/tree_reference.py), for the paper
and the code variants; the tree attention is tested in test_tree_attention.py.
"""

import random

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from tree_reference import RefTree, bpe_tree, collate, random_tree, reference_accumulation

from fairseq_tree.modules.hierarchical_accumulation import VARIANTS, HierarchicalAccumulation
from fairseq_tree.modules.tree_attention import TreeMultiheadAttention
from fairseq_tree.modules.tree_structure import TreeStructure

torch.set_num_threads(1)


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


@pytest.mark.parametrize("variant", ["paper", "code"])
def test_autocast_runs_the_accumulation_in_fp32(variant):
    """Under bf16 autocast (--amp, and the GPU's --bf16 --amp), with fp32 parameters: the leaf weights, the
    accumulation and the pair-embedding term run in fp32 (autocast would run their matmuls in bf16) and their
    backward runs (it used to fail: a bf16 gradient met fp32 pair weights). Same inputs, as bf16-rounded
    projections give them, against the same module without autocast: the forward at bf16 rounding of the output,
    the gradients of the weights' projection and both embedding tables at fp32 rounding."""
    rng = random.Random(11)
    trees = [random_tree(rng, 9, 3), random_tree(rng, 6), random_tree(rng, 1)]
    spans, node_pad, leaf_pad, _, _ = collate(trees, rng)
    tree = TreeStructure.build(spans, node_pad, leaf_pad)
    mod = make_module(variant, 8, 2, 6, dtype=torch.float32)
    B, N, M = len(trees), leaf_pad.size(1), node_pad.size(1)
    g = torch.Generator().manual_seed(3)
    leaves = torch.randn(N, B, 6, generator=g)
    values = torch.randn(B, 2, N + M, 8, generator=g).to(torch.bfloat16)  # a projection's output under autocast
    probe = torch.randn(B, 2, M, 8, generator=g).to(torch.bfloat16)

    def run(autocast):
        mod.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            w = mod.compute_weights(leaves)
            out = mod.accumulate(values if autocast else values.float(), w, tree)
        (out.float() * probe.float()).sum().backward()
        grads = [p.grad.clone() for p in (mod.weight_proj.weight, mod.vertical_embed.weight,
                                          mod.horizontal_embed.weight)]
        return w, out, grads

    w_ref, out_ref, grads_ref = run(False)
    w, out, grads = run(True)
    assert w.dtype == torch.float32 and out.dtype == torch.bfloat16
    torch.testing.assert_close(w, w_ref, rtol=1e-6, atol=1e-6)  # a bf16 linear is off by ~1e-2
    torch.testing.assert_close(out, out_ref.to(torch.bfloat16), rtol=0.01, atol=1e-6)
    for a, b in zip(grads, grads_ref):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


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


@pytest.mark.parametrize("Hw", [1, 2])
def test_pair_embedding_sum_gradients_match_finite_differences(Hw):
    """PairEmbeddingSum (the hierarchical-embedding term over (node, leaf) pairs, whose backward looks the
    embedding rows up again instead of keeping them) against torch.autograd.gradcheck, float64, one weight vector
    (its 3-D path) and two heads, repeated and padded (weight 0) pairs."""
    from fairseq_tree.modules.hierarchical_accumulation import PairEmbeddingSum

    g = torch.Generator().manual_seed(0)
    B, M, Np, Kv, Kh = 2, 3, 5, 4, 3
    w_pairs = torch.randn(B, Hw, Np, generator=g, dtype=torch.float64, requires_grad=True)
    pw = torch.rand(B, M, Np, generator=g, dtype=torch.float64)
    pw[1, :, -1] = 0.0  # a padded pair
    iv = torch.tensor([[0, 1, 1, 3, 0], [2, 2, 0, 1, 0]])
    ih = torch.tensor([[2, 0, 1, 1, 0], [1, 1, 2, 0, 0]])
    ev = torch.randn(Kv, 2, generator=g, dtype=torch.float64, requires_grad=True)
    eh = torch.randn(Kh, 3, generator=g, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda w, a, b: PairEmbeddingSum.apply(w, pw, iv, ih, a, b), (w_pairs, ev, eh))
    # one table frozen (e.g. a fine-tuning that fixes the vertical or the horizontal embeddings): the other still
    # gets its gradient
    assert torch.autograd.gradcheck(lambda a: PairEmbeddingSum.apply(w_pairs, pw, iv, ih, a, eh.detach()), (ev,))
    assert torch.autograd.gradcheck(lambda b: PairEmbeddingSum.apply(w_pairs, pw, iv, ih, ev.detach(), b), (eh,))
    # the forward against its definition written out
    out = PairEmbeddingSum.apply(w_pairs, pw, iv, ih, ev, eh)
    for b in range(B):
        for h in range(Hw):
            for i in range(M):
                ref = sum(pw[b, i, p] * w_pairs[b, h, p] * torch.cat([ev[iv[b, p]], eh[ih[b, p]]]) for p in range(Np))
                torch.testing.assert_close(out[b, h, i], ref)


@pytest.mark.parametrize("spans", [torch.zeros(2, 3, dtype=torch.long), torch.zeros(2, 3, 3, dtype=torch.long),
                                   torch.zeros(3, 2, dtype=torch.long)])
def test_build_refuses_spans_that_are_not_batch_node_pairs(spans):
    with pytest.raises(ValueError, match=r"spans must be \[B, M, 2\], got \(" + ", ".join(map(str, spans.shape))):
        TreeStructure.build(spans, None, None, num_leaves=4)


def test_root_positions_hand_computed_with_padded_nodes_and_a_one_word_sentence():
    """The root among ``[leaves; nodes]`` (N = 4 leaf slots, M = 3 node slots), by hand: sentence 0 has 4 words and
    nodes (0,2) (0,4) (the last real node is the root: N + 1 = 5); sentence 1 has 3 words (one padded leaf slot)
    and its one node in slot 0, slots 1-2 padded (root N + 0 = 4); sentence 2 is one word in leaf slot 1 (left
    padded), no node: the root is that leaf (1)."""
    from fairseq_tree.modules.tree_structure import root_positions

    spans = torch.tensor([[[0, 2], [0, 4], [0, 0]], [[0, 3], [0, 0], [0, 0]], [[0, 0], [0, 0], [0, 0]]])
    node_pad = torch.tensor([[False, False, True], [False, True, True], [True, True, True]])
    leaf_pad = torch.tensor([[False] * 4, [False, False, False, True], [True, False, True, True]])
    tree = TreeStructure.build(spans, node_pad, leaf_pad)
    assert root_positions(tree).tolist() == [5, 4, 1]
