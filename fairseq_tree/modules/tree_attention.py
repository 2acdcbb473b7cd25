"""Tree-based multi-head attention (Nguyen et al., ICLR 2020, Section 4.3-4.4, eqs. 11-24).

Two modes, with fairseq ``MultiheadAttention``'s parameters (``q_proj``, ``k_proj``, ``v_proj``,
``out_proj``, scaling ``head_dim ** -0.5``, attention dropout, same init) plus an ``accumulation``
submodule (:class:`HierarchicalAccumulation`: leaf-weight vector u and hierarchical embeddings):

* encoder self-attention (``self_attention=True``): queries and keys are ``[leaves; nodes]``; values
  are ``[L W_V; N']`` with N' the hierarchically accumulated node values; the subtree mask applies.
* decoder cross-attention (``encoder_decoder_attention=True``): queries are the target states, keys and
  values the encoder output's nodes and leaves (values ``[N'; L W_V]``, eq. 24; held in the encoder's
  ``[leaves; nodes]`` order, which attention does not depend on; weights reported as ``[nodes; leaves]``), no
  subtree mask. The
  encoder side does not depend on the query: :meth:`encoder_kv` computes it once; in incremental
  decoding it is cached in ``incremental_state`` and reordered by :meth:`reorder_incremental_state`.

Tensors follow fairseq's time-first layout ``[T, B, C]``.
"""

from __future__ import annotations

import math
import uuid
from typing import Dict, Optional, Tuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from fairseq_tree.modules.hierarchical_accumulation import HierarchicalAccumulation, compute_dtype
from fairseq_tree.modules.tree_kernels import KERNELS, fused_values, use_fused
from fairseq_tree.modules.tree_structure import DEFAULT_MAX_INDEX, TreeStructure

IncrementalState = Dict[str, Dict[str, Optional[Tensor]]]


class TreeMultiheadAttention(nn.Module):
    """Tree attention over leaves and nodes.

    Args:
        embed_dim, num_heads, kdim, vdim, dropout, bias: as fairseq ``MultiheadAttention``
            (``dropout`` is the attention-probability dropout).
        self_attention / encoder_decoder_attention: the mode (exactly one must be True).
        subtree_mask: encoder only; False = every real query sees every real key (ablation "-SubMask").
        hier_embed, max_horizontal, max_vertical, vertical_index, count_leaf_in_mean, leaf_weights:
            passed to :class:`HierarchicalAccumulation` (paper defaults).
        kernels: ``--tree-kernels``: the values' tree work by the eager operators ("eager"), the fused kernels
            ("fused"), or fused on CUDA where triton is installed ("auto"); see :mod:`tree_kernels`.
    """

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        kdim: Optional[int] = None,
        vdim: Optional[int] = None,
        dropout: float = 0.0,
        bias: bool = True,
        self_attention: bool = False,
        encoder_decoder_attention: bool = False,
        subtree_mask: bool = True,
        hier_embed: bool = True,
        max_horizontal: int = DEFAULT_MAX_INDEX,
        max_vertical: int = DEFAULT_MAX_INDEX,
        vertical_index: str = "path",
        count_leaf_in_mean: bool = True,
        leaf_weights: str = "vector",
        kernels: str = "eager",
    ):
        super().__init__()
        if kernels not in KERNELS:
            raise ValueError(f"kernels must be one of {KERNELS}, got {kernels!r}")
        if self_attention == encoder_decoder_attention:
            raise ValueError("set exactly one of self_attention / encoder_decoder_attention")
        if embed_dim % num_heads:
            raise ValueError("embed_dim must be divisible by num_heads")
        self.embed_dim, self.num_heads = embed_dim, num_heads
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self.qkv_same_dim = self.kdim == embed_dim and self.vdim == embed_dim
        if self_attention and not self.qkv_same_dim:
            raise ValueError("self-attention requires kdim == vdim == embed_dim")
        self.head_dim = embed_dim // num_heads
        self.scaling = self.head_dim ** -0.5
        self.dropout = dropout
        self.self_attention = self_attention
        self.encoder_decoder_attention = encoder_decoder_attention
        self.subtree_mask = subtree_mask
        self.kernels = kernels

        self.k_proj = nn.Linear(self.kdim, embed_dim, bias=bias)
        self.v_proj = nn.Linear(self.vdim, embed_dim, bias=bias)
        self.q_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        # w = L u: from the leaves' layer input (eq. 16) / the encoder output leaves (eq. 23).
        self.accumulation = HierarchicalAccumulation(
            self.head_dim, num_heads, self.vdim, max_horizontal=max_horizontal,
            max_vertical=max_vertical, hier_embed=hier_embed, vertical_index=vertical_index,
            count_leaf_in_mean=count_leaf_in_mean, leaf_weights=leaf_weights)
        self._incremental_state_id = str(uuid.uuid4())
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """fairseq ``MultiheadAttention`` init (the projections); the accumulation keeps its own."""
        gain = 1 / math.sqrt(2) if self.qkv_same_dim else 1.0
        for proj in (self.k_proj, self.v_proj, self.q_proj):
            nn.init.xavier_uniform_(proj.weight, gain=gain)
        nn.init.xavier_uniform_(self.out_proj.weight)
        if self.out_proj.bias is not None:
            nn.init.constant_(self.out_proj.bias, 0.0)

    # ------------------------------------------------------------------ shared pieces
    def _heads(self, x: Tensor) -> Tensor:
        """[L, B, C] (time first, fairseq's layout: projections of it need no copy) -> [B, H, L, dh], a view."""
        L, B, _ = x.shape
        return x.view(L, B, self.num_heads, self.head_dim).permute(1, 2, 0, 3)

    def _values(self, x: Tensor, tree: TreeStructure) -> Tensor:
        """``[L W_V; N']`` [B, H, N + M, dh] (eqs. 15, 23): the leaf values and the accumulated node values, from
        time-first ``[leaves; nodes]`` x [N + M, B, vdim]. One projection of x, and the leaf weights w computed
        over all of x (the accumulation reads the leaves' part): slicing x would cost a copy of its gradient."""
        acc = self.accumulation
        if use_fused(self.kernels, x):  # the leaf values and N' from one autograd node of four kernel launches
            tables = None
            if acc.hier_embed:
                acc.check_tree(tree)
                tables = (acc.vertical_embed.weight, acc.horizontal_embed.weight)
            vertical = "vertical_path" if acc.vertical_index == "path" else "vertical_depth"
            return self._heads(fused_values(self.v_proj(x), acc.time_first_weights(x), tree, acc.count_leaf_in_mean,
                                            tables, vertical))
        values = self._heads(self.v_proj(x))  # [B, H, N + M, dh]
        w = acc.compute_weights(x)
        return torch.cat([values[:, :, :tree.num_leaves], acc.accumulate(values, w, tree)], 2)

    def _attend(self, q: Tensor, k: Tensor, v: Tensor, bias: Tensor, need_weights: bool
                ) -> Tuple[Tensor, Optional[Tensor]]:
        """q [B, H, T, dh] (not scaled: the scaling goes into the kernel), k/v [B, H, S, dh], bias [B, 1, T|1, S]
        additive (0 = attend, -inf = masked; TreeStructure.attn_bias). Returns ([B, H, T, dh], probs [B, H, T, S]
        or None). Every row of the mask must see a key: TreeStructure's masks guarantee it (a padded query sees
        itself; a sentence has a leaf), so no softmax row is empty and nothing is NaN."""
        p = self.dropout if self.training else 0.0
        if need_weights or torch.compiler.is_compiling():
            # written out inside a compiled graph (--tree-compile): inductor fuses it, and its lowering of
            # scaled_dot_product_attention fails on symbolic sizes (torch 2.13: ValueRangeError)
            scores = torch.matmul(q * self.scaling, k.transpose(-1, -2)) + bias
            probs = F.softmax(scores, dim=-1, dtype=compute_dtype(q.dtype)).type_as(q)
            out = torch.matmul(F.dropout(probs, p=p, training=self.training), v)
        else:
            probs = None
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=bias, dropout_p=p, scale=self.scaling)
        return out, probs

    def _merge(self, out: Tensor) -> Tensor:
        """[B, H, T, dh] -> out_proj -> [T, B, C] (contiguous, as fairseq's layers expect)."""
        B, H, T, dh = out.shape
        return self.out_proj(out.permute(2, 0, 1, 3).reshape(T, B, H * dh))

    @staticmethod
    def _weights(probs: Optional[Tensor], need_head_weights: bool) -> Optional[Tensor]:
        """fairseq's format: [B, T, S] averaged over heads, or [H, B, T, S] per head."""
        if probs is None:
            return None
        return probs.transpose(0, 1) if need_head_weights else probs.mean(1)

    def prepare(self, tree: TreeStructure, dtypes) -> None:
        """Build the per-batch tensors this module's :meth:`forward_self` and :meth:`encoder_kv` read from ``tree``
        (in each of ``dtypes``: the states' and the attention's, e.g. autocast's), so that a compiled layer finds
        them in the tree's cache (``--tree-compile``: built once per batch, outside the graphs)."""
        acc = self.accumulation
        tree.leaf_pad_mask, tree.pad_mask  # noqa: B018 (cached properties)
        for dtype in dtypes:
            cd = compute_dtype(dtype)
            tree.real_positions(dtype)
            tree.attn_bias("self" if self.subtree_mask else "full", dtype)
            tree.attn_bias("cross", dtype)
            tree.accumulation_operands(cd)
            tree.mean_weights(acc.count_leaf_in_mean, cd)
            if acc.hier_embed:
                tree.pair_weights(acc.count_leaf_in_mean, cd)
                tree.pair_bucket("vertical_path" if acc.vertical_index == "path" else "vertical_depth",
                                 acc.max_vertical)
                tree.pair_bucket("horizontal", acc.max_horizontal)

    # ------------------------------------------------------------------ modes
    def forward(self, *args, **kwargs):
        """:meth:`forward_self` or :meth:`forward_cross`, by mode."""
        if self.self_attention:
            return self.forward_self(*args, **kwargs)
        return self.forward_cross(*args, **kwargs)

    def forward_self(self, x: Tensor, tree: TreeStructure, need_weights: bool = False,
                     need_head_weights: bool = False) -> Tuple[Tensor, Optional[Tensor]]:
        """Encoder tree self-attention (eqs. 12-18).

        Args:
            x: [N + M, B, C], the leaves (first N rows, N = tree.num_leaves) then the nodes.
            tree: the batch structure.
        Returns:
            (out [N + M, B, C] with padded positions 0, attention weights or None: [B, N+M, N+M]
            averaged over heads, or [H, B, N+M, N+M] with ``need_head_weights``).
        """
        N, M = tree.num_leaves, tree.num_nodes
        if x.size(0) != N + M:
            raise ValueError(f"x has {x.size(0)} positions, the tree N + M = {N + M}")
        need_weights = need_weights or need_head_weights
        q = self._heads(self.q_proj(x))
        k = self._heads(self.k_proj(x))
        v = self._values(x, tree)
        bias = tree.attn_bias("self" if self.subtree_mask else "full", q.dtype)
        out, probs = self._attend(q, k, v, bias, need_weights)
        out = self._merge(out) * tree.real_positions(x.dtype)
        return out, self._weights(probs, need_head_weights)

    def encoder_kv(self, encoder_out: Tensor, tree: TreeStructure) -> Tuple[Tensor, Tensor, Tensor]:
        """The encoder side of the cross-attention, independent of the target (compute once per layer).

        Args:
            encoder_out: [N + M, B, kdim], the encoder output ``[leaves; nodes]`` (N = tree.num_leaves).
        Returns:
            (k [B, H, N + M, dh], v [B, H, N + M, dh], key bias [B, 1, 1, N + M]: 0 = attend, -inf = padding),
            in the encoder output's order ``[leaves; nodes]``, v's node part the accumulated N' (eq. 23). Eq. 24
            writes the keys ``[nodes; leaves]``; attention does not depend on the order of its keys (k, v and the
            bias permuted alike), so they stay where the encoder put them: reordering would copy k and v per layer.
        """
        k = self._heads(self.k_proj(encoder_out))
        return k, self._values(encoder_out, tree), tree.attn_bias("cross", k.dtype)

    def forward_cross(
        self,
        query: Tensor,
        encoder_out: Optional[Tensor] = None,
        tree: Optional[TreeStructure] = None,
        incremental_state: Optional[IncrementalState] = None,
        need_weights: bool = False,
        need_head_weights: bool = False,
        encoder_kv: Optional[Tuple[Tensor, Tensor, Tensor]] = None,
    ) -> Tuple[Tensor, Optional[Tensor]]:
        """Decoder tree cross-attention (eqs. 21-24), no subtree mask.

        The encoder side comes, in this order of preference, from ``incremental_state`` (cached by an
        earlier step), ``encoder_kv`` (a precomputed :meth:`encoder_kv` result), or is computed from
        ``encoder_out`` [N + M, B, kdim] (``[leaves; nodes]``) and ``tree``; with an ``incremental_state``
        it is then cached there, its key made contiguous (every decoding step multiplies by k^T, which would
        copy a strided k at each step).

        Args:
            query: [T, B, embed_dim] target states (T = 1 per step in incremental decoding).
        Returns:
            (out [T, B, embed_dim], attention weights or None: [B, T, M + N] averaged over heads or
            [H, B, T, M + N], keys ordered [nodes; leaves] as in eq. 24; ``tree`` must be given for them).
        """
        need_weights = need_weights or need_head_weights
        saved = self._get_input_buffer(incremental_state)
        if saved.get("prev_key") is not None:
            kv = (saved["prev_key"], saved["prev_value"], saved["prev_key_bias"])
        elif encoder_kv is not None:
            kv = encoder_kv
        else:
            if encoder_out is None or tree is None:
                raise ValueError("cross-attention needs the encoder output and tree")
            kv = self.encoder_kv(encoder_out, tree)
        if incremental_state is not None and saved.get("prev_key") is None:
            kv = (kv[0].contiguous(),) + tuple(kv[1:])
            self._set_input_buffer(incremental_state, {
                "prev_key": kv[0], "prev_value": kv[1], "prev_key_bias": kv[2]})
        k, v, bias = kv
        q = self._heads(self.q_proj(query))
        out, probs = self._attend(q, k, v, bias, need_weights)
        if probs is not None:  # [leaves; nodes] -> eq. 24's [nodes; leaves]
            if tree is None:
                raise ValueError("the cross-attention weights need the tree (for the number of leaves)")
            N = tree.num_leaves
            probs = torch.cat([probs[..., N:], probs[..., :N]], -1)
        return self._merge(out), self._weights(probs, need_head_weights)

    # ------------------------------------------------------------------ incremental state (fairseq)
    # Same storage as fairseq's FairseqIncrementalState ("<uuid>.<key>" -> dict of tensors), so a
    # FairseqIncrementalDecoder's reorder_incremental_state reaches this module's cache.
    def _get_input_buffer(self, incremental_state: Optional[IncrementalState]) -> Dict[str, Optional[Tensor]]:
        if incremental_state is None:
            return {}
        return incremental_state.get(f"{self._incremental_state_id}.attn_state") or {}

    def _set_input_buffer(self, incremental_state: IncrementalState,
                          buffer: Dict[str, Optional[Tensor]]) -> IncrementalState:
        incremental_state[f"{self._incremental_state_id}.attn_state"] = buffer
        return incremental_state

    def reorder_incremental_state(self, incremental_state: IncrementalState, new_order: Tensor
                                  ) -> IncrementalState:
        """Reorder the cached encoder (k, v, key bias) along the batch for beam search.

        As in fairseq's MultiheadAttention, an order of the same size only permutes beams of the same
        sentence, whose encoder side is identical, so nothing is copied then."""
        buffer = self._get_input_buffer(incremental_state)
        if not buffer:
            return incremental_state
        for key, value in list(buffer.items()):
            if value is None or value.size(0) == new_order.size(0):
                continue
            buffer[key] = value.index_select(0, new_order)
        return self._set_input_buffer(incremental_state, buffer)
