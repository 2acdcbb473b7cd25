"""StructFormer parser (Shen et al. 2021, "StructFormer: Joint Unsupervised Induction of Dependency and
Constituency Structure from Masked Language Modeling", Sections 3-4 and Appendix A.1).

"The authors' code" below is `google-research/google-research` ``structformer/structformer.py`` (the parser
network, its LayerNorm, the log-parametrised temperatures, the distance calibration) and
``structformer/test_phrase_grammar.py`` (the evaluation's root and heads).

Notation of the paper: syntactic **distance** τ_k between consecutive words k and k+1 ([n-1] per sentence) and
syntactic **height** δ_i of word i ([n] per sentence).

* Parser network (Section 4.1): token embeddings -> ``conv_layers`` x (Conv1d(kernel 2W+1) -> tanh) (eq. 1;
  ``layer_norm=True`` puts the authors' code's non-affine LayerNorm before each tanh) ->
  ``τ_k = W1 tanh(W2 [s_k; s_{k+1}] + b2) + b1`` (eq. 2) and ``δ_i = W1' tanh(W2' s_i + b2') + b1'`` (eq. 3).
* Dependency distribution (Section 4.2, eqs. 6-12): for word i, the smallest legit constituent C(x_i) = [l, r]
  has left-boundary CDF ``F_i(j) = P(l <= j) = σ(s_0 (δ_i - max_{j<=k<i} τ_k))`` (eq. 7) and right-boundary
  survival ``G_i(j) = P(r >= j) = σ(s_0 (δ_i - max_{i<=k<j} τ_k))``; ``p_left(l|i) = F_i(l) - F_i(l-1)`` (eq. 8),
  ``p_right(r|i) = G_i(r) - G_i(r+1)`` (eq. 9), ``p_C([l,r]|i) = p_left p_right`` (eq. 10), the head of a
  constituent ``p_Pr(j|[l,r]) = softmax_{l<=j<=r}(s_1 δ_j)`` (eq. 11) and
  ``p_D(j|i) = sum_{[l,r]} p_Pr(j|[l,r]) p_C([l,r]|i)`` for j != i, 0 for j = i (eq. 12).
  ``s_0 = exp(θ_0) = 1/μ_1`` and ``s_1 = exp(θ_1) = 1/μ_2`` are the learnable temperatures (log-parametrised, as
  the authors' code, so they stay positive).

  **Root.** The paper does not model a root explicitly: the mass of j = i (x_i heads its own C(x_i), i.e. it has
  no parent inside the sentence) is dropped by eq. 12, so rows of p_D sum to less than 1 (paper Fig. 5). We
  return that mass as ``root`` [B, T]: for every word ``sum_j p_D(j|i) + root_i = 1``; rows/columns of BOS, EOS
  and padding are 0 everywhere.

  Computed in O(B T^2) memory and O(B T^3) time (two batched matmuls + cumulative sums/maxima), never the
  reference's [B, L, L, L] tensors: with ``e_j = exp(s_1 δ_j - c)`` and ``Z(l, r) = sum_{k=l..r} e_k`` (a row-wise
  cumsum from l: no cancellation), ``T_i(l) = sum_r p_right(r|i) / Z(l, r)`` (``p_right @ invZ^T``),
  ``U_i(r) = sum_l p_left(l|i) / Z(l, r)`` (``p_left @ invZ``); then ``p_D(j|i) = e_j sum_{l<=j} p_left(l|i) T_i(l)``
  for j <= i (a cumsum; j = i is the root mass) and ``e_j sum_{r>=j} p_right(r|i) U_i(r)`` for j > i (a reverse
  cumsum). The shift c must stay within fp32's range of every span's logits (e_j / Z(l, r) is a softmax over
  [l, r]): spans are grouped by their max logit into bands of width :data:`HEAD_BAND` below the sentence's max,
  and each band is one pass with its own shift (only its spans in invZ). So eq. 11 is exact for every span,
  however far apart the heights; sentences whose scaled heights spread over less than HEAD_BAND (all in
  practice) take one pass. The tests compare against a literal transcription (float64, [n, n, n] tensors).

* Calibration (authors' code only, ``calibrate=True``): ``τ <- τ - max_{spans} margin`` with
  ``margin([i, j]) = min(relu(τ_{i-1} - max_{i<=k<=j} δ_k), relu(τ_j - max_{i<=k<=j} δ_k))`` over the spans of
  words other than the whole sentence (a sentence boundary counts as +inf: the min then takes the other side).
  The code takes the max over the **whole batch** (parses depend on batch composition); here it is taken per
  sentence, over its own words only (``calibrate='batch'``: the code's batch max in training, per sentence in
  eval, where the code parses one sentence at a time).

* Parsing (one sentence at a time, induce time): :func:`distance_to_spans` (Algorithm 1: split recursively at the
  largest distance, leftmost on ties, -> binary tree), :func:`heads_from_dependency` (eq. 17, the word of largest
  height is the root, as the authors' evaluation) and :func:`joint_parse` (Algorithm 3: the same tree, and each
  constituent's head is its children's head of larger height).

Token layout of the ``tree_induction`` task: ``<s> w_1 .. w_n </s> <pad>..``. Only words take part: the conv
stack sees zeros at BOS/EOS/pad (so a sentence's outputs do not depend on its batch), distances exist only between
two words (``split`` mask), a sentence boundary is an infinite distance, and non-words never receive or give
dependency mass. All structure arithmetic is fp32 with autocast off.
"""

from __future__ import annotations

from typing import List, Optional, Sequence, Tuple, Union

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor

from fairseq_tree.trees import Span, distances_to_tree, post_order
from fairseq_tree.utils.precision import autocast_off

#: width of a band of span maxima that share one shift in eq. 11's prefix sums: 1/Z(l, r) <= e^64 inside a band,
#: far from fp32's overflow (e^88), and every e_j of a span is <= 1
HEAD_BAND = 64.0


def _fp(x: Tensor) -> Tensor:
    """Structure precision: fp32, or fp64 if given fp64 (for gradcheck); never half."""
    return x if x.dtype == torch.float64 else x.float()


# ------------------------------------------------------------------------------------------- masks
def word_masks(src_tokens: Tensor, bos: int, eos: int, pad: int) -> Tuple[Tensor, Tensor]:
    """src_tokens [B, T] -> (word [B, T] bool: not BOS/EOS/pad; split [B, T-1] bool: positions t and t+1 are both
    words, i.e. distance t exists)."""
    word = src_tokens.ne(bos) & src_tokens.ne(eos) & src_tokens.ne(pad)
    return word, word[:, :-1] & word[:, 1:]


# ------------------------------------------------------------------------------------------- network
class StructFormerParser(nn.Module):
    """Parser network (eqs. 1-3) and the learnable temperatures s_0, s_1 of eqs. 6 and 11.

    ``forward(emb [B, T, d], word [B, T], split [B, T-1]) -> (distance [B, T-1], height [B, T])``, fp32, 0 where
    not defined (distance: not between two words; height: not a word)."""

    def __init__(self, embed_dim: int, conv_layers: int = 3, conv_size: int = 9, layer_norm: bool = False,
                 calibrate: Union[bool, str] = False):
        super().__init__()
        assert conv_size % 2 == 1, "the convolution kernel 2W+1 is odd"
        d = embed_dim
        self.convs = nn.ModuleList([nn.Conv1d(d, d, conv_size, padding=conv_size // 2) for _ in range(conv_layers)])
        self.conv_norms = nn.ModuleList([nn.LayerNorm(d, elementwise_affine=False) if layer_norm else nn.Identity()
                                         for _ in range(conv_layers)])
        self.distance_hidden = nn.Linear(2 * d, d)  # W2^τ over [s_k; s_{k+1}] (the code's kernel-2 conv)
        self.distance_out = nn.Linear(d, 1)
        self.height_hidden = nn.Linear(d, d)
        self.height_out = nn.Linear(d, 1)
        self.hidden_norm = (lambda x: F.layer_norm(x, x.shape[-1:])) if layer_norm else (lambda x: x)
        self.log_scale = nn.Parameter(torch.zeros(2))  # log s_0 (eq. 6), log s_1 (eq. 11); 1 at init as the code
        self.calibrate = calibrate

    @property
    def scales(self) -> Tensor:
        return self.log_scale.float().exp()

    def forward(self, emb: Tensor, word: Tensor, split: Tensor) -> Tuple[Tensor, Tensor]:
        h = emb
        for conv, norm in zip(self.convs, self.conv_norms):
            h = h.masked_fill(~word[..., None], 0.0)  # BOS/EOS/pad read as the conv's zero padding
            h = torch.tanh(norm(conv(h.transpose(1, 2)).transpose(1, 2)))  # eq. 1
        pair = torch.cat([h[:, :-1], h[:, 1:]], -1)
        distance = self.distance_out(torch.tanh(self.hidden_norm(self.distance_hidden(pair)))).squeeze(-1)  # eq. 2
        height = self.height_out(torch.tanh(self.hidden_norm(self.height_hidden(h)))).squeeze(-1)  # eq. 3
        distance = torch.where(split, distance.float(), 0.0)
        height = torch.where(word, height.float(), 0.0)
        if self.calibrate:
            distance = calibrate_distance(distance, height, word, split,
                                          batch=self.calibrate == "batch" and self.training)
        return distance, height


# ------------------------------------------------------------------------------------------- calibration
def calibrate_distance(distance: Tensor, height: Tensor, word: Tensor, split: Tensor, batch: bool = False
                       ) -> Tensor:
    """The authors' code's distance calibration, **per sentence**: distance [B, T-1], height [B, T], word [B, T],
    split [B, T-1] -> distance - margin_b (0 where not split), margin_b = max over the word spans [i, j] (inclusive,
    not the whole sentence) of min(relu(τ_{i-1} - hmax(i, j)), relu(τ_j - hmax(i, j))), a sentence boundary being
    +inf; ``batch``: one margin for all, max_b margin_b (the code's training). O(T^2) memory."""
    tau, delta = _fp(distance), _fp(height)
    B, T = delta.shape
    idx = torch.arange(T, device=delta.device)
    upper = idx[:, None] <= idx[None, :]  # [i, j]: i <= j
    neg = torch.finfo(delta.dtype).min
    hmax = torch.cummax(torch.where(upper & word[:, None, :], delta[:, None, :], neg), -1).values  # [B, i, j]
    no = split.new_zeros(B, 1)
    zero = tau.new_zeros(B, 1)
    left_ok, left_tau = torch.cat([no, split], 1), torch.cat([zero, tau], 1)  # split (i-1, i), by i
    right_ok, right_tau = torch.cat([split, no], 1), torch.cat([tau, zero], 1)  # split (j, j+1), by j
    ml = torch.relu(left_tau[:, :, None] - hmax)
    mr = torch.relu(right_tau[:, None, :] - hmax)
    lo, ro = left_ok[:, :, None], right_ok[:, None, :]
    margin = torch.where(lo & ro, torch.minimum(ml, mr), torch.where(lo, ml, mr))
    valid = upper & word[:, :, None] & word[:, None, :] & (lo | ro)
    margin = torch.where(valid, margin, 0.0).flatten(1).max(1).values  # [B], >= 0
    if batch and B:
        margin = margin.max().expand(B)
    return torch.where(split, tau - margin[:, None], 0.0)


# ------------------------------------------------------------------------------------------- p_D, fast
def _range_valid(split: Tensor) -> Tensor:
    """split [B, T-1] -> ok [B, T, T] with ok[a, b] (a <= b): every split a..b-1 exists (positions a..b are one
    contiguous run of words); symmetric."""
    bad = F.pad(torch.cumsum((~split).to(torch.int32), 1), (1, 0))  # [B, T]: missing splits before position t
    return bad[:, :, None] == bad[:, None, :]


def boundary_distributions(distance: Tensor, height: Tensor, word: Tensor, split: Tensor, scale: Tensor
                           ) -> Tuple[Tensor, Tensor]:
    """Eqs. 6-9: -> (p_left [B, T(i), T(l)], p_right [B, T(i), T(r)]) fp32; rows of non-words are 0, and each word
    row sums to 1 over the words of its sentence (l <= i <= r)."""
    tau, delta = _fp(distance), _fp(height)
    B, T = delta.shape
    idx = torch.arange(T, device=delta.device)
    k = idx[:-1]
    ok = _range_valid(split)
    neg = torch.finfo(delta.dtype).min
    x = scale * delta[:, :, None]  # [B, i, 1]
    # left: R[i, j] = max_{j<=k<i} τ_k (reverse cummax of the row's τ_k, k < i), F_i(j) = P(l <= j)
    A = torch.where(k[None, None, :] < idx[None, :, None], tau[:, None, :], neg)  # [B, i, k]
    R = torch.flip(torch.cummax(torch.flip(A, [-1]), -1).values, [-1])
    R = F.pad(R, (0, 1), value=0.0)  # column j = T-1 is never < i
    before = idx[None, :] < idx[:, None]  # [i, j]: j < i
    Fl = torch.where(before, torch.where(ok, torch.sigmoid(x - scale * torch.where(before, R, 0.0)), 0.0), 1.0)
    p_left = Fl - F.pad(Fl[:, :, :-1], (1, 0), value=0.0)  # eq. 8 (0 for l > i: 1 - 1)
    # right: Q[i, j] = max_{i<=k<=j} τ_k, G_i(j) = P(r >= j) = σ(s_0 (δ_i - Q[i, j-1])) for j > i
    A = torch.where(k[None, None, :] >= idx[None, :, None], tau[:, None, :], neg)
    Q = F.pad(torch.cummax(A, -1).values, (1, 0), value=0.0)  # column j holds max_{i<=k<j}
    after = idx[None, :] > idx[:, None]
    G = torch.where(after, torch.where(ok, torch.sigmoid(x - scale * torch.where(after, Q, 0.0)), 0.0), 1.0)
    p_right = G - F.pad(G[:, :, 1:], (0, 1), value=0.0)  # eq. 9 (0 for r < i: 1 - 1)
    row = word[:, :, None]
    return torch.where(row, p_left, 0.0), torch.where(row, p_right, 0.0)


def _head_bands(a: Tensor, word: Tensor, split: Tensor, upper: Tensor) -> Tuple[Optional[Tensor], Tensor]:
    """Shift bands for eq. 11: a [B, T] head logits s_1 δ (words), upper [T, T] (l <= r) -> (band [B, l, r] long or
    None, shift m [B, 1], the sentence's max logit), detached. A span [l, r] of one sentence's words is in band
    ``k = floor((m - M(l, r)) / HEAD_BAND)``, M(l, r) = max_{l<=k'<=r} a_k', so its max lies in
    (c_k - HEAD_BAND, c_k] with c_k = m - k HEAD_BAND; other spans are in band -1. None: every sentence's logits
    lie within HEAD_BAND of its max, so every span is in band 0 (the usual case: no [B, T, T] cummax)."""
    a = a.detach()
    neg = torch.finfo(a.dtype).min
    m = torch.where(word, a, neg).max(1, keepdim=True).values  # [B, 1]
    low = torch.where(word, a, -neg).min(1, keepdim=True).values
    if not bool(((m - low) < HEAD_BAND).all()):
        M = torch.cummax(torch.where(upper, a[:, None, :], neg), -1).values  # [B, l, r]
        inside = upper & _range_valid(split) & word[:, :, None] & word[:, None, :]
        return torch.where(inside, torch.floor((m[:, :, None] - M) / HEAD_BAND), -1.0).long(), m
    return None, m


def dependency_distribution(distance: Tensor, height: Tensor, word: Tensor, split: Tensor, dist_scale: Tensor,
                            head_scale: Tensor) -> Tuple[Tensor, Tensor]:
    """Eqs. 6-12 in O(B T^2) memory. distance [B, T-1] (τ_t between positions t, t+1, read where ``split``),
    height [B, T] (δ, read where ``word``), dist_scale s_0 = 1/μ_1, head_scale s_1 = 1/μ_2 (scalars).

    -> (p_D [B, T, T] fp32 (fp64 for fp64 inputs) with p_D[b, i, j] = p(parent of position i is position j),
    0 on the diagonal and on every row/column that is not a word; root [B, T], the dropped self mass:
    sum_j p_D[i, j] + root[i] = 1 for every word i, 0 elsewhere)."""
    with autocast_off(height):
        delta = _fp(height)
        s0, s1 = _fp(dist_scale), _fp(head_scale)
        B, T = delta.shape
        p_left, p_right = boundary_distributions(distance, delta, word, split, s0)
        idx = torch.arange(T, device=delta.device)
        upper = idx[:, None] <= idx[None, :]  # [l, r]
        a = torch.where(word, s1 * delta, torch.finfo(delta.dtype).min)  # eq. 11's logits
        band, shift = _head_bands(a, word, split, upper)
        left = right = 0.0
        for k in range(1 if band is None else int(band.max()) + 1):  # one pass unless logits spread over HEAD_BAND
            # e_j = exp(a_j - c_k): <= 1 inside band-k spans (their max is <= c_k), clamped outside (never used)
            e = torch.where(word, torch.exp(torch.clamp(a - (shift - k * HEAD_BAND), max=0.0)), 0.0)  # [B, T]
            Z = torch.cumsum(torch.where(upper, e[:, None, :], 0.0), -1)  # [B, l, r], summed from l: no cancellation
            has = upper & (Z > 0) if band is None else band == k  # Z >= exp(-HEAD_BAND) there
            invZ = torch.where(has, 1.0 / torch.where(has, Z, 1.0), 0.0)
            Ti = torch.bmm(p_right, invZ.transpose(1, 2))  # [B, i, l] = sum_r p_right(r|i) / Z(l, r)
            Ui = torch.bmm(p_left, invZ)  # [B, i, r] = sum_l p_left(l|i) / Z(l, r)
            left = left + e[:, None, :] * torch.cumsum(p_left * Ti, -1)  # j <= i: sum_{l<=j}
            right = right + e[:, None, :] * torch.flip(torch.cumsum(torch.flip(p_right * Ui, [-1]), -1), [-1])
        lower = idx[None, :] < idx[:, None]  # [i, j]: j < i
        pair = word[:, :, None] & word[:, None, :]
        p_D = torch.where(pair & lower, left, torch.where(pair & lower.T, right, 0.0))  # eq. 12
        root = torch.where(word, torch.diagonal(left, dim1=1, dim2=2), 0.0)
    return p_D, root


# ------------------------------------------------------------------------------------------- parsing
def distance_to_spans(distance: Sequence[float]) -> List[Span]:
    """Algorithm 1 for one sentence: distance [n-1] -> the n-1 half-open word spans (>= 2 words) of the binary tree
    obtained by splitting every span at its largest distance (leftmost on ties), post-order, root (0, n)
    included; [] for n < 2."""
    return distances_to_tree(np.asarray(distance, dtype=np.float64).reshape(-1).tolist())


def heads_from_dependency(p_D, height) -> List[int]:
    """Eq. 17 for one sentence: p_D [n, n] (row i: p(parent j | word i)), height [n] -> heads, 1-based, 0 for the
    root. The word of largest height is the root (the authors' evaluation); every other word takes
    argmax_{j != i} p_D(j|i)."""
    p = np.array(p_D, dtype=np.float64)
    h = np.asarray(height, dtype=np.float64).reshape(-1)
    n = h.shape[0]
    if n == 0:
        return []
    np.fill_diagonal(p, -np.inf)
    root = int(np.argmax(h))
    return [0 if i == root else int(np.argmax(p[i])) + 1 for i in range(n)]


def joint_parse(distance: Sequence[float], height: Sequence[float]) -> Tuple[List[Span], List[int]]:
    """Algorithm 3 (Appendix A.1) for one sentence: split at the largest distance (leftmost on ties) as Algorithm 1;
    a constituent's parent is the parent of larger height of its two children (the right one on ties, as the
    algorithm's ``else``), and the other child's parent depends on it. -> (spans as :func:`distance_to_spans`,
    heads 1-based with 0 for the root)."""
    d = np.asarray(distance, dtype=np.float64).reshape(-1)
    h = np.asarray(height, dtype=np.float64).reshape(-1)
    n = h.shape[0]
    heads = [0] * n
    spans: List[Span] = []

    def build(s: int, e: int) -> int:  # words s..e-1 -> parent word; iterative depth is O(n), fine for sentences
        if e - s == 1:
            return s
        spans.append((s, e))
        k = s + int(np.argmax(d[s:e - 1]))
        pl, pr = build(s, k + 1), build(k + 1, e)
        if h[pl] > h[pr]:
            heads[pr] = pl + 1
            return pl
        heads[pl] = pr + 1
        return pr

    if n:
        import sys
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, 4 * n + 100))
        try:
            build(0, n)
        finally:
            sys.setrecursionlimit(limit)
    return post_order(spans), heads


PARSE_METHODS = ("distance", "joint")

__all__: Sequence[str] = (
    "word_masks", "StructFormerParser", "calibrate_distance", "boundary_distributions", "dependency_distribution",
    "HEAD_BAND", "distance_to_spans", "heads_from_dependency", "joint_parse", "PARSE_METHODS",
)
