"""Constituent attention (Wang, Lee & Chen, EMNLP 2019, "Tree Transformer", Sections 4-6).

"The authors' code" below is `yaushian/Tree-Transformer` @ 04d19d3: ``attention.py`` (``GroupAttention``: the link
scores, their 256 scale, the prior C and its diagonal), ``models.py`` (the ``[CLS]`` token in the link chain) and
``parse.py`` (the parse recursion, its hard-coded layers and the 0.7 rule); where it differs from the paper is
listed below and offered behind the ``--ca-*`` flags.

Per layer l, over the positions t = 0..T-1 of a batch (token layout of the ``tree_induction`` task:
``<s> w_1 .. w_n </s> <pad>..``; only *words* take part in the structure):

* neighbour link scores (eq. 5): ``s_{t,t+1} = q_t . k_{t+1} / scale`` and ``s_{t,t-1} = q_t . k_{t-1} / scale``
  with link query/key vectors q, k (d_model each) from their own linear maps and ``scale = d_model / 2``
  (the paper; the authors' code hard-codes 256). Computed as row-wise dot products: O(T d), never the
  T x T score matrix;
* left/right softmax (eq. 6): ``p_{t,t+1} = sigmoid(s_{t,t+1} - s_{t,t-1})`` when both neighbours are words,
  1 when only the right one is (first word), 0 when only the left one is (last word);
* mutual link (eq. 7): ``â_t = sqrt(p_{t,t+1} p_{t+1,t})`` computed as ``exp((log p + log p') / 2)`` (no
  infinite gradient of the square root at 0); links exist only between two adjacent *words*, â = 0
  elsewhere (BOS-word, word-EOS, padding);
* hierarchical constraint (eq. 8): ``a^l = a^{l-1} + (1 - a^{l-1}) â^l`` with ``a^{-1} = 0``;
* constituent prior (eqs. 3-4): ``C_ij = prod_{k=i}^{j-1} a_k = exp(-|σ_i - σ_j|)`` with the exclusive cumulative
  sum ``σ_i = sum_{k<i} log max(a_k, eps)``: O(T^2) instead of the reference's two T^3 matmuls. ``C`` is
  symmetric, ``C_ii = 1`` (the empty product, as eq. 3; ``code_diagonal=True`` gives the reference's
  ``C_ii = 1 - (1 - sqrt(1e-9))^{l+1}``, about 3.2e-5 (l+1), i.e. a word hardly attends to itself);
  ``C_ij = 0`` exactly when i or j is not a word (i != j);
* the attention (eq. 2): ``E = C ⊙ softmax(Q K^T / sqrt(d_k))``, one C shared by all heads, **not
  renormalised** (the paper and the code multiply after the softmax; folding log C into the logits would be a
  different model).

BOS, EOS and padding: they are kept out of every link and every prior; in the attention a word query sees
word keys only (the softmax runs over the sentence's words), and a BOS/EOS/pad query sees itself only (prior 1).
So nothing but the words influences a word's representation (beyond the fixed position offset of BOS): the
induced structure and the word logits are independent of the BOS/EOS/pad embeddings and of the padding
length. The authors' code instead puts ``[CLS]`` into the link chain and drops its link at parse time
(``structure_masks(bos_in_chain=True)``: BOS takes part as a word; the parse reads the links between words only).

All structure arithmetic (link scores, softmax, a, σ, C) runs in fp32 with autocast disabled, whatever the
precision of the surrounding model (fp16, bf16 autocast); the projections producing q and k run in the
ambient precision.

Parsing (Section 6): :func:`parse_algorithm1` (Algorithm 1 over the layers, threshold 0.8, minimum layer m;
optionally the reference code's extra 0.7 rule) and :func:`parse_greedy` (top-down greedy split at the minimum
link of one layer, Shen et al. 2018). Both take the link probabilities between consecutive words of one
sentence and return half-open word spans in post-order (sorted by (end, -start)), the root included.
"""

from __future__ import annotations

import math
from typing import List, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from fairseq_tree.trees import Span, distances_to_tree, post_order
from fairseq_tree.utils.init import xavier_per_block_
from fairseq_tree.utils.precision import autocast_off

#: log-link clamp: log(max(a, LOG_EPS)); the reference adds 1e-9 before the log.
LOG_EPS = 1e-9
#: the reference's self-link value: sqrt(0 * 0 + 1e-9) per layer, accumulated by eq. 8.
CODE_DIAG_LINK = math.sqrt(1e-9)


# ------------------------------------------------------------------------------------------- structure
def structure_masks(src_tokens: Tensor, bos: int, eos: int, pad: int, bos_in_chain: bool = False):
    """-> (word [B, T] bool, link [B, T-1] bool, allowed [B, T, T] bool).

    ``word``: positions that take part in the structure (not BOS, EOS or pad; ``bos_in_chain``: BOS too, as the
    authors' code's ``[CLS]``). ``link[t]``: positions t and t+1 both take part. ``allowed[i, j]``: query i may
    attend key j (both take part, or i == j)."""
    word = src_tokens.ne(eos) & src_tokens.ne(pad)
    if not bos_in_chain:
        word &= src_tokens.ne(bos)
    link = word[:, :-1] & word[:, 1:]
    T = src_tokens.size(1)
    eye = torch.eye(T, dtype=torch.bool, device=src_tokens.device)
    allowed = (word[:, :, None] & word[:, None, :]) | eye
    return word, link, allowed


class _LinkScores(torch.autograd.Function):
    """(lqk [B, T, 2d] = [q_link ; k_link], scale) -> (s_next, s_prev) [B, T-1] fp32 with
    s_next[t] = q_t . k_{t+1} / scale and s_prev[t] = q_{t+1} . k_t / scale.

    Row-wise dot products (O(T d)); the backward writes the gradient of [q ; k] in place into one buffer (no
    slice/zero/cat passes over [B, T, d] as autograd would make)."""

    @staticmethod
    def forward(ctx, lqk: Tensor, scale: float):
        x = lqk.float()
        d = x.size(-1) // 2
        q, k = x[..., :d], x[..., d:]
        s_next = (q[:, :-1] * k[:, 1:]).sum(-1) / scale
        s_prev = (q[:, 1:] * k[:, :-1]).sum(-1) / scale
        ctx.save_for_backward(lqk)
        ctx.scale = scale
        return s_next, s_prev

    @staticmethod
    def backward(ctx, g_next: Tensor, g_prev: Tensor):
        (lqk,) = ctx.saved_tensors
        x = lqk.float()
        d = x.size(-1) // 2
        q, k = x[..., :d], x[..., d:]
        gn = (g_next.float() / ctx.scale)[..., None]
        gp = (g_prev.float() / ctx.scale)[..., None]
        grad = torch.empty_like(x)
        gq, gk = grad[..., :d], grad[..., d:]
        torch.mul(gn, k[:, 1:], out=gq[:, :-1])
        gq[:, -1].zero_()
        gq[:, 1:].addcmul_(gp, k[:, :-1])
        torch.mul(gn, q[:, :-1], out=gk[:, 1:])
        gk[:, 0].zero_()
        gk[:, :-1].addcmul_(gp, q[:, 1:])
        return grad.to(lqk.dtype), None


def link_scores(lqk: Tensor, scale: float) -> Tuple[Tensor, Tensor]:
    """Eq. 5 for both neighbours: lqk [B, T, 2d] (link queries ; link keys) -> (s_next, s_prev) [B, T-1] fp32."""
    return _LinkScores.apply(lqk, scale)


def neighbour_links(s_next: Tensor, s_prev: Tensor, link: Tensor) -> Tensor:
    """Eqs. 6-7: s_next[t] = s_{t,t+1}, s_prev[t] = s_{t+1,t} [B, T-1], link [B, T-1] bool -> â [B, T-1] fp32
    (0 where no link): â_t = sqrt(p_{t,t+1} p_{t+1,t}), the mutual link between positions t and t+1."""
    s_next, s_prev = s_next.float(), s_prev.float()
    zero = s_next.new_zeros(s_next.size(0), 1)
    no = link.new_zeros(link.size(0), 1)
    right = torch.cat([torch.where(link, s_next, 0.0), zero], 1)  # [B, T]: score of t -> t+1
    left = torch.cat([zero, torch.where(link, s_prev, 0.0)], 1)  # [B, T]: score of t -> t-1
    has_right, has_left = torch.cat([link, no], 1), torch.cat([no, link], 1)
    diff = right - left
    # eq. 6 as a two-way softmax; a missing neighbour gets probability 0 (the other one 1)
    logp_right = torch.where(has_left, F.logsigmoid(diff), 0.0)  # log p_{t,t+1} (valid where has_right)
    logp_left = torch.where(has_right, F.logsigmoid(-diff), 0.0)  # log p_{t,t-1} (valid where has_left)
    log_ahat = 0.5 * (logp_right[:, :-1] + logp_left[:, 1:])
    return torch.where(link, log_ahat.exp(), 0.0)


def hierarchical_links(a_prev: Optional[Tensor], a_hat: Tensor) -> Tensor:
    """Eq. 8: a^l = a^{l-1} + (1 - a^{l-1}) â^l (a^{-1} = 0, passed as None)."""
    if a_prev is None:
        return a_hat
    return a_prev + (1.0 - a_prev) * a_hat


def constituent_prior(a: Tensor, allowed: Tensor, eps: float = LOG_EPS, diagonal: Optional[float] = None,
                      word: Optional[Tensor] = None) -> Tensor:
    """Eqs. 3-4 in O(T^2): a [B, T-1] links between positions t and t+1 (0 where none), allowed [B, T, T]
    -> C [B, T, T] fp32 with C_ij = prod_{k=min(i,j)}^{max(i,j)-1} a_k on allowed pairs, 0 elsewhere, 1 on the
    diagonal; with ``diagonal`` (and ``word``) the words' diagonal is set to that value instead."""
    a = a.float()
    la = torch.log(a.clamp_min(eps))  # non-links (a = 0) get log(eps): never a bridge, even if words were split
    sigma = F.pad(torch.cumsum(la, 1), (1, 0))  # σ_i = sum_{k<i} log a_k, [B, T]
    C = torch.exp(-(sigma[:, :, None] - sigma[:, None, :]).abs())
    C = C.masked_fill(~allowed, 0.0)
    if diagonal is not None:
        assert word is not None
        eye = torch.eye(C.size(1), dtype=torch.bool, device=C.device)
        C = torch.where(eye & word[:, :, None], float(diagonal), C)  # exact (1 - (1 - d) rounds in fp32)
    return C


def code_diagonal_value(layer: int) -> float:
    """The reference's C_ii at 0-based layer l: 1 - (1 - sqrt(1e-9))^{l+1} (≈ 3.2e-5 (l+1))."""
    return 1.0 - (1.0 - CODE_DIAG_LINK) ** (layer + 1)


# ------------------------------------------------------------------------------------------- modules
class ConstituentSelfAttention(nn.Module):
    """Multi-head self-attention whose probabilities are multiplied by the layer's constituent prior (eq. 2),
    with the constituent-attention module (link query/key maps, eqs. 5-8) built in.

    The attention projects [q, k, v] with Linear(d, 3d); the links [q_link, k_link] with their own Linear(d, 2d)
    (paper Section 5.1: same architecture, other parameters) of the attention's input (``own_norm=False``: the
    already normalised layer input) or of their own LayerNorm of the raw layer input (``own_norm=True``, as the
    authors' code)."""

    def __init__(self, embed_dim: int, num_heads: int, attention_dropout: float = 0.0,
                 link_scale: Optional[float] = None, own_norm: bool = False, code_diagonal: bool = False,
                 enabled: bool = True, eps: float = LOG_EPS, code_init: bool = False):
        super().__init__()
        assert embed_dim % num_heads == 0
        self.d, self.h, self.dh = embed_dim, num_heads, embed_dim // num_heads
        self.enabled, self.own_norm, self.code_diagonal, self.eps = enabled, own_norm, code_diagonal, eps
        self.link_scale = float(link_scale) if link_scale else embed_dim / 2.0
        self.in_proj = nn.Linear(embed_dim, 3 * embed_dim)
        self.out_proj = nn.Linear(embed_dim, embed_dim)
        if enabled:
            self.link_proj = nn.Linear(embed_dim, 2 * embed_dim)
            self.link_norm = nn.LayerNorm(embed_dim) if own_norm else None
        self.attention_dropout = attention_dropout
        self.code_init = code_init
        self.reset_parameters()

    def reset_parameters(self):
        """xavier_uniform over each projection whole, zero biases; ``code_init``: as the authors' code's separate
        Linear(d, d) maps, xavier over each d x d block (sqrt(2) and sqrt(3/2) the spread of the fused [3d, d] and
        [2d, d]) and PyTorch's default biases U(-d^-1/2, d^-1/2)."""
        for m in self.modules():
            if isinstance(m, nn.Linear):
                if not self.code_init:
                    nn.init.xavier_uniform_(m.weight)
                    nn.init.zeros_(m.bias)
                    continue
                xavier_per_block_(m)
                bound = m.in_features ** -0.5
                nn.init.uniform_(m.bias, -bound, bound)

    def structure(self, lqk: Tensor, a_prev: Optional[Tensor], link: Tensor, allowed: Tensor, word: Tensor,
                  layer: int) -> Tuple[Tensor, Tensor]:
        """lqk [B, T, 2d] link queries ; keys -> (a^l [B, T-1], C^l [B, T, T]), fp32, autocast off."""
        with autocast_off(lqk):
            s_next, s_prev = link_scores(lqk, self.link_scale)
            a_hat = neighbour_links(s_next, s_prev, link)
            a = hierarchical_links(a_prev, a_hat)
            diag = code_diagonal_value(layer) if self.code_diagonal else None
            C = constituent_prior(a, allowed, self.eps, diag, word)
        return a, C

    def forward(self, x: Tensor, raw: Tensor, a_prev: Optional[Tensor], word: Tensor, link: Tensor,
                allowed: Tensor, layer: int):
        """x [B, T, d] the attention input; raw [B, T, d] the layer input (read by ``own_norm`` links only).
        -> (out [B, T, d], a^l [B, T-1] or None, C^l [B, T, T] or None)."""
        B, T, d = x.shape
        q, k, v = self.in_proj(x).split(d, -1)
        a = C = None
        if self.enabled:
            lqk = self.link_proj(x if self.link_norm is None else self.link_norm(raw))
            a, C = self.structure(lqk, a_prev, link, allowed, word, layer)
        q = q.reshape(B, T, self.h, self.dh).transpose(1, 2) * (self.dh ** -0.5)
        k = k.reshape(B, T, self.h, self.dh).transpose(1, 2)
        v = v.reshape(B, T, self.h, self.dh).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(-1, -2)).masked_fill(~allowed[:, None], float("-inf"))
        probs = torch.softmax(scores, -1, dtype=torch.float32)
        if C is not None:
            probs = probs * C[:, None]  # eq. 2: no renormalisation
        probs = F.dropout(probs.to(v.dtype), self.attention_dropout, self.training)
        out = torch.matmul(probs, v).transpose(1, 2).reshape(B, T, d)
        return self.out_proj(out), a, C


# ------------------------------------------------------------------------------------------- parsing
def parse_algorithm1(links: np.ndarray, min_layer: int = 3, threshold: float = 0.8, top_layer: Optional[int] = None,
                     inner_threshold: Optional[float] = None) -> List[Span]:
    """Algorithm 1 (paper Section 6) for one sentence: links [L, n-1], links[l, i] = a^l_i between words i, i+1.

    Starts at ``top_layer`` (default L-1) over the whole sentence; in span [s, e] (words, inclusive) takes the
    argmin link b of the current layer; if a_b > threshold the span moves down one layer (at the minimum layer
    it becomes a flat n-ary constituent), else it splits into [s, b] and [b+1, e], both recursed at
    max(l-1, m). ``min_layer`` (m) is clamped to the layers present. ``inner_threshold`` (the authors' code uses
    0.7; None = the paper): a child is recursed one layer down only if all its links at the current layer
    exceed it, otherwise at the same layer.

    -> half-open word spans of >= 2 words, post-order, root (0, n) included; [] for n < 2. Ties in argmin go to
    the leftmost link (numpy's argmin, as the reference)."""
    links = np.asarray(links, dtype=np.float64)
    L, n1 = links.shape
    n = n1 + 1
    if n < 2:
        return []
    m = max(0, min(int(min_layer), L - 1))
    top = L - 1 if top_layer is None else max(m, min(int(top_layer), L - 1))
    out: List[Span] = []
    stack = [(top, 0, n - 1)]  # (layer, s, e) words inclusive
    while stack:
        l, s, e = stack.pop()
        if e - s < 2:  # one word (no span) or two words (a constituent)
            if e > s:
                out.append((s, e + 1))
            continue
        span = links[l, s:e]
        b = s + int(np.argmin(span))
        last = max(l - 1, m)
        if links[l, b] > threshold:
            if l == m:
                out.append((s, e + 1))  # flat constituent over s..e
            else:
                stack.append((last, s, e))
            continue
        out.append((s, e + 1))
        for cs, ce in ((s, b), (b + 1, e)):
            nl = last
            if inner_threshold is not None and ce > cs and not np.all(links[l, cs:ce] > inner_threshold):
                nl = l
            stack.append((nl, cs, ce))
    return post_order(out)


def parse_greedy(links: np.ndarray) -> List[Span]:
    """Top-down greedy parsing with one layer's links [n-1]: split every span of >= 2 words at its minimum link
    (leftmost on ties), recursively. -> the n-1 half-open spans of a binary tree, post-order."""
    # the minimum link is the largest distance: StructFormer's Algorithm 1 on negated links
    return distances_to_tree((-np.asarray(links, dtype=np.float64).reshape(-1)).tolist())


PARSE_METHODS = ("algorithm1", "greedy")


def parse_links(links: np.ndarray, method: str = "algorithm1", min_layer: int = 3, threshold: float = 0.8,
                inner_threshold: Optional[float] = None, layer: Optional[int] = None,
                top_layer: Optional[int] = None) -> List[Span]:
    """Dispatch: links [L, n-1] of one sentence. ``greedy`` uses ``layer`` (default: the clamped min_layer)."""
    if method == "algorithm1":
        return parse_algorithm1(links, min_layer, threshold, top_layer, inner_threshold)
    if method == "greedy":
        L = links.shape[0]
        lay = max(0, min(int(min_layer), L - 1)) if layer is None else int(layer)
        if not -L <= lay < L:
            raise ValueError(f"greedy parsing: layer {lay} out of range for {L} layers")
        return parse_greedy(links[lay])
    raise ValueError(f"unknown parse method {method!r}; choose from {PARSE_METHODS}")


__all__: Sequence[str] = (
    "structure_masks", "link_scores", "neighbour_links", "hierarchical_links", "constituent_prior",
    "code_diagonal_value",
    "ConstituentSelfAttention", "parse_algorithm1", "parse_greedy", "parse_links", "PARSE_METHODS",
)
