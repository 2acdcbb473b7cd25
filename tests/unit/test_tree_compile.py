"""``--tree-compile``'s pieces that need no compilation: the buckets, padded pairs and padded batches give the
eager results at real positions, and a model's compiler is its own (copies get a fresh one). The compiled path
itself: tests/integration/test_tree_compile_step.py."""

import copy
import pickle
import random

import pytest
import torch
from tree_reference import collate, random_tree

from fairseq_tree.modules.hierarchical_accumulation import HierarchicalAccumulation
from fairseq_tree.modules.tree_compile import LayerCompiler, pad_to, round_up
from fairseq_tree.modules.tree_structure import TreeStructure

torch.set_num_threads(1)


def test_round_up_and_pad_to():
    assert [round_up(n, 8) for n in (0, 1, 8, 9, 16, 17)] == [8, 8, 8, 16, 16, 24]
    x = torch.arange(6).view(2, 3)
    assert pad_to(x, 1, 3, -1) is x
    assert pad_to(x, 1, 5, -1).tolist() == [[0, 1, 2, -1, -1], [3, 4, 5, -1, -1]]
    assert pad_to(x, 0, 3, 7).tolist() == [[0, 1, 2], [3, 4, 5], [7, 7, 7]]


def test_padded_pairs_and_slots_change_nothing_at_real_positions():
    """TreeStructure.build with pair_multiple (Np rounded up) and extra leaf / node slots: the accumulation of the
    real nodes is the same (padded pairs have weight 0)."""
    rng = random.Random(5)
    trees = [random_tree(rng, 7, 2), random_tree(rng, 3), random_tree(rng, 1)]
    spans, node_pad, leaf_pad, leaf_pos, node_pos = collate(trees, rng, extra_n=0, extra_m=0)
    B, N, M = len(trees), leaf_pad.size(1), node_pad.size(1)
    acc = HierarchicalAccumulation(8, 2, 16).double()
    torch.manual_seed(0)
    values = torch.randn(B, 2, N + M, 8, dtype=torch.float64)
    weights = torch.randn(B, 1, N + M, dtype=torch.float64)
    base = acc.accumulate(values, weights, TreeStructure.build(spans, node_pad, leaf_pad))
    N2, M2 = round_up(N, 8), round_up(M, 8)
    tree = TreeStructure.build(pad_to(spans, 1, M2, 0), pad_to(node_pad, 1, M2, True), pad_to(leaf_pad, 1, N2, True),
                               pair_multiple=8)
    assert tree.pair_leaf.size(1) % 8 == 0 and (tree.num_leaves, tree.num_nodes) == (N2, M2)
    v2 = torch.randn(B, 2, N2 + M2, 8, dtype=torch.float64) * 1e3  # garbage on the padded slots
    v2[:, :, :N], v2[:, :, N2:N2 + M] = values[:, :, :N], values[:, :, N:]
    w2 = torch.randn(B, 1, N2 + M2, dtype=torch.float64)
    w2[..., :N] = weights[..., :N]
    out = acc.accumulate(v2, w2, tree)
    for b in range(B):
        real = [i for i in range(M) if not node_pad[b, i]]
        torch.testing.assert_close(out[b, :, real], base[b, :, real], rtol=0, atol=1e-12)


def test_compiler_is_per_model_and_copies_start_empty():
    c = LayerCompiler(16, scope="layer")
    c.graphs, c.calls, c._fns["x"] = 3, 5, None
    for other in (copy.deepcopy(c), pickle.loads(pickle.dumps(c))):
        assert other is not c and (other.multiple, other.scope, other.graphs, other.calls) == (16, "layer", 0, 0)
        assert not other._fns
    with pytest.raises(ValueError, match="--tree-compile-scope 'stacks'"):
        LayerCompiler(scope="stacks")
    with pytest.raises(ValueError, match="--tree-compile-backend 'cudagraph': expected one of inductor, cudagraphs"):
        LayerCompiler(backend="cudagraph")
