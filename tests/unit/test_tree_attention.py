"""Tree attention (Nguyen et al. 2020, eqs. 11-24): against the equations written out, batch invariance, the
masks, no NaN, the SDPA and explicit paths, incremental decoding, half precision."""

import random

import numpy as np
import pytest
import torch
from tree_reference import _attention_pair, bpe_tree, collate, random_tree, reference_accumulation

from fairseq_tree.modules.hierarchical_accumulation import VARIANTS
from fairseq_tree.modules.tree_attention import TreeMultiheadAttention
from fairseq_tree.modules.tree_structure import TreeStructure

torch.set_num_threads(1)



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


@pytest.mark.parametrize("variant", ["paper", "code"])
def test_prepare_builds_every_operand_the_layers_read(variant):
    """``prepare`` (called outside --tree-compile's graphs) leaves nothing for a forward to build: after it, the
    encoder's self-attention and the decoder's cross-attention, in training and in eval, add no entry to the tree's
    per-batch cache (an operand built inside a compiled graph is rebuilt at every step)."""
    rng = random.Random(5)
    E, H = 16, 4
    enc, dec = _attention_pair(variant, E, H)
    spans, node_pad, leaf_pad, _, _ = collate([random_tree(rng, 7), bpe_tree()], rng)
    tree = TreeStructure.build(spans, node_pad, leaf_pad)
    N, M = leaf_pad.size(1), node_pad.size(1)
    x = torch.randn(N + M, 2, E)
    for mod in (enc, dec):
        mod.prepare(tree, [torch.float32])
    built = set(tree._cache)
    for training in (True, False):
        enc.train(training), dec.train(training)
        enc(x, tree)
        dec(torch.randn(3, 2, E), x, tree)
        assert set(tree._cache) == built, set(tree._cache) - built


def test_attention_dropout_is_applied_in_training_on_both_paths():
    """dropout > 0 drops attention probabilities in training, on the fused path (scaled_dot_product_attention) as
    on the explicit one (need_weights); eval is deterministic and the same on both."""
    rng = random.Random(6)
    E, H = 16, 4
    torch.manual_seed(0)
    enc = TreeMultiheadAttention(E, H, self_attention=True, dropout=0.5, **VARIANTS["paper"])
    spans, node_pad, leaf_pad, _, _ = collate([random_tree(rng, 8)], rng)
    tree = TreeStructure.build(spans, node_pad, leaf_pad)
    x = torch.randn(leaf_pad.size(1) + node_pad.size(1), 1, E)
    enc.eval()
    clean, _ = enc(x, tree)
    assert torch.allclose(enc(x, tree, need_weights=True)[0], clean, atol=1e-6)
    enc.train()
    for need_weights in (False, True):
        torch.manual_seed(1)
        a, _ = enc(x, tree, need_weights=need_weights)
        torch.manual_seed(2)
        b, _ = enc(x, tree, need_weights=need_weights)
        assert not torch.allclose(a, clean, atol=1e-3) and not torch.allclose(a, b, atol=1e-3)


def test_beam_reorder_within_sentences_copies_nothing():
    """A reorder of the same size only permutes the beams of each sentence, whose encoder side is identical:
    the cached encoder (k, v, key bias) is kept as is, as fairseq's MultiheadAttention does."""
    rng = random.Random(7)
    E, H = 16, 4
    _, dec = _attention_pair("paper", E, H)
    spans, node_pad, leaf_pad, _, _ = collate([random_tree(rng, 5), random_tree(rng, 4)], rng)
    order = torch.arange(2).repeat_interleave(2)
    tree = TreeStructure.build(spans, node_pad, leaf_pad).index_select(order)
    x = torch.randn(leaf_pad.size(1) + node_pad.size(1), 4, E)
    state = {}
    dec(torch.randn(1, 4, E), x, tree, incremental_state=state)
    before = dict(dec._get_input_buffer(state))
    assert before and all(v is not None for v in before.values())
    dec.reorder_incremental_state(state, torch.tensor([1, 0, 3, 2]))
    after = dec._get_input_buffer(state)
    assert after.keys() == before.keys() and all(after[k] is before[k] for k in before)
