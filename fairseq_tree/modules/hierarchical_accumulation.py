"""Hierarchical accumulation of node values (Nguyen et al., ICLR 2020, Section 4.1-4.2, eqs. 5-10, 16).

For one sentence and one head, the paper builds S in R^{(m+1) x n x d} (row 0 the leaves, row t+1 node t
at the columns of its span), adds hierarchical embeddings E, takes the upward cumulative average along
each leaf-to-node branch and a weighted average over the leaves of each node. Written out, the value
of node i is

    N'_i = sum_j alpha_ij * ( l_j + sum_{t on path(j -> i)} (n_t + E_tj) ),
    alpha_ij = w_j * A_ij / (c_i * |C_ij|),   |C_ij| = P_ij + 1 (paper) or P_ij (authors' code),

which is computed here without the m x n x d tensor:

    N' = [alpha | G] @ [V_L; V_N] + beta @ [E_v(v_p); E_h(h_p)]_p,   G = (alpha @ A^T) * D
    beta[i, p] = alpha_{i j_p} D_{i t_p}   over the pairs p = (t_p, j_p) with A_{t_p j_p} = 1

Np = number of such pairs (about n * mean leaf depth); [alpha | G] is one matmul of alpha with the batch's
[I | A^T] (then * [1 | D]), and beta = (the batch's A / (c |C|) D part) * w_{j_p}, so per layer only w is
multiplied in: the embedding term is pair_weights @ (w_{j_p} E_p), [M, Np] @ [Np, dh], no m x n x d tensor
and no [M, Np] tensor per layer. With the code's vertical index (the depth of t, the same for every leaf) the
pair's vertical row is depth(t_p): the same formula.
"""

from __future__ import annotations

from typing import Dict

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from fairseq_tree.modules.tree_structure import DEFAULT_MAX_INDEX, TreeStructure
from fairseq_tree.utils.precision import autocast_off

VERTICAL_INDEX = ("path", "depth")
LEAF_WEIGHTS = ("vector", "per_head")

#: Presets. "paper": eqs. 6, 9, 16 as written. "code": what nxphi47/tree_transformer computes
#: (vertical index = depth from the root, upward mean divides by the node count only, per-head weights
#: with a bias).
VARIANTS: Dict[str, dict] = {
    "paper": dict(vertical_index="path", count_leaf_in_mean=True, leaf_weights="vector"),
    "code": dict(vertical_index="depth", count_leaf_in_mean=False, leaf_weights="per_head"),
}


def compute_dtype(dtype: torch.dtype) -> torch.dtype:
    """fp32 for half types (the reference notes "values explode" in fp16), float64 stays float64. (A lookup, not
    ``torch.promote_types``: that is a dispatched operator, and this runs several times per layer.)"""
    return dtype if dtype in (torch.float32, torch.float64) else torch.float32


def _flat_heads(x: Tensor) -> Tensor:
    """[B, H, L, dh] -> [B, L, H * dh] (a view when the heads are adjacent in memory, as projections make them)."""
    B, H, L, dh = x.shape
    return x.transpose(1, 2).reshape(B, L, H * dh)


class HierarchicalAccumulation(nn.Module):
    """Accumulated node values of the tree attention, per head.

    Args:
        head_dim: dh, the width of the per-head values.
        num_heads: H.
        input_dim: width of the leaf states the weights ``w`` are computed from (the layer input).
        max_horizontal, max_vertical: rows of the horizontal / vertical embedding tables (|E| = 100);
            larger indices are clamped to the last row.
        hier_embed: False disables the hierarchical embeddings (ablation "-HierEmb").
        vertical_index: "path" (paper, eq. 9: |V_j^t| = nodes on the path from leaf j up to node t)
            or "depth" (authors' code: depth of t counted from the root, root = 1).
        count_leaf_in_mean: True (paper, eq. 6: the leaf is in the branch, mean over P + 1 vectors) or
            False (code: the leaf is summed but not counted, mean over P).
        leaf_weights: "vector" (paper, eq. 16: w = L u_s, one vector u_s in R^input_dim shared by the
            heads, no bias) or "per_head" (code: w = Linear(input_dim -> H) with a bias).

    The embedding tables are shared across heads and have width dh: the vertical embedding fills the
    first ``dh // 2`` channels, the horizontal one the rest (``[e_v; e_h]``, eq. 9).
    """

    def __init__(
        self,
        head_dim: int,
        num_heads: int,
        input_dim: int,
        max_horizontal: int = DEFAULT_MAX_INDEX,
        max_vertical: int = DEFAULT_MAX_INDEX,
        hier_embed: bool = True,
        vertical_index: str = "path",
        count_leaf_in_mean: bool = True,
        leaf_weights: str = "vector",
    ):
        super().__init__()
        if vertical_index not in VERTICAL_INDEX:
            raise ValueError(f"vertical_index must be one of {VERTICAL_INDEX}, got {vertical_index!r}")
        if leaf_weights not in LEAF_WEIGHTS:
            raise ValueError(f"leaf_weights must be one of {LEAF_WEIGHTS}, got {leaf_weights!r}")
        self.head_dim, self.num_heads, self.input_dim = head_dim, num_heads, input_dim
        self.max_horizontal, self.max_vertical = max_horizontal, max_vertical
        self.hier_embed = hier_embed
        self.vertical_index = vertical_index
        self.count_leaf_in_mean = count_leaf_in_mean
        self.leaf_weights = leaf_weights
        per_head = leaf_weights == "per_head"
        # "vector": weight_proj.weight is u_s, shape [1, input_dim].
        self.weight_proj = nn.Linear(input_dim, num_heads if per_head else 1, bias=per_head)
        self.vertical_dim = head_dim // 2
        self.horizontal_dim = head_dim - self.vertical_dim
        if hier_embed:
            self.vertical_embed = nn.Embedding(max_vertical, self.vertical_dim)
            self.horizontal_embed = nn.Embedding(max_horizontal, self.horizontal_dim)
        else:
            self.vertical_embed = self.horizontal_embed = None

    @classmethod
    def from_variant(cls, variant: str, head_dim: int, num_heads: int, input_dim: int, **kw):
        """Build with a preset of :data:`VARIANTS` ("paper" or "code"); ``kw`` overrides it."""
        return cls(head_dim, num_heads, input_dim, **{**VARIANTS[variant], **kw})

    def extra_repr(self) -> str:
        return (f"head_dim={self.head_dim}, num_heads={self.num_heads}, hier_embed={self.hier_embed}, "
                f"vertical_index={self.vertical_index}, count_leaf_in_mean={self.count_leaf_in_mean}, "
                f"leaf_weights={self.leaf_weights}")

    def compute_weights(self, leaves: Tensor) -> Tensor:
        """Leaf weights w from the leaf states.

        Args:
            leaves: [N, B, input_dim] (time first, as fairseq's layers hold states), the layer input of the
                leaves (or of ``[leaves; nodes]``: then [B, Hw, N + M], of which :meth:`accumulate` reads the
                leaves'). (A batch-first view would be copied by the projection, and the copy kept for backward.)
        Returns:
            [B, Hw, N] (or [B, Hw, N + M]) in the compute dtype (fp32 for half inputs); Hw = 1 ("vector") or H
            ("per_head").
        """
        return self.time_first_weights(leaves).permute(1, 2, 0)

    def time_first_weights(self, leaves: Tensor) -> Tensor:
        """:meth:`compute_weights` as [N, B, Hw] (or [N + M, B, Hw]), the projection's own layout (the fused
        kernels read it so)."""
        cd = compute_dtype(leaves.dtype)
        bias = None if self.weight_proj.bias is None else self.weight_proj.bias.to(cd)
        with autocast_off(leaves):  # autocast would run the linear in half
            return F.linear(leaves.to(cd), self.weight_proj.weight.to(cd), bias)

    def forward(self, leaf_values: Tensor, node_values: Tensor, weights: Tensor,
                tree: TreeStructure) -> Tensor:
        """Accumulated node values from leaf and node values apart: :meth:`accumulate` of ``[leaves; nodes]``.

        Args:
            leaf_values: [B, H, N, dh] (L W_V, split into heads).
            node_values: [B, H, M, dh] (N W_V).
            weights, tree: as :meth:`accumulate`.
        Returns:
            [B, H, M, dh], as :meth:`accumulate`.
        """
        return self.accumulate(torch.cat([leaf_values, node_values], 2), weights, tree)

    def accumulate(self, values: Tensor, weights: Tensor, tree: TreeStructure) -> Tensor:
        """Accumulated node values N' (eqs. 5-10).

        Args:
            values: [B, H, N + M, dh], the values of ``[leaves; nodes]`` split into heads (a view of one projection
                of the time-first states, as the tree attention passes it, costs no copy).
            weights: [B, Hw, N] or [B, Hw, N + M] leaf weights w (Hw = 1 or H), e.g. from :meth:`compute_weights`;
                the first N are the leaves' (the rest, if any, is ignored).
            tree: the batch structure.
        Returns:
            [B, H, M, dh] in the dtype of ``values``; 0 on padded nodes. Padded leaves and nodes never contribute
            (their values are zeroed first, so even NaN padding cannot leak). Computed in fp32 for half inputs,
            with autocast off (it would run the matmuls in half).
        """
        with autocast_off(values):
            return self._accumulate(values, weights, tree)

    def _accumulate(self, values: Tensor, weights: Tensor, tree: TreeStructure) -> Tensor:
        dtype = values.dtype
        cd = compute_dtype(dtype)
        B, H, L, dh = values.shape
        N, M = tree.num_leaves, tree.num_nodes
        if L != N + M:
            raise ValueError(f"values have {L} positions; the tree has N + M = {N} + {M}")

        w = weights[..., :N].to(cd).masked_fill(tree.leaf_pad_mask[:, None, :], 0.0)  # [B, Hw, N]
        Hw = w.size(1)
        norm = tree.mean_weights(self.count_leaf_in_mean, cd)  # [B, M, N]
        # [alpha | G], G[i, t] = sum_j alpha_ij A_tj D_it (the weight node t's value gets in node i), in one matmul
        # with the batch's [I | A^T] and one product with its [1 | D]: the weights of [leaves; nodes] in node i.
        left, right = tree.accumulation_operands(cd)  # [B, N, N + M], [B, M, N + M]
        pad = tree.pad_mask  # [B, N + M]
        if Hw == 1:
            # One weight vector for all heads, and 3-D tensors throughout: the heads ride in the matmul's columns
            # ([B, M, N + M] @ [B, N + M, H dh]), where broadcasting S over [B, H, ...] would copy it per head and
            # keep the copy for backward. [B, H, L, dh] views of time-first projections flatten to [B, L, H dh]
            # without a copy.
            S = torch.bmm(w * norm, left) * right  # [B, M, N + M]
            v = _flat_heads(values).to(cd).masked_fill(pad[..., None], 0.0)
            out = torch.bmm(S, v).view(B, M, H, dh)
            if self.hier_embed:
                out = out + self._embedding_term(w, tree, cd).view(B, M, 1, dh)
            out = out.transpose(1, 2)
        else:
            S = torch.matmul(w[:, :, None, :] * norm[:, None], left[:, None]) * right[:, None]  # [B, H, M, N + M]
            v = values.to(cd).masked_fill(pad[:, None, :, None], 0.0)
            out = torch.matmul(S, v)  # [B, H, M, dh]
            if self.hier_embed:
                out = out + self._embedding_term(w, tree, cd)
        return out.to(dtype)

    def check_tree(self, tree: TreeStructure) -> None:
        """The tree's index clamps must reach this module's table sizes (its indices would stop short otherwise)."""
        if tree.max_horizontal < self.max_horizontal or tree.max_vertical < self.max_vertical:
            raise ValueError("the TreeStructure clamps indices below this module's table sizes; build "
                             "it with max_horizontal/max_vertical >= the module's")

    def _embedding_term(self, w: Tensor, tree: TreeStructure, cd: torch.dtype) -> Tensor:
        """sum_{t, j} alpha_ij D_it A_tj [e_v(v_tj); e_h(h_tj)] -> [B, Hw, M, dh]; w [B, Hw, N] (padding 0).

        Over the pairs p = (t_p, j_p): beta[i, p] = alpha_{i j_p} D_{i t_p} = pair_weights[i, p] * w_{j_p}, so the
        sum is pair_weights @ (w_{j_p} [e_v; e_h](p)): the batch's [M, Np] matrix times a per-layer [Np, dh] one
        (no [M, Np] tensor per layer, nor its gradient)."""
        self.check_tree(tree)
        B, Hw, _ = w.shape
        Np = tree.pair_leaf.size(1)
        w_pairs = w.gather(-1, tree.pair_leaf[:, None, :].expand(B, Hw, Np))  # [B, Hw, Np]
        # Padded pairs read row 0, but their pair weights are 0. With the code's index the vertical row of a pair
        # is the depth of its node (the same for all of the node's leaves).
        vertical = "vertical_path" if self.vertical_index == "path" else "vertical_depth"
        return PairEmbeddingSum.apply(
            w_pairs, tree.pair_weights(self.count_leaf_in_mean, cd), tree.pair_bucket(vertical, self.max_vertical),
            tree.pair_bucket("horizontal", self.max_horizontal), self.vertical_embed.weight.to(cd),
            self.horizontal_embed.weight.to(cd))


class PairEmbeddingSum(torch.autograd.Function):
    """``out[b, h, i] = sum_p pw[b, i, p] * w_pairs[b, h, p] * [E_v[iv[b, p]]; E_h[ih[b, p]]]`` -> [B, Hw, M, dh].

    Inputs: w_pairs [B, Hw, Np] (the leaf weight of each pair), pw [B, M, Np] (the batch's pair weights, no
    gradient), iv / ih [B, Np] long (the pairs' embedding rows), E_v [Kv, dv], E_h [Kh, dh - dv]. Autograd through
    the plain operations would keep the pairs' embedding rows [B, Np, dh] of every layer for backward (more bytes
    than the [B, M, Np] weights the pair form avoids, as dh > M for most sentences); this keeps w_pairs and the
    indices, and looks the rows up again in backward.
    """

    @staticmethod
    def _rows(iv: Tensor, ih: Tensor, ev: Tensor, eh: Tensor) -> Tensor:
        return torch.cat([F.embedding(iv, ev), F.embedding(ih, eh)], -1)  # [B, Np, dh]

    @staticmethod
    def forward(ctx, w_pairs, pw, iv, ih, ev, eh):
        ctx.save_for_backward(w_pairs, pw, iv, ih, ev, eh)
        e = PairEmbeddingSum._rows(iv, ih, ev, eh)
        if w_pairs.size(1) == 1:  # one weight vector (the paper's): 3-D bmm, no broadcast views (host time)
            return torch.bmm(pw, w_pairs.view(w_pairs.size(0), -1, 1) * e).unsqueeze(1)
        return torch.matmul(pw.unsqueeze(1), w_pairs.unsqueeze(-1) * e.unsqueeze(1))

    @staticmethod
    def backward(ctx, grad):
        w_pairs, pw, iv, ih, ev, eh = ctx.saved_tensors
        grad = grad.to(pw.dtype)
        one = w_pairs.size(1) == 1
        if one:  # [B, Np, dh]: d loss / d (w_p e_p), as in forward
            g = torch.bmm(pw.transpose(1, 2), grad.reshape(grad.size(0), grad.size(2), grad.size(3)))
        else:  # [B, Hw, Np, dh]
            g = torch.matmul(pw.transpose(1, 2).unsqueeze(1), grad)
        grad_w = grad_ev = grad_eh = None
        if ctx.needs_input_grad[0]:
            e = PairEmbeddingSum._rows(iv, ih, ev, eh)
            grad_w = (g * e).sum(-1).unsqueeze(1) if one else (g * e.unsqueeze(1)).sum(-1)
        if ctx.needs_input_grad[4] or ctx.needs_input_grad[5]:
            if one:
                ge = g * w_pairs.view(w_pairs.size(0), -1, 1)
            else:
                ge = (g * w_pairs.unsqueeze(-1)).sum(1)  # [B, Np, dh]
            dv = ev.size(1)
            # F.embedding's own backward (rows summed per index), one kernel per table
            grad_ev = torch.ops.aten.embedding_dense_backward(ge[..., :dv], iv, ev.size(0), -1, False)
            grad_eh = torch.ops.aten.embedding_dense_backward(ge[..., dv:], ih, eh.size(0), -1, False)
        return grad_w, None, None, None, grad_ev, grad_eh
