"""Partitioned self-attention (Kitaev & Klein 2018) and the Label Attention Layer (Mrini et al. 2020).

Token vectors are partitioned ``x = [x_c ; x_p]`` (content d_c, position d_p). Every projection acts on the
two halves separately, so content and position information never mix inside a layer.

Label Attention Layer (paper Figs. 2-5, eqs. 1-4), H heads (one per label by default):

* one learned query per head ``q_l = [q_l^c ; q_l^p]`` (no query matrix);
* label-specific keys / values ``K_l = [X_c W^{K,c}_l ; X_p W^{K,p}_l]`` (likewise V_l): one Linear per
  partition producing all heads at once (no ``repeat`` of the input per label);
* ``a_l = softmax_t(q_l . k_{l,t} / sqrt(d_k))`` over the sentence's tokens (padding masked): an
  attention *vector* per head; context ``c_l = sum_t a_{l,t} v_{l,t}``;
* projection back to the model size per partition, ``o_l = [c_l^c P_c ; c_l^p P_p]`` (shared over labels),
  added to every word and reduced: ``u_{t,l} = LN((x_t + o_l) R)``. By linearity this is computed as
  ``LN(x_t R + o_l R)``: [B, T, d_proj] + [B, H, d_proj], never a [B, T, H, d_model] tensor;
* output ``h_t = concat_l u_{t,l}`` ([B, T, H * d_proj]), then optionally a position-wise feed-forward layer
  (``pwff``; per head when ``per_head_ffn`` so that block l stays label l's) and optionally residual
  dropout on o_l (``residual_dropout``): the paper's two ablation switches.
"""

import math
from typing import Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor


def check_even(**sizes: int) -> None:
    """Sizes split between the content and position partitions must be even (a ValueError naming the odd ones)."""
    odd = [f"{name}={size}" for name, size in sizes.items() if size % 2]
    if odd:
        raise ValueError(f"{' and '.join(odd)} must be even: split between the content and position partitions")


class PartitionedLinear(nn.Module):
    """[x_c ; x_p] -> [x_c W_c ; x_p W_p]."""

    def __init__(self, d_c, d_p, out_c, out_p, bias=True):
        super().__init__()
        self.d_c = d_c
        self.c = nn.Linear(d_c, out_c, bias=bias)
        self.p = nn.Linear(d_p, out_p, bias=bias)

    def forward(self, x: Tensor) -> Tensor:
        return torch.cat([self.c(x[..., :self.d_c]), self.p(x[..., self.d_c:])], -1)


class PartitionedSelfAttentionLayer(nn.Module):
    """Multi-head self-attention + FFN, both partitioned; post-LN residual blocks. x: [B, T, d_c + d_p]."""

    def __init__(self, d_c, d_p, heads, d_kv, d_ff, dropout=0.1, attention_dropout=0.1, relu_dropout=0.1):
        super().__init__()
        check_even(d_kv=d_kv)
        self.h, self.dk = heads, d_kv
        half = heads * d_kv // 2
        self.qkv = PartitionedLinear(d_c, d_p, 3 * half, 3 * half, bias=False)
        self.out = PartitionedLinear(half, half, d_c, d_p, bias=False)
        self.ln1 = nn.LayerNorm(d_c + d_p)
        self.ff1 = PartitionedLinear(d_c, d_p, d_ff // 2, d_ff // 2)
        self.ff2 = PartitionedLinear(d_ff // 2, d_ff // 2, d_c, d_p)
        self.ln2 = nn.LayerNorm(d_c + d_p)
        self.dropout, self.attention_dropout, self.relu_dropout = dropout, attention_dropout, relu_dropout
        self.half = half

    def forward(self, x: Tensor, pad_mask: Tensor) -> Tensor:
        B, T, _ = x.shape
        H, half = self.h, self.half
        qkv = self.qkv(x)  # [B, T, 3 half (content) + 3 half (position)]
        qc, kc, vc = qkv[..., :3 * half].chunk(3, -1)
        qp, kp, vp = qkv[..., 3 * half:].chunk(3, -1)

        def heads(a, b):  # [B, T, half] x2 -> [B, H, T, d_kv] (content half then position half per head)
            return torch.cat([a.view(B, T, H, -1), b.view(B, T, H, -1)], -1).transpose(1, 2)

        q, k, v = heads(qc, qp), heads(kc, kp), heads(vc, vp)
        logits = q @ k.transpose(-1, -2) / math.sqrt(self.dk)
        logits = logits.masked_fill(pad_mask[:, None, None, :], float("-inf"))
        a = F.dropout(logits.softmax(-1), self.attention_dropout, self.training)
        ctx = (a @ v).transpose(1, 2)  # [B, T, H, d_kv]
        dkh = self.dk // 2
        ctx = torch.cat([ctx[..., :dkh].reshape(B, T, -1), ctx[..., dkh:].reshape(B, T, -1)], -1)
        x = self.ln1(x + F.dropout(self.out(ctx), self.dropout, self.training))
        y = self.ff2(F.dropout(F.relu(self.ff1(x)), self.relu_dropout, self.training))
        return self.ln2(x + F.dropout(y, self.dropout, self.training))


class LabelAttention(nn.Module):
    """The Label Attention Layer (see the module docstring). forward: x [B, T, d_c + d_p], pad_mask [B, T]
    -> (h [B, T, H * d_proj], attention [B, H, T])."""

    def __init__(self, d_c, d_p, heads, d_kv=64, d_proj=64, dropout=0.1, attention_dropout=0.1,
                 residual_dropout=True, pwff=True, d_ff=256, relu_dropout=0.1, per_head_ffn=False):
        super().__init__()
        check_even(d_kv=d_kv, d_proj=d_proj)
        self.h, self.dk, self.d_proj, self.d_c = heads, d_kv, d_proj, d_c
        half = d_kv // 2
        self.query = nn.Parameter(torch.empty(heads, d_kv).normal_(0, d_kv ** -0.5))
        self.key = PartitionedLinear(d_c, d_p, heads * half, heads * half, bias=False)
        self.value = PartitionedLinear(d_c, d_p, heads * half, heads * half, bias=False)
        self.proj = PartitionedLinear(half, half, d_c, d_p, bias=False)  # P_c, P_p shared by all labels
        self.reduce = nn.Linear(d_c + d_p, d_proj, bias=False)  # R, shared
        self.ln = nn.LayerNorm(d_proj)
        self.residual_dropout, self.dropout, self.attention_dropout = residual_dropout, dropout, attention_dropout
        self.pwff, self.per_head_ffn, self.relu_dropout = pwff, per_head_ffn, relu_dropout
        if pwff:
            d_in = d_proj if per_head_ffn else heads * d_proj
            self.ff1, self.ff2 = nn.Linear(d_in, d_ff), nn.Linear(d_ff, d_in)
            self.ff_ln = nn.LayerNorm(d_in)

    def _split_heads(self, y: Tensor) -> Tensor:
        """[B, T, H*half (content) + H*half (position)] -> [B, T, H, d_kv]."""
        B, T, _ = y.shape
        c, p = y.chunk(2, -1)
        return torch.cat([c.view(B, T, self.h, -1), p.view(B, T, self.h, -1)], -1)

    def forward(self, x: Tensor, pad_mask: Tensor) -> Tuple[Tensor, Tensor]:
        B, T, _ = x.shape
        k = self._split_heads(self.key(x))  # [B, T, H, d_kv]
        v = self._split_heads(self.value(x))
        logits = torch.einsum("bthd,hd->bht", k, self.query) / math.sqrt(self.dk)
        attn = logits.masked_fill(pad_mask[:, None, :], float("-inf")).softmax(-1)  # [B, H, T]
        ctx = torch.einsum("bht,bthd->bhd", F.dropout(attn, self.attention_dropout, self.training), v)
        o = self.proj(ctx)  # [B, H, d_c + d_p]; ctx is [content half ; position half] per head
        if self.residual_dropout:
            o = F.dropout(o, self.dropout, self.training)
        u = self.ln(self.reduce(x)[:, :, None, :] + self.reduce(o)[:, None, :, :])  # [B, T, H, d_proj]
        if self.pwff:
            z = u if self.per_head_ffn else u.reshape(B, T, -1)
            y = self.ff2(F.dropout(F.relu(self.ff1(z)), self.relu_dropout, self.training))
            z = self.ff_ln(z + F.dropout(y, self.dropout, self.training))
            u = z.reshape(B, T, self.h, self.d_proj)
        return u.reshape(B, T, self.h * self.d_proj), attn
