"""Batched chart decoders in torch: labeled-span CKY (Stern et al. 2017; Kitaev & Klein 2018) with optional
Hamming cost augmentation, and projective first-order Eisner for dependencies (single root).

Both loop in Python over the span width only; every step is vectorised over all spans of that width and all
sentences of the batch, so they run on whatever device the scores are on. Back-pointers are kept as int
tensors and followed on the CPU afterwards (O(n) per sentence).

Conventions: fencepost indices 0..n; the span (i, j) covers words i..j-1 (half-open), 0 <= i < j <= n.
Label classes 0..L-1 are real labels; the empty label (no constituent) has a fixed score of 0.
"""

from typing import List, Optional, Tuple

import torch
from torch import Tensor

NEG = -1e9

Span3 = Tuple[int, int, int]  # (start, end, label class)


def _span_index(n: int, w: int, device) -> Tuple[Tensor, Tensor, Tensor]:
    """Starts i [S], ends j = i + w [S] and inner split points k [S, w-1] of every width-w span."""
    i = torch.arange(n - w + 1, device=device)
    k = i[:, None] + torch.arange(1, w, device=device)[None, :]
    return i, i + w, k


def cky(label_scores: Tensor, lengths: Tensor, gold: Optional[Tensor] = None,
        cost: float = 1.0) -> Tuple[List[List[Span3]], Tensor]:
    """Best binary-branching labeled tree per sentence.

    label_scores: [B, N+1, N+1, L], score of label l on span (i, j) (only i < j <= lengths[b] is read).
    lengths: [B] number of words.
    gold: optional [B, N+1, N+1] long, gold class + 1 of each span (0 = not a constituent); with it the
      search is cost-augmented: every label other than the span's gold one gets ``+cost`` (Hamming loss
      on labeled spans, the empty label included), i.e. max_T s(T) + Delta(T, T*) (paper eq. 9).
    The whole-sentence span must carry a real label; every other span may be empty. A tree's score is the
    sum over its spans of the chosen (best) label score, empty spans adding 0 (+ cost if augmented).

    Returns (spans, scores): spans[b] = the labeled spans (start, end, class) of the best tree, post-order,
    empty spans left out; scores [B] = the (augmented) score of that tree.
    """
    B, N1, _, L = label_scores.shape
    n = N1 - 1
    s = label_scores.detach().float()
    if gold is not None:
        onehot = torch.zeros(B, N1, N1, L + 1, device=s.device)
        onehot.scatter_(-1, gold.long().unsqueeze(-1), 1.0)
        aug = cost * (1.0 - onehot)  # [B, N+1, N+1, L+1]; class 0 = empty
        s = s + aug[..., 1:]
        empty = aug[..., 0]
    else:
        empty = torch.zeros(B, N1, N1, device=s.device)
    best_label_score, best_label = s.max(-1)  # non-empty
    use_empty = empty > best_label_score
    span_any = torch.where(use_empty, empty, best_label_score)
    lengths = lengths.to(s.device)
    # chart[b, w, i]: best score of a subtree over (i, i + w); split[b, w, i]: its best split point
    chart = s.new_full((B, n + 1, n + 1), NEG)
    split = torch.zeros(B, n + 1, n + 1, dtype=torch.long, device=s.device)
    for w in range(1, n + 1):
        i, j, k = _span_index(n, w, s.device)
        is_root = lengths[:, None].eq(w) & i[None, :].eq(0)  # [B, S]
        span = torch.where(is_root, best_label_score[:, i, j], span_any[:, i, j])
        if w > 1:
            left = chart[:, k - i[:, None], i[:, None].expand_as(k)]  # [B, S, w-1]: (i, k)
            right = chart[:, j[:, None] - k, k]  # (k, j)
            inner, arg = (left + right).max(-1)
            span = span + inner
            split[:, w, i] = torch.gather(k.expand(B, -1, -1), 2, arg.unsqueeze(-1)).squeeze(-1)
        chart[:, w, i] = span
    scores = chart[torch.arange(B, device=s.device), lengths, 0]
    # back-pointers on the CPU
    split_c, lab_c, empty_c = split.cpu().numpy(), best_label.cpu().numpy(), use_empty.cpu().numpy()
    out: List[List[Span3]] = []
    for b in range(B):
        nb = int(lengths[b])
        spans: List[Span3] = []
        stack = [(0, nb, False)]
        while stack:
            i0, j0, done = stack.pop()
            if done:
                root = i0 == 0 and j0 == nb
                if root or not bool(empty_c[b, i0, j0]):
                    spans.append((i0, j0, int(lab_c[b, i0, j0])))
                continue
            stack.append((i0, j0, True))
            if j0 - i0 > 1:
                k0 = int(split_c[b, j0 - i0, i0])
                stack.append((k0, j0, False))
                stack.append((i0, k0, False))
        out.append(spans)
    return out, scores


def tree_score(label_scores: Tensor, spans: List[List[Span3]]) -> Tensor:
    """Sum of label_scores over each sentence's labeled spans, differentiable. Returns [B]."""
    idx = [(b, i, j, c) for b, sp in enumerate(spans) for i, j, c in sp]
    out = label_scores.new_zeros(len(spans))
    if not idx:
        return out
    t = torch.tensor(idx, device=label_scores.device)
    vals = label_scores[t[:, 0], t[:, 1], t[:, 2], t[:, 3]]
    return out.index_add(0, t[:, 0], vals)


def hamming(pred: List[List[Span3]], gold: List[List[Span3]]) -> List[int]:
    """Number of labeled spans in one tree but not the other (spans absent from a tree count as empty)."""
    out = []
    for p, g in zip(pred, gold):
        pd = {(i, j): c for i, j, c in p}
        gd = {(i, j): c for i, j, c in g}
        out.append(sum(1 for key in set(pd) | set(gd) if pd.get(key) != gd.get(key)))
    return out


def eisner(arc_scores: Tensor, lengths: Tensor) -> Tuple[Tensor, Tensor]:
    """Best projective dependency tree with exactly one child of the root, batched.

    arc_scores: [B, N+1, N+1], arc_scores[b, h, d] = score of head h for dependent d (index 0 = root,
      words 1..lengths[b]); the root column d = 0 and the diagonal are never used.
    Returns (heads [B, N+1] long, heads[b, d] for d = 1..n (0 = root; position 0 and padding are 0),
             scores [B]).
    """
    B, N1, _ = arc_scores.shape
    s = arc_scores.detach().float()
    dev = s.device
    lengths = lengths.to(dev)
    # complete/incomplete spans over fenceposts-as-words 0..n: Cr[i, j] head i, Cl[i, j] head j, likewise I.
    Cr = s.new_full((B, N1, N1), NEG)
    Cl = s.new_full((B, N1, N1), NEG)
    Ir = s.new_full((B, N1, N1), NEG)
    Il = s.new_full((B, N1, N1), NEG)
    ar = torch.arange(N1, device=dev)
    Cr[:, ar, ar] = 0.0
    Cl[:, ar, ar] = 0.0
    bp = {k: torch.zeros(B, N1, N1, dtype=torch.long, device=dev) for k in ("Ir", "Il", "Cr", "Cl")}
    for w in range(1, N1):
        i = torch.arange(N1 - w, device=dev)
        j = i + w
        r = i[:, None] + torch.arange(w, device=dev)[None, :]  # [S, w]: i .. j-1
        I_, J_ = i[:, None].expand_as(r), j[:, None].expand_as(r)
        both = Cr[:, I_, r] + Cl[:, r + 1, J_]  # [B, S, w]
        best, arg = both.max(-1)
        split = r[None].expand(B, -1, -1).gather(2, arg.unsqueeze(-1)).squeeze(-1)
        Ir[:, i, j] = best + s[:, i, j]
        lscore = best + s[:, j, i]
        Il[:, i, j] = torch.where(i[None, :].eq(0), torch.full_like(lscore, NEG), lscore)  # the root has no head
        bp["Ir"][:, i, j] = split
        bp["Il"][:, i, j] = split
        # Cr[i, j] = max_{r in i+1..j} Ir[i, r] + Cr[r, j]
        r2 = r + 1
        c = Ir[:, I_, r2] + Cr[:, r2, J_]
        best, arg = c.max(-1)
        Cr[:, i, j] = best
        bp["Cr"][:, i, j] = r2[None].expand(B, -1, -1).gather(2, arg.unsqueeze(-1)).squeeze(-1)
        # Cl[i, j] = max_{r in i..j-1} Cl[i, r] + Il[r, j]
        c = Cl[:, I_, r] + Il[:, r, J_]
        best, arg = c.max(-1)
        Cl[:, i, j] = best
        bp["Cl"][:, i, j] = r[None].expand(B, -1, -1).gather(2, arg.unsqueeze(-1)).squeeze(-1)
        # one child of the root: a complete root span (0, w) is only usable as the whole sentence
        Cr[:, 0, w] = torch.where(lengths.eq(w), Cr[:, 0, w], torch.full_like(Cr[:, 0, w], NEG))
    scores = Cr[torch.arange(B, device=dev), 0, lengths]
    bpc = {k: v.cpu().numpy() for k, v in bp.items()}
    heads = torch.zeros(B, N1, dtype=torch.long)
    for b in range(B):
        nb = int(lengths[b])
        stack = [("Cr", 0, nb)]
        while stack:
            kind, i0, j0 = stack.pop()
            if i0 == j0:
                continue
            r0 = int(bpc[kind][b, i0, j0])
            if kind == "Cr":
                heads[b, r0] = i0
                stack += [("Ir", i0, r0), ("Cr", r0, j0)]
            elif kind == "Cl":
                heads[b, r0] = j0
                stack += [("Cl", i0, r0), ("Il", r0, j0)]
            else:  # incomplete: the arc itself was recorded by the complete span above it
                stack += [("Cr", i0, r0), ("Cl", r0 + 1, j0)]
    return heads.to(dev), scores
