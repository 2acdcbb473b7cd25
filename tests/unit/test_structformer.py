"""StructFormer (fairseq_tree/models/structformer.py and its two modules): the O(T^2) dependency distribution
against the literal eqs. 6-12, memory bound, batch invariance, parsing on hand-made inputs, training, masks."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from fairseq.data import Dictionary
from reference_structformer import dependency_distribution_direct

from fairseq_tree.models import structformer as sfm  # registers the model and its architectures
from fairseq_tree.modules.dependency_attention import DependencyAttention, dependency_relations
from fairseq_tree.modules.structformer_parser import (
    calibrate_distance,
    dependency_distribution,
    distance_to_spans,
    heads_from_dependency,
    joint_parse,
    word_masks,
)

torch.set_num_threads(1)


def make_dict():
    d = Dictionary()  # <s>=0 <pad>=1 </s>=2 <unk>=3
    for w in "the cat sat on a mat dog ran to park big red".split():
        d.add_symbol(w)
    d.add_symbol("<mask>")
    return d


def layout(lengths, T=None, vocab=(4, 16), bos=0, eos=2, pad=1, gen=None):
    """[B, T] tokens `<s> w_1..w_n </s> <pad>..` with random words."""
    T = T or max(lengths) + 2
    tok = torch.full((len(lengths), T), pad, dtype=torch.long)
    for b, n in enumerate(lengths):
        tok[b, 0] = bos
        tok[b, 1:n + 1] = torch.randint(vocab[0], vocab[1], (n,), generator=gen)
        tok[b, n + 1] = eos
    return tok


# ------------------------------------------------------------------------------ (1) fast == direct eqs. 6-12
@pytest.mark.parametrize("seed", [0, 1])
def test_dependency_distribution_matches_direct(seed):
    g = torch.Generator().manual_seed(seed)
    lengths = [1, 2, 3, 7, 12, 5]
    tok = layout(lengths, T=16, gen=g)
    word, split = word_masks(tok, 0, 2, 1)
    B, T = tok.shape
    dist = torch.randn(B, T - 1, generator=g) * 2.0
    height = torch.randn(B, T, generator=g) * 2.0
    s0, s1 = torch.tensor(1.3), torch.tensor(0.7)
    p, root = dependency_distribution(dist, height, word, split, s0, s1)
    assert p.dtype == torch.float32 and p.shape == (B, T, T) and root.shape == (B, T)
    for b, n in enumerate(lengths):
        pd, rt = dependency_distribution_direct(dist[b, 1:n].double().numpy(), height[b, 1:n + 1].double().numpy(),
                                                mu1=1 / 1.3, mu2=1 / 0.7)
        np.testing.assert_allclose(p[b, 1:n + 1, 1:n + 1].numpy(), pd, atol=1e-5, rtol=0)
        np.testing.assert_allclose(root[b, 1:n + 1].numpy(), rt, atol=1e-5, rtol=0)
        np.testing.assert_allclose(pd.sum(1) + rt, 1.0, atol=1e-12)  # the direct reference is normalised too
        assert np.abs(pd).sum() > 0 or n == 1


def test_dependency_distribution_two_words_by_hand():
    """n = 2: p_D(1|0) = σ(s0(δ0-τ0)) e1/(e0+e1), root_0 = 1 - σ(..) + σ(..) e0/(e0+e1)."""
    tok = torch.tensor([[0, 5, 6, 2]])
    word, split = word_masks(tok, 0, 2, 1)
    tau0, d0, d1, s0, s1 = 0.4, 1.1, -0.3, 2.0, 1.5
    dist = torch.tensor([[0.0, tau0, 0.0]])
    height = torch.tensor([[0.0, d0, d1, 0.0]])
    p, root = dependency_distribution(dist, height, word, split, torch.tensor(s0), torch.tensor(s1))
    sig = lambda z: 1 / (1 + math.exp(-z))  # noqa: E731
    c0, c1 = sig(s0 * (d0 - tau0)), sig(s0 * (d1 - tau0))  # word i crosses the split
    e0, e1 = math.exp(s1 * d0), math.exp(s1 * d1)
    assert p[0, 1, 2].item() == pytest.approx(c0 * e1 / (e0 + e1), abs=1e-6)
    assert p[0, 2, 1].item() == pytest.approx(c1 * e0 / (e0 + e1), abs=1e-6)
    assert root[0, 1].item() == pytest.approx(1 - c0 + c0 * e0 / (e0 + e1), abs=1e-6)
    assert p[0, 1, 1].item() == 0.0


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_dependency_distribution_heights_far_apart(dtype):
    """Eq. 11 is a softmax per span: exact however far below the sentence's max a span's heights lie. Word 1 is 100
    above the rest (logits 100, 0, 3, 1 and, in sentence 2, spread over 260 in four bands); the old per-sentence shift
    floored e^(s1 δ - max) at e^-80, turning the softmax over words 2-4 into a uniform one (off by 0.51 here)."""
    tok = torch.tensor([[0, 5, 6, 7, 8, 2, 1, 1], [0, 5, 6, 7, 8, 9, 10, 2]])
    word, split = word_masks(tok, 0, 2, 1)
    height = torch.tensor([[0, 100.0, 0.0, 3.0, 1.0, 0, 0, 0], [0, 260.0, 0.0, 3.0, 70.0, 140.0, 139.0, 0]],
                          dtype=dtype)
    dist = torch.tensor([[0, 50.0, -5.0, -5.0, 0, 0, 0], [0, 50.0, -5.0, -5.0, 80.0, 100.0, 0]], dtype=dtype)
    s0, s1 = torch.tensor(1.0, dtype=dtype), torch.tensor(1.0, dtype=dtype)
    p, root = dependency_distribution(dist, height, word, split, s0, s1)
    for b, n in enumerate([4, 6]):
        pd, rt = dependency_distribution_direct(dist[b, 1:n].double().numpy(), height[b, 1:n + 1].double().numpy())
        np.testing.assert_allclose(p[b, 1:n + 1, 1:n + 1].double().numpy(), pd, atol=1e-6, rtol=0)
        np.testing.assert_allclose(root[b, 1:n + 1].double().numpy(), rt, atol=1e-6, rtol=0)
    # word 2 (in the constituent of words 2-4 with probability ~1) takes word 3 (height 3) as its head: by hand,
    # softmax(0, 3, 1) over words 2-4 gives word 3 e^3 / (1 + e^3 + e) = 0.844 of the span's mass
    assert p[0, 2, 3].item() > 0.8
    # and the gradients stay finite
    dist64 = dist.double().requires_grad_()
    height64 = height.double().requires_grad_()
    p, root = dependency_distribution(dist64, height64, word, split, s0.double(), s1.double())
    (p.sum() + (p * torch.arange(8.0, dtype=torch.float64)).sum() + root.sum()).backward()
    assert torch.isfinite(height64.grad).all() and torch.isfinite(dist64.grad).all()


def test_dependency_distribution_gradients_far_apart():
    """Backward through several shift bands (heights spread over 200) against finite differences, fp64."""
    tok = torch.tensor([[0, 5, 6, 7, 8, 9, 2]])
    word, split = word_masks(tok, 0, 2, 1)
    dist = torch.tensor([[0, 1.0, -0.5, 0.3, 0.8, 0]], dtype=torch.float64, requires_grad=True)
    height = torch.tensor([[0, 200.0, 0.2, 1.1, 130.0, 70.5, 0]], dtype=torch.float64, requires_grad=True)
    scales = torch.tensor([0.1, 0.0], dtype=torch.float64, requires_grad=True)

    def f(dist, height, scales):
        s = scales.exp()
        return dependency_distribution(dist, height, word, split, s[0], s[1])

    assert torch.autograd.gradcheck(f, (dist, height, scales), eps=1e-6, atol=1e-6)


def test_dependency_distribution_gradients():
    """Backward of the prefix-sum/cummax form (fp64 path) against finite differences, padding included."""
    g = torch.Generator().manual_seed(4)
    tok = layout([4, 2], T=7, gen=g)
    word, split = word_masks(tok, 0, 2, 1)
    dist = torch.randn(2, 6, generator=g, dtype=torch.float64).requires_grad_()
    height = torch.randn(2, 7, generator=g, dtype=torch.float64).requires_grad_()
    scales = torch.tensor([0.2, -0.3], dtype=torch.float64, requires_grad=True)

    def f(dist, height, scales):
        s = scales.exp()
        p, root = dependency_distribution(dist, height, word, split, s[0], s[1])
        return p, root

    assert torch.autograd.gradcheck(f, (dist, height, scales), eps=1e-6, atol=1e-6)


def test_calibration_is_per_sentence_and_matches_loops():
    g = torch.Generator().manual_seed(3)
    lengths = [6, 3, 1, 9]
    tok = layout(lengths, gen=g)
    word, split = word_masks(tok, 0, 2, 1)
    B, T = tok.shape
    dist = torch.randn(B, T - 1, generator=g) + 1.5  # distances mostly above heights: positive margins
    height = torch.randn(B, T, generator=g)
    out = calibrate_distance(torch.where(split, dist, 0.0), torch.where(word, height, 0.0), word, split)
    for b, n in enumerate(lengths):
        tau, dl = dist[b, 1:n].tolist(), height[b, 1:n + 1].tolist()
        tau_ext = lambda k: math.inf if k < 0 or k >= n - 1 else tau[k]  # noqa: E731, B023 (used in this iteration)
        margin = 0.0
        for i in range(n):
            for j in range(i, n):
                if i == 0 and j == n - 1:
                    continue  # the whole sentence
                hm = max(dl[i:j + 1])
                margin = max(margin, min(max(tau_ext(i - 1) - hm, 0.0), max(tau_ext(j) - hm, 0.0)))
        np.testing.assert_allclose(out[b, 1:n].numpy(), np.array(tau) - margin, atol=1e-6)
        assert (out[b, :1] == 0).all() and (out[b, n:] == 0).all()
    assert (out[:, 1:] != torch.where(split, dist, 0.0)[:, 1:]).any()  # the shift did something


# ------------------------------------------------------------------------------ (2) no [B, T, T, T] tensor
def test_no_cubic_tensor():
    from torch.utils._python_dispatch import TorchDispatchMode

    class MaxNumel(TorchDispatchMode):
        largest = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            for t in out if isinstance(out, (tuple, list)) else (out,):
                if isinstance(t, torch.Tensor):
                    MaxNumel.largest = max(MaxNumel.largest, t.numel())
            return out

    B, n = 2, 30
    tok = layout([n, n - 7])
    word, split = word_masks(tok, 0, 2, 1)
    T = tok.size(1)
    dist = torch.randn(B, T - 1, requires_grad=True)
    height = torch.randn(B, T, requires_grad=True)
    scale = torch.zeros(2, requires_grad=True)
    with MaxNumel():
        s = scale.exp()
        p, root = dependency_distribution(dist, height, word, split, s[0], s[1])
        (p.sum() + root.sum()).backward()
    assert MaxNumel.largest <= B * T * T  # O(B T^2): nothing of size B T^3 (= 34 times more here)
    assert dist.grad.abs().sum() > 0 and height.grad.abs().sum() > 0 and scale.grad.abs().sum() > 0


# ------------------------------------------------------------------------------ (3) batch invariance
@pytest.mark.parametrize("overrides", [
    {},
    {"sf_calibrate": True, "sf_parser_layernorm": True, "sf_relations": "parent,dependent,sibling"},
    # the paper's parser (3 conv layers, kernel 9 as the authors' code): deep and wide enough that a conv stack
    # reading padding (masked only before its first layer) changes a sentence's distances by ~0.04 in a batch
    {"sf_conv_layers": 3, "sf_conv_size": 9},
], ids=["tiny", "code_options", "paper_parser_3x9"])
def test_batch_invariance(overrides):
    torch.manual_seed(0)
    d = make_dict()
    model = sfm.build_standalone(d, "structformer_tiny", **overrides).eval()
    g = torch.Generator().manual_seed(5)
    batch = layout([5, 11, 8, 3], gen=g)
    with torch.no_grad():
        logits, extra = model(batch)
        ind = model.induce(batch)
        for b in (0, 3, 2):
            n = int(extra["word_mask"][b].sum())
            alone = batch[b:b + 1, : n + 2]
            la, ea = model(alone)
            k = n + 2
            torch.testing.assert_close(la[0], logits[b, :k], atol=1e-5, rtol=0)
            torch.testing.assert_close(ea["distance"][0], extra["distance"][b, :k - 1], atol=1e-5, rtol=0)
            torch.testing.assert_close(ea["height"][0], extra["height"][b, :k], atol=1e-5, rtol=0)
            torch.testing.assert_close(ea["dependency"][0], extra["dependency"][b, :k, :k], atol=1e-5, rtol=0)
            torch.testing.assert_close(ea["root"][0], extra["root"][b, :k], atol=1e-5, rtol=0)
            ia = model.induce(alone)
            assert ia.spans[0] == ind.spans[b] and ia.heads[0] == ind.heads[b]
            torch.testing.assert_close(ia.maps["dependency"][0], ind.maps["dependency"][b, :n, :n], atol=1e-5, rtol=0)


def test_parser_conv_stack_never_reads_bos_eos_or_padding():
    """Eq. 1 over the words only: the distances, heights and p_D of a sentence do not change when the BOS, EOS and
    padding embeddings change (3 conv layers of kernel 9, so every word is within reach of BOS, EOS and pads)."""
    torch.manual_seed(0)
    d = make_dict()
    model = sfm.build_standalone(d, "structformer_tiny", sf_conv_layers=3, sf_conv_size=9).eval()
    batch = layout([4, 9, 2], gen=torch.Generator().manual_seed(7))
    with torch.no_grad():
        before = model.encoder.parse(batch)
        model.encoder.embed_tokens.weight[[d.bos(), d.eos(), d.pad()]] = torch.randn(3, 32) * 3.0
        after = model.encoder.parse(batch)
    for name, a, b in zip(("distance", "height", "p_D", "root"), before[:4], after[:4]):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=0, msg=name)
    assert before[0].abs().sum() > 0 and before[2].abs().sum() > 0


# ------------------------------------------------------------------------------ (4) parsing by hand
def test_distance_splitting_by_hand():
    # ((w0 (w1 w2)) (w3 w4)): largest distance 3 between w2|w3, then 2 between w0|w1
    assert distance_to_spans([2.0, 0.5, 3.0, 1.0]) == [(1, 3), (0, 3), (3, 5), (0, 5)]
    assert distance_to_spans([1.0, 1.0, 1.0]) == [(2, 4), (1, 4), (0, 4)]  # ties: leftmost, right-branching
    assert distance_to_spans([3.0, 2.0, 1.0]) == [(2, 4), (1, 4), (0, 4)]
    assert distance_to_spans([1.0, 2.0, 3.0]) == [(0, 2), (0, 3), (0, 4)]
    assert distance_to_spans([0.3]) == [(0, 2)] and distance_to_spans([]) == []


def test_heads_by_hand():
    p = np.array([[0.0, 0.6, 0.3, 0.1],
                  [0.1, 0.0, 0.2, 0.5],
                  [0.0, 0.7, 0.0, 0.2],
                  [0.1, 0.2, 0.6, 0.0]])
    height = [0.1, 2.0, 0.5, -1.0]  # word 1 is the highest -> root
    assert heads_from_dependency(p, height) == [2, 0, 2, 3]
    # Algorithm 3 on ((w0 (w1 w2)) (w3 w4)) with heights [1, 3, 2, .5, 4]: w2<-w1, w0<-w1, w3<-w4, w1<-w4
    spans, heads = joint_parse([2.0, 0.5, 3.0, 1.0], [1.0, 3.0, 2.0, 0.5, 4.0])
    assert spans == [(1, 3), (0, 3), (3, 5), (0, 5)]
    assert heads == [2, 5, 2, 5, 0]
    assert joint_parse([], [0.3]) == ([], [0])


def test_algorithm3_tie_goes_to_the_right_child():
    """Algorithm 3 lines 10-15: the left child's parent heads the constituent only if its height is strictly larger
    (height_l > height_r); on a tie the `else` branch makes the right child's parent the head."""
    assert joint_parse([1.0], [0.5, 0.5]) == ([(0, 2)], [2, 0])
    assert joint_parse([1.0], [0.6, 0.5]) == ([(0, 2)], [0, 1])
    # (w0 (w1 w2)), all heights equal: w1 <- w2, then w0 <- w2
    assert joint_parse([2.0, 1.0], [1.0, 1.0, 1.0]) == ([(1, 3), (0, 3)], [3, 3, 0])


def _hand_parse_batch():
    """Two sentences in the task's layout (`<s> w.. </s> <pad>..`, T = 7) with hand-made structure: row i of p_D
    is word i's parent distribution and its argmax (the eq. 17 head) differs from the argmax of column i, so reading
    p_D transposed gives other heads. Non-word rows/columns and distances hold garbage that must be ignored."""
    B, T = 2, 7
    word = torch.zeros(B, T, dtype=torch.bool)
    word[0, 1:5] = True  # n = 4
    word[1, 1:6] = True  # n = 5
    P0 = [[0.0, 0.1, 0.7, 0.2],  # word 0 -> word 2 (column 0's argmax is word 1)
          [0.6, 0.0, 0.3, 0.1],  # word 1 -> word 0
          [0.2, 0.5, 0.0, 0.3],  # word 2: the highest word, the root
          [0.1, 0.2, 0.6, 0.0]]  # word 3 -> word 2
    P1 = [[0.0, 0.2, 0.1, 0.6, 0.1],  # word 0 -> word 3 (column 0's argmax is word 1)
          [0.7, 0.0, 0.1, 0.1, 0.1],  # word 1 -> word 0
          [0.1, 0.5, 0.0, 0.2, 0.2],  # word 2 -> word 1
          [0.3, 0.3, 0.2, 0.0, 0.2],  # word 3: the root
          [0.1, 0.1, 0.2, 0.5, 0.0]]  # word 4 -> word 3
    p_D = torch.full((B, T, T), 0.9)  # garbage on BOS/EOS/pad rows and columns
    p_D[0, 1:5, 1:5] = torch.tensor(P0)
    p_D[1, 1:6, 1:6] = torch.tensor(P1)
    height = torch.full((B, T), 5.0)  # garbage off words (higher than every word)
    height[0, 1:5] = torch.tensor([0.1, 0.5, 2.0, -1.0])
    height[1, 1:6] = torch.tensor([0.1, 0.5, 0.2, 2.0, -1.0])
    distance = torch.full((B, T - 1), 9.0)  # distance t sits between positions t and t+1; garbage off splits
    distance[0, 1:4] = torch.tensor([2.0, 0.5, 1.0])
    distance[1, 1:5] = torch.tensor([0.1, 0.3, 1.0, -0.5])
    root = torch.where(word, 0.25, 0.0)
    return distance, height, p_D, root, word, (P0, P1)


def test_induce_heads_are_eq17_row_argmaxes_of_a_hand_made_p_D():
    """Eq. 17: head(i) = argmax_{j != i} p_D(j|i) (row i), the highest word is the root; Algorithm 1 on the
    distances. Heads written by hand; reading p_D transposed (column i) would give other heads."""
    distance, height, p_D, root, word, (P0, P1) = _hand_parse_batch()
    st = sfm.structure_from_parse(distance, height, p_D, root, word, method="distance")
    assert st.lengths.tolist() == [4, 5]
    assert st.heads == [[3, 1, 0, 3], [4, 1, 2, 0, 4]]
    # Algorithm 1: ((w0) ((w1 w2) w3)) and (((w0 w1) w2) (w3 w4))
    assert st.spans == [[(1, 3), (1, 4), (0, 4)], [(0, 2), (0, 3), (3, 5), (0, 5)]]
    dep = st.maps["dependency"]
    assert dep.shape == (2, 5, 5)
    torch.testing.assert_close(dep[0, :4, :4], torch.tensor(P0))
    torch.testing.assert_close(dep[1], torch.tensor(P1))
    assert (dep[0, 4] == 0).all() and (dep[0, :, 4] == 0).all()
    torch.testing.assert_close(st.maps["distance"][0, :3], torch.tensor([2.0, 0.5, 1.0]))
    torch.testing.assert_close(st.maps["height"][1], torch.tensor([0.1, 0.5, 0.2, 2.0, -1.0]))
    # Algorithm 3 on the same input: the head of each constituent is its child's head of larger height
    joint = sfm.structure_from_parse(distance, height, p_D, root, word, method="joint")
    assert joint.spans == st.spans
    assert joint.heads == [[3, 3, 0, 3], [2, 4, 2, 0, 4]]


def test_induce_heads_are_row_argmaxes_of_the_models_p_D():
    """Through ``induce`` itself: the heads are the row argmaxes of the model's own dependency map (extra
    'dependency', row i = the dependent), and they differ from the column argmaxes for this model."""
    torch.manual_seed(3)
    model = sfm.build_standalone(make_dict(), "structformer_tiny").eval()
    tok = layout([6, 9, 4], gen=torch.Generator().manual_seed(8))
    with torch.no_grad():
        _, extra = model(tok)
    st = model.induce(tok, method="distance")
    differs = 0
    for b, n in enumerate([6, 9, 4]):
        p = extra["dependency"][b, 1:n + 1, 1:n + 1].double().numpy().copy()
        h = extra["height"][b, 1:n + 1].numpy()
        np.fill_diagonal(p, -1.0)
        rows = [0 if i == int(h.argmax()) else int(p[i].argmax()) + 1 for i in range(n)]
        cols = [0 if i == int(h.argmax()) else int(p[:, i].argmax()) + 1 for i in range(n)]
        assert st.heads[b] == rows
        differs += rows != cols
    assert differs > 0  # the check can tell rows from columns


def test_induce_layout():
    torch.manual_seed(1)
    model = sfm.build_standalone(make_dict(), "structformer_tiny")
    tok = layout([4, 1, 6], gen=torch.Generator().manual_seed(2))
    for method in ("distance", "joint"):
        st = model.induce(tok, method=method)
        assert st.lengths.tolist() == [4, 1, 6]
        for b, n in enumerate([4, 1, 6]):
            assert len(st.spans[b]) == max(n - 1, 0) and (n < 2 or st.spans[b][-1] == (0, n))
            assert len(st.heads[b]) == n and st.heads[b].count(0) == 1
            assert all(0 <= h <= n and h != i + 1 for i, h in enumerate(st.heads[b]))
        assert st.maps["dependency"].shape == (3, 6, 6) and st.maps["distance"].shape == (3, 5)
        assert st.maps["height"].shape == (3, 6) and st.maps["dependency"].dtype == torch.float32
    # the maps are the model's own structure at the word positions
    _, extra = model.eval()(tok)
    torch.testing.assert_close(st.maps["dependency"][2], extra["dependency"][2, 1:7, 1:7])
    torch.testing.assert_close(st.maps["distance"][0, :3], extra["distance"][0, 1:4])
    assert st.spans[0] == distance_to_spans(extra["distance"][0, 1:4].tolist())


# ------------------------------------------------------------------------------ (5) training
def test_tiny_model_trains_and_parser_gets_gradients():
    torch.manual_seed(0)
    d = make_dict()
    model = sfm.build_standalone(d, "structformer_tiny")
    g = torch.Generator().manual_seed(0)
    tok = layout([6, 9, 4, 7, 8, 5], gen=g)
    word = tok.ge(4)
    masked = word & (torch.rand(tok.shape, generator=g) < 0.3)
    masked[0, 1] = True
    src = tok.masked_fill(masked, d.index("<mask>"))
    target = tok[masked]
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)

    def loss_fn():
        logits, _ = model(src, masked_tokens=masked)
        return F.cross_entropy(logits.float(), target)

    first = loss_fn()
    first.backward()
    p = model.encoder.parser
    for name, t in (("conv", p.convs[0].weight), ("distance", p.distance_out.weight),
                    ("height", p.height_out.weight), ("scales", p.log_scale),
                    ("relations", model.encoder.layers[0].attn.rel_logits)):
        assert t.grad is not None and t.grad.abs().sum() > 0, name
    opt.step()
    for _ in range(24):
        opt.zero_grad()
        loss_fn().backward()
        opt.step()
    assert loss_fn().item() < 0.7 * first.item()


def test_structure_is_fp32_under_autocast():
    torch.manual_seed(0)
    model = sfm.build_standalone(make_dict(), "structformer_tiny").eval()
    tok = layout([5, 3])
    with torch.autocast("cpu", dtype=torch.bfloat16):
        _, extra = model(tok)
    for k in ("distance", "height", "dependency", "root"):
        assert extra[k].dtype == torch.float32, k


# ------------------------------------------------------------------------------ (6) masks / rows
def test_padding_rows_and_attention_masks():
    torch.manual_seed(0)
    model = sfm.build_standalone(make_dict(), "structformer_tiny").eval()
    tok = layout([5, 1, 3], T=9)
    with torch.no_grad():
        _, extra = model(tok)
    p, root, word = extra["dependency"], extra["root"], extra["word_mask"]
    nonword = ~word
    assert (p[nonword] == 0).all() and (p.transpose(1, 2)[nonword] == 0).all() and (root[nonword] == 0).all()
    assert (torch.diagonal(p, dim1=1, dim2=2) == 0).all()
    # rows of words: sum_j p_D(j|i) + root_i = 1 (the root mass is the j = i term eq. 12 drops)
    torch.testing.assert_close((p.sum(-1) + root)[word], torch.ones(int(word.sum())), atol=1e-5, rtol=0)
    assert (p.sum(-1)[word] < 1 + 1e-6).all()
    assert root[1, 1].item() == pytest.approx(1.0)  # a one-word sentence: all mass on the root
    # the attention gives and receives nothing at BOS/EOS/pad; eqs. 13-16 by hand
    attn = model.encoder.layers[0].attn
    x = torch.randn(3, 9, 32)
    rel = dependency_relations(p, ("parent", "dependent"))
    out, w = attn(x, rel, word, need_weights=True)
    assert (w[nonword[:, None, :, None].expand_as(w)] == 0).all()
    assert (w.transpose(-1, -2)[nonword[:, None, :, None].expand_as(w)] == 0).all()
    q, k, v = attn.in_proj(x).split(32, -1)
    mix = torch.softmax(attn.rel_logits, -1)
    for h in range(2):
        sl = slice(16 * h, 16 * (h + 1))
        gate = torch.sigmoid(q[..., sl] @ k[..., sl].transpose(1, 2) / 4.0)
        ph = mix[h, 0] * p + mix[h, 1] * p.transpose(1, 2)
        torch.testing.assert_close(w[:, h], ph * gate, atol=1e-6, rtol=0)
    sib = dependency_relations(p, ("sibling",))[:, 0]
    ref = p @ p.transpose(1, 2)
    ref = ref - torch.diag_embed(torch.diagonal(ref, dim1=1, dim2=2))
    torch.testing.assert_close(sib, ref)
    assert isinstance(attn, DependencyAttention)


def test_calibration_batch_max_by_hand():
    """--sf-calibrate-batch: the authors' code shifts every sentence by the largest margin in the batch. By hand
    (spans other than the whole sentence, a boundary +inf): A, τ = [1.0, 0.5], δ = [0.2, 0.0, 0.3]: [0] 0.8,
    [1] min(1.0, 0.5) = 0.5, [2] 0.2, [0,1] 0.5 - 0.2 = 0.3, [1,2] 1.0 - 0.3 = 0.7 -> 0.8; B, τ = [0.1],
    δ = [0.0, 0.05]: [0] 0.1, [1] 0.05 -> 0.1. Per sentence: A - 0.8, B - 0.1; batch: both - 0.8."""
    tok = torch.tensor([[0, 5, 6, 7, 2], [0, 5, 6, 2, 1]])
    word, split = word_masks(tok, 0, 2, 1)
    dist = torch.tensor([[0.0, 1.0, 0.5, 0.0], [0.0, 0.1, 0.0, 0.0]])
    height = torch.tensor([[0.0, 0.2, 0.0, 0.3, 0.0], [0.0, 0.0, 0.05, 0.0, 0.0]])
    per = calibrate_distance(dist, height, word, split)
    batch = calibrate_distance(dist, height, word, split, batch=True)
    torch.testing.assert_close(per, torch.tensor([[0.0, 0.2, -0.3, 0.0], [0.0, 0.0, 0.0, 0.0]]))
    torch.testing.assert_close(batch, torch.tensor([[0.0, 0.2, -0.3, 0.0], [0.0, -0.7, 0.0, 0.0]]))
    torch.testing.assert_close(calibrate_distance(dist[1:], height[1:], word[1:], split[1:], batch=True), per[1:])


@pytest.mark.parametrize("flag", ["sf_calibrate", "sf_calibrate_batch"])
def test_calibrate_batch_in_training_only(flag):
    """--sf-calibrate-batch: the parser's distances in training are the batch-max calibration of its raw
    distances; in eval they are per sentence, so parses do not depend on the batch. --sf-calibrate: per sentence
    in both."""
    torch.manual_seed(0)
    model = sfm.build_standalone(make_dict(), "structformer_tiny", **{flag: True})
    parser = model.encoder.parser
    tok = layout([7, 3, 5], gen=torch.Generator().manual_seed(1))
    word, split = word_masks(tok, 0, 2, 1)
    emb = model.encoder.embed_tokens(tok)
    with torch.no_grad():
        calibrate, parser.calibrate = parser.calibrate, False
        tau, delta = parser(emb, word, split)
        parser.calibrate = calibrate
        train_tau, _ = parser.train()(emb, word, split)
        eval_tau, _ = parser.eval()(emb, word, split)
    per = calibrate_distance(tau, delta, word, split)
    torch.testing.assert_close(eval_tau, per)
    if flag == "sf_calibrate":
        torch.testing.assert_close(train_tau, per)
    else:
        torch.testing.assert_close(train_tau, calibrate_distance(tau, delta, word, split, batch=True))
        assert not torch.allclose(train_tau, eval_tau)


def test_code_init_spreads():
    """--sf-code-init (the authors' code: separate q, k, v Linear(d, d) with xavier, zero biases; PyTorch's
    default FFN Linear): each d x d block of the fused q/k/v map within sqrt(6 / 2d) and reaching past the fused
    map's sqrt(6 / 4d); FFN weights and biases within fan_in^-1/2 with non-zero biases. Default: xavier over the
    fused map, zero FFN biases."""
    d = make_dict()
    torch.manual_seed(0)
    code = sfm.build_standalone(d, "structformer_tiny", sf_code_init=True).encoder.layers[0]
    base = sfm.build_standalone(d, "structformer_tiny").encoder.layers[0]
    dim = code.fc1.in_features
    block, fused = math.sqrt(6 / (2 * dim)), math.sqrt(6 / (4 * dim))
    for w in code.attn.in_proj.weight.split(dim):
        assert fused < w.abs().max() <= block
    assert base.attn.in_proj.weight.abs().max() <= fused
    assert torch.all(code.attn.in_proj.bias == 0) and torch.all(code.attn.out_proj.bias == 0)
    for m in (code.fc1, code.fc2):
        bound = m.in_features ** -0.5
        assert m.weight.abs().max() <= bound and m.bias.abs().max() <= bound and m.bias.abs().max() > 0.5 * bound
    assert code.fc2.weight.abs().max() < math.sqrt(6 / (code.fc2.in_features + code.fc2.out_features))
    assert torch.all(base.fc1.bias == 0) and torch.all(base.fc2.bias == 0)


def test_dependency_attention_default_init_is_fused_xavier():
    """DependencyAttention built alone (not through the model's flags): xavier over the fused [3d, d] map."""
    torch.manual_seed(0)
    attn = DependencyAttention(32, 2)
    assert attn.in_proj.weight.abs().max() <= math.sqrt(6 / (4 * 32))
    assert attn.in_proj.weight.abs().max() > 0.95 * math.sqrt(6 / (4 * 32))


def test_layer_is_the_pre_ln_block():
    """A layer (eval): x1 = x + attn(LN_a(x)), out = x1 + fc2(relu(fc1(LN_f(x1)))) (paper Section 5: pre-LN as T5),
    written out from its parts."""
    torch.manual_seed(0)
    model = sfm.build_standalone(make_dict(), "structformer_tiny").eval()
    layer, enc = model.encoder.layers[0], model.encoder
    tok = layout([5, 3], gen=torch.Generator().manual_seed(2))
    with torch.no_grad():
        _, _, p_D, _, word = enc.parse(tok)
        rel = dependency_relations(p_D, enc.relations)
        x = torch.randn(2, tok.size(1), model.args.encoder_embed_dim)
        out = layer(x, rel, word)
        x1 = x + layer.attn(layer.attn_norm(x), rel, word)[0]
        expected = x1 + layer.fc2(F.relu(layer.fc1(layer.ffn_norm(x1))))
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=0)
