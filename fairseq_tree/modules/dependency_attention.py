"""Dependency-constrained multi-head self-attention (StructFormer, Shen et al. 2021, Section 4.3, eqs. 13-16).

"The authors' code" below is `google-research/google-research` ``structformer/layers.py`` (the relation-mixing
attention and its initialisation) and ``structformer/structformer.py`` (the relations, its "cibling" included).

Each head h mixes the relations of the soft dependency graph p_D (from
:mod:`fairseq_tree.modules.structformer_parser`) with its own weights (eq. 13,
``w_h = softmax(θ_h)`` over the relations, per head of each layer: the paper's Fig. 4 shows one row per layer, one
column per head; the authors' code also keeps [layers, heads, relations]):

* ``parent``:    p_D(j|i)  — i receives from its parent j,
* ``dependent``: p_D(i|j)  — i receives from its dependents j,
* ``sibling``:   (p_D p_D^T)_{ij}, 0 on the diagonal — the code's optional "cibling" relation (not in the paper),

``p_ij = sum_r w_{h,r} rel_r[i, j]`` (eq. 14); the per-pair gate is a sigmoid instead of a softmax,
``q_ij = σ(q_i . k_j / sqrt(d_k))`` (eq. 15), and ``attention_ij = p_ij q_ij`` weights V_j (eq. 16), **not
normalised** (a row sums to at most 1).

Masks: p_D is 0 on every row and column that is not a word, so BOS/EOS/pad neither give nor receive anything
(their output is the out-projection's bias); the gate is additionally forced to 0 on non-word keys. The
relations [B, T, T] are kept once per forward (shared by all layers) and mixed here with the per-head scalars:
the reference's [layers, B*H, T, T] mask is never materialised. Structure (relations, mixture, gate, product)
runs in fp32 with autocast off; the projections run in the ambient precision.
"""

from __future__ import annotations

from typing import Sequence

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor

from fairseq_tree.utils.init import xavier_per_block_
from fairseq_tree.utils.precision import autocast_off

RELATIONS = ("parent", "dependent", "sibling")


def dependency_relations(p_D: Tensor, names: Sequence[str]) -> Tensor:
    """p_D [B, T, T] (row i: p(parent j | i)) -> rel [B, R, T, T] fp32, the relations ``names`` in order."""
    p = p_D.float()
    out = []
    for name in names:
        if name == "parent":
            out.append(p)
        elif name == "dependent":
            out.append(p.transpose(1, 2))
        elif name == "sibling":
            s = torch.bmm(p, p.transpose(1, 2))
            out.append(s - torch.diag_embed(torch.diagonal(s, dim1=1, dim2=2)))
        else:
            raise ValueError(f"unknown relation {name!r}; choose from {RELATIONS}")
    return torch.stack(out, 1)


class DependencyAttention(nn.Module):
    """``forward(x [B, T, d], rel [B, R, T, T] fp32, word [B, T] bool) -> (out [B, T, d], attn [B, H, T, T] fp32
    or None)``; ``attn`` is returned when ``need_weights``."""

    def __init__(self, embed_dim: int, num_heads: int, num_relations: int = 2, attention_dropout: float = 0.0,
                 init_std: float = 0.1, code_init: bool = False):
        super().__init__()
        assert embed_dim % num_heads == 0
        self.d, self.h, self.dh = embed_dim, num_heads, embed_dim // num_heads
        self.in_proj = nn.Linear(embed_dim, 3 * embed_dim)
        self.out_proj = nn.Linear(embed_dim, embed_dim)
        self.rel_logits = nn.Parameter(torch.zeros(num_heads, num_relations))  # θ of eq. 13, per head
        self.attention_dropout = attention_dropout
        self.init_std, self.code_init = init_std, code_init
        self.reset_parameters()

    def reset_parameters(self):
        """xavier over the fused [3d, d] q/k/v map and the out map, zero biases; ``code_init``: xavier over each
        d x d block, as the authors' code's separate q, k, v maps (sqrt(2) the spread of the fused init, so the
        gate's logits q.k start twice as large)."""
        for m in (self.in_proj, self.out_proj):
            if self.code_init:
                xavier_per_block_(m)
            else:
                nn.init.xavier_uniform_(m.weight)
            nn.init.zeros_(m.bias)
        nn.init.normal_(self.rel_logits, 0.0, self.init_std)  # N(0, 0.1) as the code

    @property
    def relation_weights(self) -> Tensor:
        """Eq. 13: [H, R] = softmax over the relations of each head."""
        return torch.softmax(self.rel_logits.float(), -1)

    def forward(self, x: Tensor, rel: Tensor, word: Tensor, need_weights: bool = False):
        B, T, d = x.shape
        q, k, v = self.in_proj(x).split(d, -1)
        q = q.reshape(B, T, self.h, self.dh).transpose(1, 2)
        k = k.reshape(B, T, self.h, self.dh).transpose(1, 2)
        v = v.reshape(B, T, self.h, self.dh).transpose(1, 2)
        with autocast_off(x):
            p = torch.einsum("hr,brij->bhij", self.relation_weights, rel.float())  # eq. 14
            gate = torch.sigmoid(torch.matmul(q.float(), k.float().transpose(-1, -2)) * (self.dh ** -0.5))  # eq. 15
            attn = torch.where(word[:, None, None, :], p * gate, 0.0)  # eq. 16 weights, unnormalised
        probs = F.dropout(attn.to(v.dtype), self.attention_dropout, self.training)
        out = torch.matmul(probs, v).transpose(1, 2).reshape(B, T, d)
        return self.out_proj(out), (attn if need_weights else None)


__all__: Sequence[str] = ("RELATIONS", "dependency_relations", "DependencyAttention")
