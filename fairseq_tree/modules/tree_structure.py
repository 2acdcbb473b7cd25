"""Batch tree structure for tree attention with hierarchical accumulation (Nguyen et al., ICLR 2020).

Everything the tree layers need is derived from the node spans **once per batch** (not per layer or
head), vectorised over the batch, and kept in a :class:`TreeStructure` shared by all layers.

Project convention: a sentence has ``n`` leaves and ``m >= 0`` nonterminal nodes; node ``i`` covers the
leaves ``spans[i, 0] <= j < spans[i, 1]`` (half-open, 0-based, counted over the sentence's *real*
leaves); spans are unique. Padding may sit anywhere (left, right): only the masks say what is real, and
leaf ``j`` of a sentence is its ``j``-th non-padded leaf position.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Optional

import torch
from torch import Tensor

DEFAULT_MAX_INDEX = 100  # |E| of the paper (Section 7.4)


def round_up(n: int, multiple: int) -> int:
    """The bucket of a size: ``n`` rounded up to a multiple of ``multiple``, at least ``multiple`` (so that no size
    is 0 or 1, which torch.compile would specialise on)."""
    return max(multiple, -(-n // multiple) * multiple)


@dataclass
class TreeStructure:
    """Tree structure of a batch (B sentences, N leaf slots, M node slots, Np pair slots).

    Masks are bool and ``True`` = *real* (the opposite of fairseq's padding masks). Every matrix is 0 /
    ``False`` wherever a padded leaf or node is involved, so padding is invisible by construction.

    Attributes:
        leaf_mask: [B, N] bool, real leaves.
        node_mask: [B, M] bool, real nodes.
        leaf_rank: [B, N] long, index of each leaf in its sentence (0-based; 0 on padding).
        A: [B, M, N] float32, ``A[b, i, j] = 1`` iff leaf j is under node i.
        D: [B, M, M] float32, ``D[b, i, t] = 1`` iff node t is in the subtree of node i (diagonal incl.).
        P: [B, M, N] float32, ``P = D @ A``: number of nodes on the path from leaf j up to node i
            (both ends counted; 0 where ``A == 0``).
        span_len: [B, M] float32, ``c_i = sum_j A[i, j]`` (0 on padding).
        depth: [B, M] long, depth of each node from the root (root = 1; 0 on padding).
        horizontal: [B, M, N] long, 1-based position of leaf j inside the span of node t, clamped at
            ``max_horizontal`` (the paper's ``|H_j^t|``); 0 where ``A == 0``.
        vertical_path: [B, M, N] long, ``P`` clamped at ``max_vertical`` (the paper's ``|V_j^t|``).
        vertical_depth: [B, M, N] long, ``depth[t]`` clamped at ``max_vertical`` where ``A == 1``
            (the authors' code).
        pair_node, pair_leaf: [B, Np] long, the (node t, leaf j) pairs with ``A[t, j] = 1``, packed to
            the front (``Np = max_b sum A[b]``; padded pairs point at (0, 0)).
        pair_mask: [B, Np] bool, real pairs.
        pair_D: [B, M, Np] float32, ``D[i, pair_node[p]]`` (0 for padded pairs): node i sees pair p.
        pair_horizontal, pair_vertical_path, pair_vertical_depth: [B, Np] long, the clamped indices
            of each pair (0 for padded pairs).
        self_attn_mask: [B, N + M, N + M] bool, encoder subtree mask over ``[leaves; nodes]`` (query
            rows, key columns; True = may attend). Leaf queries see real leaves; node query i sees
            ``[A[i] | D[i]]``. A padded query sees only itself, so no softmax row is empty (no NaN);
            its output must be discarded (the attention zeroes it).
        max_horizontal, max_vertical: the clamps used for the index tensors.
    """

    leaf_mask: Tensor
    node_mask: Tensor
    leaf_rank: Tensor
    A: Tensor
    D: Tensor
    P: Tensor
    span_len: Tensor
    depth: Tensor
    horizontal: Tensor
    vertical_path: Tensor
    vertical_depth: Tensor
    pair_node: Tensor
    pair_leaf: Tensor
    pair_mask: Tensor
    pair_D: Tensor
    pair_horizontal: Tensor
    pair_vertical_path: Tensor
    pair_vertical_depth: Tensor
    self_attn_mask: Tensor
    max_horizontal: int = DEFAULT_MAX_INDEX
    max_vertical: int = DEFAULT_MAX_INDEX

    def __post_init__(self):
        # per-batch tensors the layers share (see mean_weights / pair_weights); a reordered or moved copy
        # (_map) starts with an empty cache
        self._cache: dict = {}

    # ------------------------------------------------------------------ construction
    @classmethod
    def build(
        cls,
        spans: Tensor,
        node_pad_mask: Optional[Tensor],
        leaf_pad_mask: Optional[Tensor],
        max_horizontal: int = DEFAULT_MAX_INDEX,
        max_vertical: int = DEFAULT_MAX_INDEX,
        num_leaves: Optional[int] = None,
        pair_multiple: int = 1,
    ) -> "TreeStructure":
        """Build the structure of a batch.

        Args:
            spans: [B, M, 2] long, half-open leaf spans; entries of padded nodes are ignored.
            node_pad_mask: [B, M] bool, True = padding (fairseq convention); None = no padding.
            leaf_pad_mask: [B, N] bool, True = padding; None = no padding (then ``num_leaves`` gives N).
            max_horizontal, max_vertical: clamps of the hierarchical-embedding indices (|E|).
            pair_multiple: Np (the pair slots) rounded up to a multiple of it (``--tree-compile``'s buckets; the
                extra slots are padded pairs).
        """
        if spans.dim() != 3 or spans.size(-1) != 2:
            raise ValueError(f"spans must be [B, M, 2], got {tuple(spans.shape)}")
        B, M = spans.shape[:2]
        device = spans.device
        if leaf_pad_mask is None:
            if num_leaves is None:
                raise ValueError("give leaf_pad_mask or num_leaves")
            leaf_mask = torch.ones(B, num_leaves, dtype=torch.bool, device=device)
        else:
            leaf_mask = ~leaf_pad_mask.to(device=device, dtype=torch.bool)
        node_mask = (torch.ones(B, M, dtype=torch.bool, device=device) if node_pad_mask is None
                     else ~node_pad_mask.to(device=device, dtype=torch.bool))
        N = leaf_mask.size(1)
        f32 = torch.float32

        # Spans count real leaves; the rank of a leaf slot maps tensor positions to sentence indices,
        # which makes left, right (or any) padding work alike.
        leaf_rank = (leaf_mask.long().cumsum(-1) - 1).clamp_min(0) * leaf_mask
        start, end = spans[..., 0].long(), spans[..., 1].long()  # [B, M]
        r = leaf_rank[:, None, :]  # [B, 1, N]
        A_b = ((start[..., None] <= r) & (r < end[..., None])
               & node_mask[..., None] & leaf_mask[:, None, :])  # [B, M, N]
        # t in subtree(i) <=> span(t) inside span(i); exact because spans are unique and nested.
        D_b = ((start[:, :, None] <= start[:, None, :]) & (end[:, None, :] <= end[:, :, None])
               & node_mask[:, :, None] & node_mask[:, None, :])  # [B, M(i), M(t)]
        A = A_b.to(f32)
        D = D_b.to(f32)
        P = torch.bmm(D, A)  # exact small integers in fp32
        span_len = A.sum(-1)
        depth = D_b.sum(1)  # number of nodes having t in their subtree = depth from the root

        horizontal = ((r - start[..., None] + 1).clamp(1, max_horizontal)) * A_b
        vertical_path = P.long().clamp(max=max_vertical)
        vertical_depth = depth.clamp(max=max_vertical)[..., None] * A_b

        # (node, leaf) pairs with A = 1, packed per sentence: the hierarchical embeddings are
        # accumulated over these pairs instead of over an m x n x d tensor.
        flat = A_b.reshape(B, M * N)
        counts = flat.sum(-1)
        Np = int(counts.max()) if flat.numel() else 0
        if pair_multiple > 1:
            Np = round_up(Np, pair_multiple)
        pos = flat.long().cumsum(-1) - 1
        bi, fi = flat.nonzero(as_tuple=True)
        pi = pos[bi, fi]
        pair_node = torch.zeros(B, Np, dtype=torch.long, device=device)
        pair_leaf = torch.zeros(B, Np, dtype=torch.long, device=device)
        pair_mask = torch.zeros(B, Np, dtype=torch.bool, device=device)
        pair_node[bi, pi] = fi // max(N, 1)
        pair_leaf[bi, pi] = fi % max(N, 1)
        pair_mask[bi, pi] = True
        pair_D = D.gather(2, pair_node[:, None, :].expand(B, M, Np)) * pair_mask[:, None, :]
        flat_idx = pair_node * N + pair_leaf

        def per_pair(x: Tensor) -> Tensor:
            return x.reshape(B, M * N).gather(1, flat_idx) * pair_mask

        # Encoder self-attention mask over [leaves; nodes].
        L = N + M
        self_mask = torch.zeros(B, L, L, dtype=torch.bool, device=device)
        self_mask[:, :N, :N] = leaf_mask[:, :, None] & leaf_mask[:, None, :]
        self_mask[:, N:, :N] = A_b
        self_mask[:, N:, N:] = D_b
        real = torch.cat([leaf_mask, node_mask], 1)
        eye = torch.eye(L, dtype=torch.bool, device=device)
        self_mask |= eye & ~real[:, :, None]  # a padded query sees itself only: no empty softmax row

        return cls(
            leaf_mask=leaf_mask, node_mask=node_mask, leaf_rank=leaf_rank, A=A, D=D, P=P,
            span_len=span_len, depth=depth, horizontal=horizontal, vertical_path=vertical_path,
            vertical_depth=vertical_depth, pair_node=pair_node, pair_leaf=pair_leaf,
            pair_mask=pair_mask, pair_D=pair_D, pair_horizontal=per_pair(horizontal),
            pair_vertical_path=per_pair(vertical_path), pair_vertical_depth=per_pair(vertical_depth),
            self_attn_mask=self_mask,
            max_horizontal=max_horizontal, max_vertical=max_vertical,
        )

    # ------------------------------------------------------------------ helpers
    @property
    def batch_size(self) -> int:
        return self.A.size(0)

    @property
    def num_nodes(self) -> int:
        """M, the node slots."""
        return self.A.size(1)

    @property
    def num_leaves(self) -> int:
        """N, the leaf slots."""
        return self.A.size(2)

    def _cached(self, key, build):
        """``build()`` once per batch: the layers share what depends on the batch only, so a GPU step does not
        launch the same small kernels once per layer (launches, not arithmetic, bound a step there)."""
        if key not in self._cache:
            self._cache[key] = build()
        return self._cache[key]

    @property
    def leaf_pad_mask(self) -> Tensor:
        """[B, N] bool, True = padding (fairseq convention). Built once per batch."""
        return self._cached("leaf_pad", lambda: ~self.leaf_mask)

    @property
    def real_mask(self) -> Tensor:
        """[B, N + M] bool over ``[leaves; nodes]``, True = real. Built once per batch."""
        return self._cached("real", lambda: torch.cat([self.leaf_mask, self.node_mask], 1))

    def real_positions(self, dtype: torch.dtype) -> Tensor:
        """[N + M, B, 1] in ``dtype``: 1 at real ``[leaves; nodes]`` positions, 0 at padding; time-first, as
        fairseq's layers hold states. Built once per batch and dtype."""
        return self._cached(("real", dtype), lambda: self.real_mask.t()[..., None].to(dtype))

    @property
    def pad_mask(self) -> Tensor:
        """[B, N + M] bool over ``[leaves; nodes]``, True = padding. Built once per batch."""
        return self._cached("pad", lambda: ~self.real_mask)

    def pair_bucket(self, name: str, size: int) -> Tensor:
        """[B, Np] long: the 0-based embedding row of each pair's ``pair_<name>`` index (``horizontal``,
        ``vertical_path``, ``vertical_depth``), clamped to ``size`` rows; padded pairs (index 0) go to row 0, where
        their weight is 0. Built once per batch."""
        return self._cached(("bucket", name, size), lambda: getattr(self, f"pair_{name}").clamp(1, size) - 1)

    def accumulation_operands(self, dtype: torch.dtype = torch.float32):
        """``([I | A^T] [B, N, N + M], [1 | D] [B, M, N + M])`` in ``dtype``: ``(alpha @ left) * right`` is
        ``[alpha | (alpha @ A^T) * D]``, the weights of ``[leaves; nodes]`` in each node (the accumulation's one
        matmul; alpha @ I is exact). Built once per batch and dtype."""
        def build():
            B, M, N = self.A.shape
            eye = torch.eye(N, dtype=dtype, device=self.A.device).expand(B, N, N)
            left = torch.cat([eye, self.A.to(dtype).transpose(1, 2)], 2)
            right = torch.cat([self.A.new_ones(B, M, N, dtype=dtype), self.D.to(dtype)], 2)
            return left, right
        return self._cached(("accumulation", dtype), build)

    def attn_bias(self, kind: str, dtype: torch.dtype) -> Tensor:
        """The attention mask as an additive bias in ``dtype`` (0 = attend, -inf = masked), what
        ``scaled_dot_product_attention`` makes of a bool mask in every call otherwise: ``self`` (the subtree mask)
        and ``full`` (-SubMask) [B, 1, N + M, N + M], ``cross`` [B, 1, 1, N + M] (the decoder's keys: every real
        leaf and node, in the encoder output's order ``[leaves; nodes]``). Its rows are stored with a
        stride padded to 8 elements (the alignment CUDA's memory-efficient kernel wants of a bias, which it would
        otherwise pad by a copy per call). Built once per batch, kind and dtype."""
        def build():
            mask = {"self": lambda: self.self_attn_mask, "full": self.full_attn_mask,
                    "cross": lambda: self.real_mask[:, None]}[kind]()[:, None]  # [B, 1, T, S]
            S = mask.size(-1)
            bias = mask.new_zeros(*mask.shape[:-1], -(-S // 8) * 8, dtype=dtype)[..., :S]
            return bias.masked_fill_(~mask, float("-inf"))
        return self._cached(("bias", kind, dtype), build)

    def full_attn_mask(self) -> Tensor:
        """[B, N + M, N + M] bool: the encoder mask without subtree masking (ablation "-SubMask"):
        every real query sees every real key; a padded query sees itself only. Built once per batch."""
        def build():
            real = self.real_mask
            eye = torch.eye(real.size(1), dtype=torch.bool, device=real.device)
            return (real[:, :, None] & real[:, None, :]) | (eye & ~real[:, :, None])
        return self._cached("full", build)

    def mean_weights(self, count_leaf_in_mean: bool, dtype: torch.dtype = torch.float32) -> Tensor:
        """[B, M, N]: ``A_ij / (c_i * |C_ij|)``, the structure part of alpha_ij = w_j A_ij / (c_i |C_ij|)
        (eqs. 6 and 10; ``|C_ij| = P_ij + 1`` with the leaf counted, else ``max(P_ij, 1)``). It depends on the
        batch only: built once, in ``dtype``, and shared by every layer."""
        def build():
            A, P = self.A.to(dtype), self.P.to(dtype)
            count = P + 1.0 if count_leaf_in_mean else P.clamp_min(1.0)
            return A / (self.span_len.to(dtype).clamp_min(1.0)[..., None] * count)
        return self._cached(("mean", count_leaf_in_mean, dtype), build)

    def pair_weights(self, count_leaf_in_mean: bool, dtype: torch.dtype = torch.float32) -> Tensor:
        """[B, M, Np]: ``mean_weights[i, j_p] * D[i, t_p]`` for every (node t_p, leaf j_p) pair: with the leaf
        weight w_{j_p}, the weight of pair p's hierarchical embedding in node i. Built once per batch."""
        def build():
            norm = self.mean_weights(count_leaf_in_mean, dtype)
            B, M, Np = self.pair_D.shape
            return norm.gather(-1, self.pair_leaf[:, None, :].expand(B, M, Np)) * self.pair_D.to(dtype)
        return self._cached(("pair", count_leaf_in_mean, dtype), build)

    def _map(self, fn) -> "TreeStructure":
        kw = {}
        for f in fields(self):
            v = getattr(self, f.name)
            kw[f.name] = fn(v) if isinstance(v, Tensor) else v
        return TreeStructure(**kw)

    def to(self, device) -> "TreeStructure":
        """Move to a device; dtypes are kept (the structure stays fp32 under --fp16 on purpose)."""
        return self._map(lambda t: t.to(device))

    def index_select(self, new_order: Tensor) -> "ReorderedTree":
        """Reorder / repeat sentences along the batch dimension (beam search, encoder_out reordering), lazily:
        see :class:`ReorderedTree`."""
        return ReorderedTree(self, new_order)


class ReorderedTree:
    """A :class:`TreeStructure` reordered along the batch, built on first use. fairseq's beam search reorders
    ``encoder_out`` at every step, while the decoder reads the tree at its first step only (the cross-attention
    caches its encoder side in ``incremental_state``): reorders compose their indices here instead of copying
    every [B, N + M, N + M] mask and [B, M, Np] matrix per step. Sizes are answered without building it; any
    other attribute builds it (once) and reads it there."""

    def __init__(self, base: TreeStructure, order: Tensor):
        self._base, self._order, self._tree = base, order, None

    @property
    def num_leaves(self) -> int:
        return self._base.num_leaves

    @property
    def num_nodes(self) -> int:
        return self._base.num_nodes

    @property
    def batch_size(self) -> int:
        return self._order.numel()

    def index_select(self, new_order: Tensor) -> "ReorderedTree":
        return ReorderedTree(self._base, self._order.index_select(0, new_order))

    def materialize(self) -> TreeStructure:
        """The reordered :class:`TreeStructure` (built once)."""
        if self._tree is None:
            self._tree = self._base._map(lambda t: t.index_select(0, self._order))
        return self._tree

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.materialize(), name)


def root_positions(tree: TreeStructure) -> Tensor:
    """[B] long: the root of each sentence among ``[leaves; nodes]``: its last real node (post-order), or
    with no node (one word) its real leaf."""
    N, M = tree.num_leaves, tree.num_nodes
    has_nodes = tree.node_mask.any(1)
    last_node = (tree.node_mask.long() * torch.arange(1, M + 1, device=tree.node_mask.device)).argmax(1)
    first_leaf = tree.leaf_mask.long().argmax(1)
    return torch.where(has_nodes, N + last_node, first_leaf)
