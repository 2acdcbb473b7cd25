"""Tree Transformer (constituent attention, Wang et al. 2019); the plain ``mlm_transformer`` is in
test_mlm_transformer.py.

Part A checks fairseq_tree/modules/constituent_attention.py and fairseq_tree/models/constituent_transformer.py
against slow direct transcriptions of the paper's equations (eqs. 2-8, Python loops in float64), Algorithm 1
on hand-made link tables with hand-derived trees, batch invariance, masking and training of the tiny model.

Token layout: ``<s> w_1 .. w_n </s> <pad>..`` (fairseq Dictionary: bos 0, pad 1, eos 2).
"""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from fairseq.data import Dictionary

from fairseq_tree.models import constituent_transformer as ct
from fairseq_tree.modules.constituent_attention import (
    ConstituentSelfAttention,
    code_diagonal_value,
    constituent_prior,
    hierarchical_links,
    link_scores,
    neighbour_links,
    parse_algorithm1,
    parse_greedy,
    parse_links,
    structure_masks,
)

WORDS = "the cat sat on a mat and dog ran far away quickly".split()


@pytest.fixture(scope="module")
def dictionary():
    d = Dictionary()
    for w in WORDS:
        d.add_symbol(w)
    d.add_symbol("<mask>")
    return d


def batch(d, sentences, T=None):
    """sentences (lists of words) -> right-padded src_tokens [B, T] ``<s> w.. </s> <pad>..``."""
    rows = [[d.bos()] + [d.index(w) for w in s] + [d.eos()] for s in sentences]
    T = T or max(len(r) for r in rows)
    return torch.tensor([r + [d.pad()] * (T - len(r)) for r in rows])


SENTS = [WORDS[:8], WORDS[2:7], WORDS[4:6], WORDS[9:10], []]  # 8, 5, 2, 1 and 0 words


# ============================================================================ Part A: structure equations
def direct_prior(a, word):
    """Eq. 3 by loops: a [T-1] links, word [T] bool -> C [T, T] float64 (C_ii = 1, 0 off the sentence's words)."""
    T = len(word)
    C = np.zeros((T, T))
    for i in range(T):
        for j in range(T):
            if i == j:
                C[i, j] = 1.0
            elif word[i] and word[j]:
                p = 1.0
                for k in range(min(i, j), max(i, j)):
                    p *= float(a[k])
                C[i, j] = p
    return C


def test_structure_masks(dictionary):
    src = batch(dictionary, [WORDS[:3], WORDS[:1]])  # <s> w w w </s> / <s> w </s> <pad> <pad>
    word, link, allowed = structure_masks(src, dictionary.bos(), dictionary.eos(), dictionary.pad())
    assert word.tolist() == [[False, True, True, True, False], [False, True, False, False, False]]
    assert link.tolist() == [[False, True, True, False], [False, False, False, False]]
    exp = torch.eye(5, dtype=torch.bool).repeat(2, 1, 1)
    exp[0, 1:4, 1:4] = True
    assert torch.equal(allowed, exp)
    # the authors' [CLS] in the chain: BOS takes part (links to the first word), EOS and pad do not
    word, link, allowed = structure_masks(src, dictionary.bos(), dictionary.eos(), dictionary.pad(),
                                          bos_in_chain=True)
    assert word.tolist() == [[True, True, True, True, False], [True, True, False, False, False]]
    assert link.tolist() == [[True, True, True, False], [True, False, False, False]]
    exp[0, :4, :4] = True
    exp[1, :2, :2] = True
    assert torch.equal(allowed, exp)


@pytest.mark.parametrize("seed", [0, 1])
def test_constituent_prior_equals_eq3_product(dictionary, seed):
    g = torch.Generator().manual_seed(seed)
    src = batch(dictionary, SENTS)
    word, link, allowed = structure_masks(src, dictionary.bos(), dictionary.eos(), dictionary.pad())
    B, T = src.shape
    a = 0.05 + 0.95 * torch.rand(B, T - 1, generator=g)
    a[0, 3] = 1.0  # a certain link (log 0)
    garbage = torch.rand(B, T - 1, generator=g)  # non-link entries must not matter
    C = constituent_prior(torch.where(link, a, garbage), allowed)
    C0 = constituent_prior(torch.where(link, a, 0.0), allowed)
    assert C.dtype == torch.float32 and C.shape == (B, T, T)
    assert torch.allclose(C, C0, rtol=1e-5, atol=1e-7)  # equal up to the rounding of the cumulative sum
    for b in range(B):
        exp = direct_prior(a[b].double().numpy(), word[b].numpy())
        np.testing.assert_allclose(C[b].double().numpy(), exp, rtol=2e-5, atol=1e-7)
    # hand value: C_{1,4} of sentence 0 = a_1 a_2 a_3 (positions 1..4 are words 0..3)
    assert C[0, 1, 4].item() == pytest.approx((a[0, 1] * a[0, 2] * a[0, 3]).item(), rel=1e-5)
    assert torch.equal(C, C.transpose(1, 2))


@pytest.mark.parametrize("layer", [0, 2, 9])
def test_code_diagonal(dictionary, layer):
    src = batch(dictionary, SENTS[:3])
    word, link, allowed = structure_masks(src, dictionary.bos(), dictionary.eos(), dictionary.pad())
    a = torch.where(link, torch.rand(link.shape, generator=torch.Generator().manual_seed(3)), 0.0)
    diag = code_diagonal_value(layer)
    # the reference: self-link â = sqrt(0 * 0 + 1e-9) in every layer, accumulated by eq. 8 over layers 0..l
    acc = None
    for _ in range(layer + 1):
        acc = hierarchical_links(acc, torch.tensor([math.sqrt(1e-9)], dtype=torch.float64))
    assert diag == pytest.approx(acc.item(), rel=1e-9)
    assert diag == pytest.approx((layer + 1) * 3.16227766e-5, rel=1e-3)  # ≈ 3.2e-5 (l+1)
    C = constituent_prior(a, allowed, diagonal=diag, word=word)
    C1 = constituent_prior(a, allowed)
    dC, d1 = torch.diagonal(C, dim1=1, dim2=2), torch.diagonal(C1, dim1=1, dim2=2)
    # C - diag(1 - d) rounds 1 - d in fp32: absolute error up to half an fp32 ulp at 1 (6e-8), ~1e-3 relative
    assert torch.allclose(dC[word], torch.full_like(dC[word], diag), rtol=0, atol=1.2e-7)
    assert torch.equal(dC[~word], torch.ones_like(dC[~word]))  # BOS/EOS/pad keep their self-prior 1
    assert torch.equal(d1, torch.ones_like(d1))
    off = ~torch.eye(src.size(1), dtype=torch.bool)
    assert torch.equal(C[:, off], C1[:, off])


def test_link_scores_values_and_custom_backward():
    g = torch.Generator().manual_seed(0)
    B, T, d, scale = 3, 7, 5, 2.5
    x = torch.randn(B, T, 2 * d, generator=g, requires_grad=True)
    s_next, s_prev = link_scores(x, scale)
    assert s_next.shape == s_prev.shape == (B, T - 1) and s_next.dtype == torch.float32
    xd = x.detach().double()
    for b in range(B):
        for t in range(T - 1):  # eq. 5: s_{t,t+1} = q_t . k_{t+1} / scale, s_{t+1,t} = q_{t+1} . k_t / scale
            sn = sum(xd[b, t, c] * xd[b, t + 1, d + c] for c in range(d)) / scale
            sp = sum(xd[b, t + 1, c] * xd[b, t, d + c] for c in range(d)) / scale
            assert s_next[b, t].item() == pytest.approx(sn.item(), abs=1e-5)
            assert s_prev[b, t].item() == pytest.approx(sp.item(), abs=1e-5)
    gn, gp = torch.randn(B, T - 1, generator=g), torch.randn(B, T - 1, generator=g)
    (grad,) = torch.autograd.grad((s_next * gn).sum() + (s_prev * gp).sum(), x)
    x2 = x.detach().clone().requires_grad_(True)
    q, k = x2[..., :d], x2[..., d:]
    plain_n = (q[:, :-1] * k[:, 1:]).sum(-1) / scale
    plain_p = (q[:, 1:] * k[:, :-1]).sum(-1) / scale
    (grad2,) = torch.autograd.grad((plain_n * gn).sum() + (plain_p * gp).sum(), x2)
    assert torch.allclose(grad, grad2, atol=1e-6)
    assert grad[:, 0, d:].abs().sum() > 0 and grad[:, -1, :d].abs().sum() > 0  # ends get the other-side grad
    # float64 in: fp32 arithmetic inside, gradient returned in float64; the map is bilinear, so central
    # differences with a large step are exact up to fp32 rounding
    x64 = torch.randn(2, 4, 6, dtype=torch.float64, generator=g, requires_grad=True)
    assert torch.autograd.gradcheck(lambda y: link_scores(y, 3.0), (x64,), eps=1e-2, atol=1e-3, rtol=1e-3)
    out = link_scores(x64, 3.0)[0].sum()
    assert torch.autograd.grad(out, x64)[0].dtype == torch.float64


def _softmax2(u, v):
    m = max(u, v)
    return math.exp(u - m) / (math.exp(u - m) + math.exp(v - m))


def test_neighbour_links_eqs_6_7(dictionary):
    g = torch.Generator().manual_seed(1)
    src = batch(dictionary, SENTS)
    word, link, _ = structure_masks(src, dictionary.bos(), dictionary.eos(), dictionary.pad())
    B, T = src.shape
    s_next = 3 * torch.randn(B, T - 1, generator=g)
    s_prev = 3 * torch.randn(B, T - 1, generator=g)
    s_next[0, 2], s_prev[0, 3] = 40.0, -40.0  # saturated softmax must stay finite
    a_hat = neighbour_links(s_next, s_prev, link)
    assert a_hat.dtype == torch.float32 and torch.isfinite(a_hat).all()
    sn, sp = s_next.double(), s_prev.double()
    for b in range(B):
        for t in range(T - 1):
            if not link[b, t]:
                assert a_hat[b, t].item() == 0.0
                continue
            # p_{t,t+1}: softmax(s_{t,t+1}, s_{t,t-1}) if t has a word on its left, else 1
            p_r = _softmax2(sn[b, t].item(), sp[b, t - 1].item()) if t >= 1 and link[b, t - 1] else 1.0
            # p_{t+1,t}: softmax(s_{t+1,t}, s_{t+1,t+2}) if t+1 has a word on its right, else 1
            p_l = _softmax2(sp[b, t].item(), sn[b, t + 1].item()) if t + 1 < T - 1 and link[b, t + 1] else 1.0
            assert a_hat[b, t].item() == pytest.approx(math.sqrt(p_r * p_l), rel=1e-5, abs=1e-12), (b, t)
    assert a_hat[3].abs().sum() == 0 and a_hat[4].abs().sum() == 0  # one word / no word: no link
    assert a_hat[2, 1].item() == 1.0  # two words: each has the other as its only neighbour
    # the gradient through the log-space square root is finite even where a link probability underflows
    s = s_next.clone().requires_grad_(True)
    neighbour_links(s, s_prev, link).sum().backward()
    assert torch.isfinite(s.grad).all()


def test_hierarchical_links_eq8():
    g = torch.Generator().manual_seed(2)
    a_hats = [torch.rand(3, 6, generator=g, dtype=torch.float64) for _ in range(4)]
    a = None
    prev = torch.zeros(3, 6, dtype=torch.float64)
    for l, ah in enumerate(a_hats):
        a = hierarchical_links(a, ah)
        assert torch.allclose(a, prev + (1 - prev) * ah)
        # closed form: 1 - a^l = prod_{l' <= l} (1 - â^{l'})
        exp = 1 - torch.stack([1 - x for x in a_hats[:l + 1]]).prod(0)
        assert torch.allclose(a, exp, atol=1e-12)
        assert (a >= prev).all()  # links only grow with depth
        prev = a
    assert hierarchical_links(None, a_hats[0]) is a_hats[0]


# ============================================================================ Part A: parsing
# links[l, i] between words i and i+1; non-decreasing over layers, as a trained model gives
TABLE6 = np.array([
    [0.50, 0.10, 0.20, 0.40, 0.30],  # layer 0
    [0.70, 0.20, 0.30, 0.70, 0.50],  # layer 1
    [0.90, 0.40, 0.85, 0.82, 0.90],  # layer 2
    [0.95, 0.50, 0.90, 0.92, 0.97],  # layer 3
    [0.99, 0.85, 0.95, 0.96, 0.99],  # layer 4 (top): min 0.85 > 0.8, so parsing moves down to layer 3
])
TABLE5 = np.array([
    [0.01, 0.20, 0.30, 0.10],
    [0.05, 0.30, 0.50, 0.40],
    [0.10, 0.75, 0.60, 0.90],
])


def is_post_order(spans):
    return spans == sorted(spans, key=lambda s: (s[1], -s[0])) and len(set(spans)) == len(spans)


def is_binary_tree(spans, n):
    """n - 1 nested spans with the root, each node splits into exactly two parts (spans or single words)."""
    if len(spans) != n - 1 or (n >= 2 and spans[-1] != (0, n)):
        return False
    S = set(spans)
    for (i, j) in spans:
        for (k, m) in spans:  # nested or disjoint
            if i < k < j < m:
                return False
        children = [c for c in S if c != (i, j) and i <= c[0] and c[1] <= j
                    and not any(p != (i, j) and p != c and p[0] <= c[0] and c[1] <= p[1] and i <= p[0]
                                and p[1] <= j for p in S)]
        covered = sum(c[1] - c[0] for c in children)
        if len(children) + (j - i - covered) != 2:
            return False
    return True


def test_algorithm1_hand_derived():
    # m = 1: layer 4 min 0.85 > 0.8 -> layer 3, split at link 1 (0.5): [0,1] | [2,5] at layer 2;
    # [2,5] at layer 2: min 0.82 > 0.8 -> layer 1: split at link 2 (0.3): [2] | [3,5] at layer 1;
    # [3,5]: split at link 4 (0.5): [3,4] | [5]. Tree ((0 1) (2 ((3 4) 5)))
    assert parse_algorithm1(TABLE6, min_layer=1) == [(0, 2), (3, 5), (3, 6), (2, 6), (0, 6)]
    # m = 2 (the code's) or 3 (paper): [2,5] reaches the minimum layer without a link <= 0.8 -> flat constituent
    assert parse_algorithm1(TABLE6, min_layer=2) == [(0, 2), (2, 6), (0, 6)]
    assert parse_algorithm1(TABLE6, min_layer=3) == [(0, 2), (2, 6), (0, 6)]
    # a higher threshold makes link 3 (0.82, layer 2) a breakpoint: [2,5] -> [2,3] | [4,5]
    assert parse_algorithm1(TABLE6, min_layer=2, threshold=0.83) == [(0, 2), (2, 4), (4, 6), (2, 6), (0, 6)]
    # starting at layer 3 gives the same as starting at the top here
    assert parse_algorithm1(TABLE6, min_layer=1, top_layer=3) == parse_algorithm1(TABLE6, min_layer=1)
    # minimum layer clamped to the layers present
    assert parse_algorithm1(TABLE6[:2], min_layer=3) == parse_algorithm1(TABLE6[:2], min_layer=1)
    assert parse_algorithm1(np.zeros((3, 0))) == []
    assert parse_algorithm1(np.full((3, 1), 0.99)) == [(0, 2)]


def test_algorithm1_threshold_is_strict():
    """Algorithm 1 line 10: a span moves down (or stays flat at layer m) only if its minimum link is ABOVE the
    threshold (a_b > thres); a minimum link equal to the threshold is a breakpoint."""
    links = np.array([[0.8, 0.9, 0.95]])
    # [0,3]: min 0.8 is not > 0.8 -> split [0] | [1,3]; [1,3] at m = 0: min 0.9 > 0.8 -> flat
    assert parse_algorithm1(links, min_layer=0, threshold=0.8) == [(1, 4), (0, 4)]
    assert parse_algorithm1(links, min_layer=0, threshold=0.79) == [(0, 4)]  # min 0.8 > 0.79: one flat span
    # the code's inner rule is strict too: a child goes one layer down only if all its links are > 0.7
    links = np.array([[0.1, 0.9, 0.2],
                      [0.5, 0.7, 0.75]])
    # layer 1: split at link 0 (0.5); child [1,3] has link 0.7, not > 0.7 -> stays at layer 1 -> split at link 1
    assert parse_algorithm1(links, min_layer=0, inner_threshold=0.7) == [(2, 4), (1, 4), (0, 4)]
    # inner threshold 0.69: [1,3] goes down to layer 0 -> split at link 2 (0.2)
    assert parse_algorithm1(links, min_layer=0, inner_threshold=0.69) == [(1, 3), (1, 4), (0, 4)]


def test_algorithm1_code_rule():
    # paper: split at link 0 (layer 2), [1,4] at layer 1 -> split at link 1: [1] | [2,4] at layer 0 ->
    # split at link 3: [2,3] | [4]
    assert parse_algorithm1(TABLE5, min_layer=0) == [(2, 4), (2, 5), (1, 5), (0, 5)]
    # code rule: [1,4] has a layer-2 link <= 0.7 (0.6), so it stays at layer 2 and splits at link 2
    assert parse_algorithm1(TABLE5, min_layer=0, inner_threshold=0.7) == [(1, 3), (3, 5), (1, 5), (0, 5)]
    assert parse_links(TABLE5, "algorithm1", min_layer=0, inner_threshold=0.7) == [(1, 3), (3, 5), (1, 5), (0, 5)]
    # with all child links > inner threshold the rule is Algorithm 1
    assert parse_algorithm1(TABLE6, min_layer=1, inner_threshold=0.05) == parse_algorithm1(TABLE6, min_layer=1)


def test_parse_greedy():
    # split at 0.2 (link 1), then [2,5] at 0.3 (link 3)
    assert parse_greedy(np.array([0.9, 0.2, 0.7, 0.3, 0.8])) == [(0, 2), (2, 4), (4, 6), (2, 6), (0, 6)]
    assert parse_greedy(np.full(4, 0.5)) == [(3, 5), (2, 5), (1, 5), (0, 5)]  # ties: leftmost -> right-branching
    assert parse_greedy(np.zeros(0)) == [] and parse_greedy(np.array([0.3])) == [(0, 2)]
    assert parse_links(TABLE6, "greedy", layer=1) == parse_greedy(TABLE6[1])
    assert parse_links(TABLE6, "greedy", min_layer=2) == parse_greedy(TABLE6[2])
    with pytest.raises(ValueError):
        parse_links(TABLE6, "greedy", layer=7)
    with pytest.raises(ValueError):
        parse_links(TABLE6, "cky")
    rng = np.random.default_rng(0)
    for n in range(2, 12):
        links = rng.random((4, n - 1))
        for spans in (parse_greedy(links[2]), parse_algorithm1(links, min_layer=1, threshold=1.1),
                      parse_algorithm1(links, min_layer=2, threshold=1.1, inner_threshold=0.7)):
            assert is_post_order(spans) and is_binary_tree(spans, n), (n, spans)
        spans = parse_algorithm1(links, min_layer=1)  # may be n-ary but always a tree with the root
        assert is_post_order(spans) and spans[-1] == (0, n) and len(spans) <= n - 1


def test_is_binary_tree_helper():  # the checker itself must reject bad trees
    assert is_binary_tree([(0, 2), (2, 4), (0, 4)], 4)
    assert not is_binary_tree([(0, 4)], 4)
    assert not is_binary_tree([(0, 2), (1, 3), (0, 4)], 4)
    assert not is_binary_tree([(0, 2), (2, 4), (1, 4)], 4)


# ============================================================================ Part A: model
def tiny(dictionary, seed=0, **over):
    torch.manual_seed(seed)
    return ct.build_standalone(dictionary, "constituent_transformer_tiny", **over).eval()


def direct_links(x_in, lqk_map, word, scale, d):
    """eqs. 5-7 from a layer's link input by loops: x_in [T, d] -> â [T-1] float64 (0 off word pairs)."""
    lqk = lqk_map(x_in).double()
    q, k = lqk[:, :d], lqk[:, d:]
    T = x_in.size(0)
    s = lambda i, j: (q[i] @ k[j]).item() / scale  # noqa: E731
    out = np.zeros(T - 1)
    for t in range(T - 1):
        if not (word[t] and word[t + 1]):
            continue
        p_r = _softmax2(s(t, t + 1), s(t, t - 1)) if word[t - 1] else 1.0
        p_l = _softmax2(s(t + 1, t), s(t + 1, t + 2)) if t + 2 < T and word[t + 2] else 1.0
        out[t] = math.sqrt(p_r * p_l)
    return out


@pytest.mark.parametrize("over", [{}, {"ca_own_norm": True, "ca_link_scale": 256.0}, {"ca_bos_in_chain": True}])
def test_model_links_and_priors_follow_the_equations(dictionary, over):
    model = tiny(dictionary, **over)
    d = model.args.encoder_embed_dim
    src = batch(dictionary, SENTS[:3])
    inputs = []
    hooks = [layer.attn.register_forward_pre_hook(lambda m, args: inputs.append((args[0], args[1])))
             for layer in model.encoder.layers]
    with torch.no_grad():
        _, extra = model(src)
    for h in hooks:
        h.remove()
    word = extra["word_mask"]
    assert word.tolist() == (src.ne(dictionary.bos()) & src.ne(dictionary.eos()) & src.ne(dictionary.pad())).tolist()
    if over.get("ca_bos_in_chain"):  # the authors' [CLS]: BOS is one more word of the chain and the prior
        word = word | src.eq(dictionary.bos())
    scale = over.get("ca_link_scale", d / 2)
    assert model.encoder.layers[0].attn.link_scale == scale
    for b in range(src.size(0)):
        acc = np.zeros(src.size(1) - 1)
        for l, layer in enumerate(model.encoder.layers):
            x_attn, raw = inputs[l]
            attn = layer.attn
            link_in = attn.link_norm(raw[b]) if over.get("ca_own_norm") else x_attn[b]
            a_hat = direct_links(link_in, attn.link_proj, word[b].tolist(), scale, d)
            acc = acc + (1 - acc) * a_hat  # eq. 8
            np.testing.assert_allclose(extra["link_probs"][l][b].double().numpy(), acc, atol=2e-6)
            np.testing.assert_allclose(extra["priors"][l][b].double().numpy(), direct_prior(acc, word[b].tolist()),
                                       rtol=1e-4, atol=1e-6)


def test_batch_invariance_and_masks(dictionary):
    model = tiny(dictionary)
    sent = SENTS[1]  # 5 words
    n = len(sent)
    full = batch(dictionary, [SENTS[0], sent, SENTS[2], SENTS[3]])  # longer, it, shorter, one word
    alone = batch(dictionary, [sent])
    with torch.no_grad():
        lf, ef = model(full)
        la, ea = model(alone)
    T = n + 2
    assert torch.allclose(lf[1, :T], la[0], atol=1e-5)
    for l in range(len(model.encoder.layers)):
        assert torch.allclose(ef["link_probs"][l][1, :T - 1], ea["link_probs"][l][0], atol=1e-6)
        assert ef["link_probs"][l][1, T - 1:].abs().sum() == 0
        assert torch.allclose(ef["priors"][l][1, :T, :T], ea["priors"][l][0], atol=1e-6)
    word, link, allowed = structure_masks(full, dictionary.bos(), dictionary.eos(), dictionary.pad())
    eye = torch.eye(full.size(1), dtype=torch.bool).expand_as(allowed)
    for a, C in zip(ef["link_probs"], ef["priors"]):
        assert a.abs()[~link].sum() == 0 and (a[link] > 0).all() and (a[link] <= 1).all()
        assert C[~allowed].abs().sum() == 0  # nothing between BOS/EOS/pad and anything else
        assert torch.equal(C[eye], torch.ones_like(C[eye]))
        assert torch.equal(C[~word], torch.eye(full.size(1))[None].expand_as(C)[~word])  # non-word rows: e_t
    ind_f, ind_a = model.induce(full), model.induce(alone)
    assert ind_f.spans[1] == ind_a.spans[0]
    assert ind_f.lengths.tolist() == [8, 5, 2, 1]
    assert ind_f.spans[2] == [(0, 2)] and ind_f.spans[3] == []
    for b, m in enumerate([8, 5, 2, 1]):
        assert is_post_order(ind_f.spans[b]) and (m < 2 or ind_f.spans[b][-1] == (0, m))
    gf, ga = model.induce(full, method="greedy", layer=1), model.induce(alone, method="greedy", layer=1)
    assert gf.spans[1] == ga.spans[0] and is_binary_tree(gf.spans[0], 8) and is_binary_tree(gf.spans[1], 5)
    # greedy at layer 1 on the links the model returns (word k at position k + 1)
    assert gf.spans[0] == parse_greedy(ef["link_probs"][1][0, 1:8].numpy())
    links_w = ind_f.maps["links"]
    assert links_w.shape == (4, 3, 7)
    assert torch.allclose(links_w[1, :, :n - 1], torch.stack([a[1, 1:n] for a in ef["link_probs"]]))
    assert torch.allclose(ind_f.maps["prior_layer2"][1, :n, :n], ef["priors"][2][1, 1:n + 1, 1:n + 1])


def direct_attention(attn, x, C, allowed):
    """Eq. 2 by loops: E_ij = C_ij softmax_j(q_i . k_j / sqrt(d_k)) over allowed keys j; -> out [B, T, d]."""
    B, T, d = x.shape
    H, dh = attn.h, attn.dh
    qkv = attn.in_proj(x).double()
    q, k, v = qkv[..., :d], qkv[..., d:2 * d], qkv[..., 2 * d:]
    out = torch.zeros(B, T, d, dtype=torch.float64)
    for b in range(B):
        for h in range(H):
            sl = slice(h * dh, (h + 1) * dh)
            for i in range(T):
                keys = [j for j in range(T) if allowed[b, i, j]]
                sc = torch.stack([q[b, i, sl] @ k[b, j, sl] / math.sqrt(dh) for j in keys])
                p = torch.softmax(sc, 0)
                for pj, j in zip(p, keys):
                    out[b, i, sl] += (1.0 if C is None else float(C[b, i, j])) * pj * v[b, j, sl]
    return F.linear(out, attn.out_proj.weight.double(), attn.out_proj.bias.double())


def test_prior_multiplies_attention(dictionary):
    torch.manual_seed(0)
    d = 8
    on = ConstituentSelfAttention(d, 2)
    off = ConstituentSelfAttention(d, 2, enabled=False)
    off.load_state_dict(on.state_dict(), strict=False)
    src = batch(dictionary, SENTS[:4])
    word, link, allowed = structure_masks(src, dictionary.bos(), dictionary.eos(), dictionary.pad())
    x = torch.randn(*src.shape, d)
    with torch.no_grad():
        y_on, a, C = on(x, x, None, word, link, allowed, 0)
        y_off, a_off, C_off = off(x, x, None, word, link, allowed, 0)
        assert a_off is None and C_off is None and not hasattr(off, "link_proj")
        assert torch.allclose(y_on.double(), direct_attention(on, x, C, allowed), atol=1e-5)
        assert torch.allclose(y_off.double(), direct_attention(off, x, None, allowed), atol=1e-5)
        # the prior changes the words of sentences with >= 2 words, nothing else (non-word rows: C_ii = 1)
        diff = (y_on - y_off).abs().amax(-1)
        multi = word & (word.sum(1, keepdim=True) >= 3)  # two words: â = 1, C = 1
        assert (diff[multi] > 1e-4).all() and (diff[~multi] < 1e-6).all()
        # a BOS/EOS/pad query sees itself only: out_proj(v_t)
        v = on.in_proj(x)[..., 2 * d:]
        assert torch.allclose(y_on[~word], on.out_proj(v[~word]), atol=1e-6)
        # words never read BOS/EOS/pad positions: changing them leaves word outputs and links unchanged
        x2 = torch.where(word[..., None], x, 5 * torch.randn_like(x))
        y2, a2, _ = on(x2, x2, None, word, link, allowed, 0)
        assert torch.allclose(y2[word], y_on[word], atol=1e-6) and torch.equal(a2, a)
        assert not torch.allclose(y2[~word], y_on[~word])


def test_model_prior_and_special_tokens(dictionary):
    model = tiny(dictionary)
    plain = tiny(dictionary, no_constituent_attention=True)
    missing, unexpected = plain.load_state_dict(model.state_dict(), strict=False)
    assert not missing and unexpected and all("link_proj" in k for k in unexpected)
    src = batch(dictionary, SENTS[:4])
    word = src.ne(dictionary.bos()) & src.ne(dictionary.eos()) & src.ne(dictionary.pad())
    with torch.no_grad():
        y, _ = model(src)
        y0, e0 = plain(src)
        assert e0["link_probs"] == [] and e0["priors"] == []
        diff = (y - y0).abs().amax(-1)
        multi = word & (word.sum(1, keepdim=True) >= 3)  # two words: â = 1, C = 1
        assert (diff[multi] > 1e-3).all()  # the prior changes the words' logits ...
        assert (diff[~multi] < 1e-5).all()  # ... and nothing else (BOS/EOS/pad and one-word sentences)
        with pytest.raises(RuntimeError):
            plain.induce(src)
        # word features do not depend on the BOS/EOS/pad embeddings
        f, _ = model(src, features_only=True)
        emb = model.encoder.embed_tokens.weight
        for t in (dictionary.bos(), dictionary.eos(), dictionary.pad()):
            emb[t] += torch.randn(emb.size(1))
        f2, _ = model(src, features_only=True)
        assert torch.allclose(f2[word], f[word], atol=1e-6)
        assert not torch.allclose(f2[~word], f[~word])


def mlm_batch(d, seed=0):
    """A fixed masked-LM batch: every third word (from a seeded offset) replaced by <mask>."""
    sents = [WORDS[:8], WORDS[2:9], WORDS[4:11], WORDS[1:5]]
    target = batch(d, sents)
    word = target.ne(d.bos()) & target.ne(d.eos()) & target.ne(d.pad())
    pos = torch.arange(target.size(1))[None].expand_as(target)
    masked = word & ((pos + torch.arange(len(sents))[:, None] + seed) % 3 == 0)
    src = target.masked_fill(masked, d.index("<mask>"))
    return src, target, masked


def train_steps(model, d, steps, lr=3e-3):
    src, target, masked = mlm_batch(d)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    losses = []
    for _ in range(steps):
        logits, _ = model(src, masked_tokens=masked)
        assert logits.shape == (int(masked.sum()), len(d))
        loss = F.cross_entropy(logits, target[masked])
        opt.zero_grad()
        loss.backward()
        losses.append(loss.item())
        opt.step()
    return losses


def test_training_reduces_mlm_loss_and_reaches_link_maps(dictionary):
    model = tiny(dictionary)
    src, target, masked = mlm_batch(dictionary)
    logits, _ = model(src, masked_tokens=masked)
    F.cross_entropy(logits, target[masked]).backward()
    for layer in model.encoder.layers:
        g = layer.attn.link_proj.weight.grad
        assert g is not None and torch.isfinite(g).all() and g.abs().sum() > 0
    model.zero_grad()
    losses = train_steps(model, dictionary, 30)
    assert losses[-1] < 0.6 * losses[0], losses


def test_bos_in_chain_links_bos_but_parses_words(dictionary):
    """--ca-bos-in-chain: the BOS-first-word link is a link (0 < a < 1 at layer 0) and word features read the BOS
    embedding; induce() parses the links between words only, as the authors' parse.py drops [CLS]'s link. With
    the code's diagonal, BOS's C_ii is the code value as a word's (EOS, outside the chain, keeps 1)."""
    model = tiny(dictionary, ca_bos_in_chain=True, ca_code_diagonal=True)
    src = batch(dictionary, SENTS[:3])
    with torch.no_grad():
        f, extra = model(src, features_only=True)
        a0 = extra["link_probs"][0]
        assert (a0[:, 0] > 0).all() and (a0[:, 0] < 1).all()
        for l, C in enumerate(extra["priors"]):
            assert C[:, 0, 0].tolist() == pytest.approx([code_diagonal_value(l)] * 3)
            assert C[0, 9, 9] == 1.0  # sentence 0's EOS
        ind = model.induce(src, method="greedy", layer=1)
        for b, n in enumerate([8, 5, 2]):
            assert ind.spans[b] == parse_greedy(extra["link_probs"][1][b, 1:n].numpy())
            words_links = torch.stack([a[b, 1:n] for a in extra["link_probs"]])
            assert torch.allclose(ind.maps["links"][b, :, :n - 1], words_links)
        model.encoder.embed_tokens.weight[dictionary.bos()] += 1.0
        f2, _ = model(src, features_only=True)
    word = extra["word_mask"]
    assert not torch.allclose(f2[word], f[word])


def test_code_init_is_xavier_per_map_with_default_biases():
    """--ca-code-init: the authors' separate Linear(d, d) maps, xavier each (bound sqrt(6 / 2d)), PyTorch's
    default biases (|b| <= d^-1/2, not 0); the default: xavier over the fused [3d, d] / [2d, d] (bound
    sqrt(6 / 4d), sqrt(6 / 3d)) and zero biases."""
    d = 64
    torch.manual_seed(0)
    code, fused = ConstituentSelfAttention(d, 4, code_init=True), ConstituentSelfAttention(d, 4)
    for name, k in (("in_proj", 3), ("link_proj", 2), ("out_proj", 1)):
        wc, wf = getattr(code, name).weight, getattr(fused, name).weight
        for block in wc.split(d):
            assert 0.95 * math.sqrt(6 / (2 * d)) < block.abs().max() <= math.sqrt(6 / (2 * d))
        assert 0.95 * math.sqrt(6 / ((k + 1) * d)) < wf.abs().max() <= math.sqrt(6 / ((k + 1) * d))
        bc = getattr(code, name).bias
        assert 0.9 / math.sqrt(d) < bc.abs().max() <= 1 / math.sqrt(d)
        assert torch.all(getattr(fused, name).bias == 0)
    # in the model: the flag reaches every layer's attention, and the FFN's biases are PyTorch's default too
    wd = Dictionary()
    model = ct.build_standalone(wd, "constituent_transformer_tiny", ca_code_init=True)
    for layer in model.encoder.layers:
        assert layer.attn.code_init
        for fc in (layer.fc1, layer.fc2):
            assert 0 < fc.bias.abs().max() <= fc.in_features ** -0.5
    assert all(torch.all(layer.fc1.bias == 0) for layer in ct.build_standalone(wd, "constituent_transformer_tiny")
               .encoder.layers)


def test_layer_is_the_pre_ln_block():
    """A layer (eval): x1 = x + attn(LN_a(x)), out = x1 + fc2(gelu(fc1(LN_f(x1)))), written out from its parts."""
    model = tiny(Dictionary())
    layer = model.encoder.layers[0]
    torch.manual_seed(1)
    src = torch.tensor([[0, 4, 5, 6, 2]])
    word, link, allowed = structure_masks(src, 0, 2, 1)
    x = torch.randn(1, 5, model.args.encoder_embed_dim)
    with torch.no_grad():
        out, _, _ = layer(x, None, word, link, allowed)
        h, _, _ = layer.attn(layer.attn_norm(x), x, None, word, link, allowed, 0)
        x1 = x + h
        expected = x1 + layer.fc2(F.gelu(layer.fc1(layer.ffn_norm(x1))))
    assert torch.allclose(out, expected, atol=1e-5)
