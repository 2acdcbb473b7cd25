"""PNG figures of induced structure (matplotlib figures made without pyplot: no display needed, the
process's backend untouched).

* :func:`plot_prior_layers`: the constituent prior C of every layer as heat maps, one panel per layer, words on
  both axes (Wang et al. 2019, Fig. 5);
* :func:`plot_dependency`: p(parent | word) as a heat map, rows = words, columns = candidate parents
  (Shen et al. 2021, Fig. 5), an optional ``<root>`` column;
* :func:`plot_tree`: a binary (or any nested-span) tree drawn with lines, leaves at the bottom;
* :func:`plot_corpus_size`: induced-tree scores against the number of training sentences (issue 49).

Inputs are CPU tensors or arrays over the words of one sentence (e.g. ``InducedStructure.maps[name][b, ..., :n,
:n]``); each function writes ``path`` and returns it.
"""

from __future__ import annotations

import math
from typing import List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from fairseq_tree.trees.tree import Span


def figure(nrows: int = 1, ncols: int = 1, squeeze: bool = True, **kwargs):
    """A matplotlib ``Figure`` (``kwargs``: ``Figure``'s) and its axes (``Figure.subplots``), made without
    pyplot: the process's backend and pyplot's figure list are left as they were (a notebook's inline plots keep
    working after a call from it); -> (fig, axes)."""
    from matplotlib.figure import Figure

    fig = Figure(**kwargs)
    return fig, fig.subplots(nrows, ncols, squeeze=squeeze)


def save(fig, path: str, dpi: int = 100, tight: bool = True) -> str:
    """Write ``fig`` to ``path`` (its format from the suffix, through Agg for PNG); -> path."""
    if tight:
        fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    return path


def _array(x) -> np.ndarray:
    if hasattr(x, "detach"):  # torch tensor, any dtype/device
        x = x.detach().float().cpu().numpy()
    return np.asarray(x, dtype=np.float32)


def plot_prior_layers(maps: Union[Mapping[str, object], Sequence, object], words: Sequence[str], path: str,
                      cols: int = 4, vmax: Optional[float] = 1.0) -> str:
    """Heat maps of the constituent prior per layer.

    maps: ``{name: [n, n]}`` (panel titles = names, e.g. ``prior_layer3``), or a [L, n, n] tensor / array /
        list of [n, n] (titles ``layer 0..L-1``). Values in [0, 1] (``vmax=None`` scales to the data).
    words: [n] labels of both axes.
    """
    if isinstance(maps, Mapping):
        names, mats = list(maps.keys()), [_array(m) for m in maps.values()]
    else:
        arr = [_array(m) for m in maps] if isinstance(maps, (list, tuple)) else list(_array(maps))
        names, mats = [f"layer {l}" for l in range(len(arr))], arr
    n = len(words)
    for name, m in zip(names, mats):
        if m.shape != (n, n):
            raise ValueError(f"{name}: map of shape {m.shape}, expected {(n, n)} for {n} words")
    cols = max(1, min(cols, len(mats)))
    rows = max(1, math.ceil(len(mats) / cols))
    size = 0.9 + 0.22 * n
    fig, axes = figure(rows, cols, figsize=(cols * size + 1, rows * size + 0.5), squeeze=False)
    im = None
    for k, ax in enumerate(axes.flat):
        if k >= len(mats):
            ax.axis("off")
            continue
        im = ax.imshow(mats[k], cmap="viridis", vmin=0.0, vmax=vmax, interpolation="nearest")
        ax.set_title(names[k], fontsize=8)
        ax.set_xticks(range(n))
        ax.set_yticks(range(n))
        ax.set_xticklabels(words, rotation=90, fontsize=6)
        ax.set_yticklabels(words, fontsize=6)
    if im is not None:
        fig.colorbar(im, ax=axes.ravel().tolist(), shrink=0.8)
    return save(fig, path, tight=False)  # the colorbar spans the panels: no tight layout


def plot_dependency(matrix, words: Sequence[str], path: str, root: Optional[bool] = None) -> str:
    """Heat map of p(parent | word): ``matrix`` [n, n] (row i = word i, column j = parent j) or [n, n + 1]
    with column 0 the root (``root=None`` infers it from the shape)."""
    m = _array(matrix)
    n = len(words)
    if root is None:
        root = m.shape == (n, n + 1)
    if m.shape != (n, n + int(root)):
        raise ValueError(f"matrix of shape {m.shape}, expected {(n, n + int(root))} for {n} words")
    size = 1.2 + 0.3 * n
    fig, ax = figure(figsize=(size + 1.2, size))
    im = ax.imshow(m, cmap="Blues", vmin=0.0, vmax=max(float(m.max()), 1e-6), interpolation="nearest")
    ax.set_xticks(range(m.shape[1]))
    ax.set_yticks(range(n))
    ax.set_xticklabels((["<root>"] if root else []) + list(words), rotation=90, fontsize=7)
    ax.set_yticklabels(words, fontsize=7)
    ax.set_xlabel("parent")
    ax.set_ylabel("word")
    fig.colorbar(im, ax=ax, shrink=0.8)
    return save(fig, path)


def tree_layout(spans: Sequence[Span], n: int) -> Tuple[List[Tuple[float, float]], List[Tuple[int, int]]]:
    """Node coordinates and edges of the tree over ``n`` leaves (nested half-open spans, root added if missing).

    Nodes 0..n-1 are the leaves at (k, 0); node n + m is the m-th span in post-order at x = mean of its
    children's x, y = its height. Edges are (parent, child) node ids.
    """
    nodes = sorted({(i, j) for i, j in spans if j - i >= 2} | ({(0, n)} if n >= 2 else set()),
                   key=lambda s: (s[1], -s[0]))
    pos: List[Tuple[float, float]] = [(float(k), 0.0) for k in range(n)]
    owner = list(range(n))  # current top node of each leaf
    edges: List[Tuple[int, int]] = []
    for i, j in nodes:  # post-order: children are complete before their parent
        children = []
        for k in range(i, j):
            if not children or children[-1] != owner[k]:
                children.append(owner[k])
        node = len(pos)
        pos.append((float(np.mean([pos[c][0] for c in children])), 1.0 + max(pos[c][1] for c in children)))
        edges.extend((node, c) for c in children)
        for k in range(i, j):
            owner[k] = node
    return pos, edges


def plot_tree(spans: Sequence[Span], words: Sequence[str], path: str, title: Optional[str] = None) -> str:
    """Line drawing of the tree given by ``spans`` (half-open word spans, e.g. ``InducedStructure.spans[b]``)."""
    n = len(words)
    pos, edges = tree_layout(spans, n)
    height = max((y for _, y in pos), default=0.0)
    fig, ax = figure(figsize=(1.0 + 0.6 * n, 1.0 + 0.5 * (height + 1)))
    for p, c in edges:
        ax.plot([pos[p][0], pos[c][0]], [pos[p][1], pos[c][1]], color="k", lw=1)
    ax.scatter([x for x, _ in pos[n:]], [y for _, y in pos[n:]], s=12, color="tab:blue", zorder=3)
    for k, w in enumerate(words):
        ax.text(k, -0.15, w, ha="center", va="top", rotation=60 if n > 12 else 0, fontsize=8)
    ax.set_xlim(-0.8, n - 0.2)
    ax.set_ylim(-1.2, height + 0.5)
    ax.axis("off")
    if title:
        ax.set_title(title, fontsize=9)
    return save(fig, path)


def size_series(points: Mapping[str, Sequence[Mapping]], metric: str) -> List[Tuple[str, list, list, list]]:
    """The lines of :func:`plot_corpus_size`'s ``metric`` panel: ``[(arch, sentences, means, sds)]``, corpora
    without values of ``metric`` left out, sd the sample sd (0 for one seed)."""
    out = []
    for arch, pts in points.items():
        pts = [p for p in pts if p[metric]]
        if pts:
            out.append((arch, [p["sentences"] for p in pts], [float(np.mean(p[metric])) for p in pts],
                        [float(np.std(p[metric], ddof=1)) if len(p[metric]) > 1 else 0.0 for p in pts]))
    return out


def plot_corpus_size(points: Mapping[str, Sequence[Mapping]], path: str, baselines: Optional[Mapping] = None,
                     reference: Optional[int] = 39832, title: Optional[str] = None) -> str:
    """wsj22 UF1 (left) and UAS (right) against the training sentences, log x axis: a line per architecture
    through its corpora (mean over seeds, error bars = sample sd when there are several), the trivial baselines
    dashed (``baselines``: ``fairseq-tree-induce``'s ``{'right': {'sentence_f1'}, 'right_chain': {'uas'}}``), and
    a dotted vertical line at ``reference`` sentences (WSJ 02-21, what the papers train on).

    points: :func:`fairseq_tree.evaluation.induction_runs.size_points`'s ``{arch: [{'sentences', 'uf1': [..],
        'uas': [..]}, ...]}``.
    """
    from matplotlib.ticker import FuncFormatter, NullFormatter

    sizes = [p["sentences"] for pts in points.values() for p in pts] + ([reference] if reference else [])
    span = (min(sizes) / 2, max(sizes) * 2)  # room on a log axis for a single point
    fig, axes = figure(1, 2, figsize=(10, 3.8))
    for ax, metric, label in zip(axes, ("uf1", "uas"), ("wsj22 UF1", "wsj22 UAS")):
        for arch, xs, means, sds in size_series(points, metric):  # an arch keeps its colour in both panels
            ax.errorbar(xs, means, yerr=sds, marker="o", capsize=3, label=arch, color=f"C{list(points).index(arch)}")
        base = (baselines or {}).get("right" if metric == "uf1" else "right_chain")
        if base:
            value = base["sentence_f1" if metric == "uf1" else "uas"]
            ax.axhline(value, color="gray", linestyle="--", lw=1,
                       label=f"{'right-branching' if metric == 'uf1' else 'right chain'} {value:.1f}")
        if reference:
            ax.axvline(reference, color="k", linestyle=":", lw=1, label=f"WSJ 02-21 ({reference:,})")
        ax.set_xscale("log")
        ax.set_xlim(*span)
        ax.set_xticks(sorted(set(sizes)))  # the corpora's sizes and the reference, written out
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:,.0f}"))
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("training sentences")
        ax.set_ylabel(label)
        ax.legend(fontsize=7)
    if title:
        fig.suptitle(title, fontsize=9)
    return save(fig, path, dpi=110)


__all__ = [
    "figure", "save", "plot_corpus_size", "size_series", "plot_prior_layers", "plot_dependency", "plot_tree",
    "tree_layout",
]
