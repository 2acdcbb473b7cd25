"""One tree as an SVG picture, in pure string code (no dependency): the drawing that ``Tree.to_svg()`` returns and
that the viewer's page (:mod:`fairseq_tree.view`, ``view.js``'s ``drawTree``) draws in the browser, element for
element (the same layout in integers, the same elements, classes and attributes, in the same order: tested).

Input: ``words`` [n], ``tags`` [n] (None or "" draws no tag) and ``nodes``: (start, end, label) half-open spans,
nested, in post-order (children before parents); several nodes over the same leaves are a unary chain, the lower
one first (EVALB's view of a bracket file, :func:`fairseq_tree.evaluation.bracket_f1.evalb_tree`, is such a list;
so is ``Tree.labeled_spans(one_word=True)``). ``node_classes`` / ``leaf_classes``: an extra CSS class per node /
leaf (the viewer marks ``missing`` / ``extra`` brackets, SST classes ``c-3``).

Layout (all integers), the one linguists draw (NLTK's ``TreePrettyPrinter``): leaf ``j`` has its own column,
``max(len(word), len(tag)) * CHAR_W + PAD`` wide, leaves left to right; a node is at its depth (root 0) in rows from
the top and centred over its children's extreme x (a leaf child counts at its column), so each node lies within
its span's columns; a leaf's tag (its preterminal) is on the row below its parent, and every word is on the bottom
row (below the deepest tags; on their row when no leaf has a tag), a vertical ``drop`` line joining a tag (or a
tagless leaf's edge) higher up to its word. Every edge thus joins two adjacent rows, and two edges between the same
rows lie over disjoint column ranges unless they share their parent: no edge crosses another, nor a drop (only
ancestors of a leaf lie above its tag row). Elements, in order: ``<line class="edge">`` per child (nodes in
post-order, then leaves), ``<g class="node ..">`` per node (``<text>`` label), ``<g class="leaf ..">`` per leaf
(``<line class="drop">`` if its word is below its tag row, ``<text class="tag">`` if it has a tag, ``<text
class="word">``). Text is XML-escaped.
"""

from __future__ import annotations

from html import escape
from typing import Dict, List, Optional, Sequence, Tuple

CHAR_W, PAD, ROW_H, TOP, MARGIN, WORD_DY = 7, 10, 34, 16, 8, 16


def tree_parents(nodes: Sequence[Tuple[int, int, str]], n: int) -> Tuple[List[int], List[int]]:
    """-> (parent of each node, parent of each leaf): -1 where none. A node's parent is the first later node
    whose span contains it (equal spans: a unary chain, the later one is above); a leaf's is the first node that
    covers it (post-order: the lowest)."""
    parents, leaf_parents = [-1] * len(nodes), [-1] * n
    stack: List[int] = []
    for i, (s, e, _) in enumerate(nodes):
        while stack and nodes[stack[-1]][0] >= s and nodes[stack[-1]][1] <= e:
            parents[stack.pop()] = i
        for j in range(s, e):
            if leaf_parents[j] < 0:
                leaf_parents[j] = i
        stack.append(i)
    return parents, leaf_parents


def tree_layout(words: Sequence[str], tags: Sequence[Optional[str]],
                nodes: Sequence[Tuple[int, int, str]]) -> Dict[str, object]:
    """Integer coordinates of the drawing (see the module docstring): ``leaf_x`` [n], ``node_x`` / ``node_y`` [m],
    ``parents`` / ``leaf_parents``, ``tag_y`` [n] (each leaf's tag row: the row below its parent), ``leaf_y`` (the
    lowest tag row), ``word_y`` (the words' row), ``drops`` [n] ((y1, y2) of the vertical line from a leaf's tag row
    down to its word, or None), ``width``, ``height``."""
    n, m = len(words), len(nodes)
    parents, leaf_parents = tree_parents(nodes, n)
    leaf_x, left = [], MARGIN
    for word, tag in zip(words, tags):
        w = max(len(word), len(tag or "")) * CHAR_W + PAD
        leaf_x.append(left + w // 2)
        left += w
    depth = [0] * m
    for i in range(m - 1, -1, -1):  # parents come after their children
        if parents[i] >= 0:
            depth[i] = depth[parents[i]] + 1
    lo, hi = [10 ** 9] * m, [-1] * m
    node_x = [0] * m
    for j, p in enumerate(leaf_parents):
        if p >= 0:
            lo[p], hi[p] = min(lo[p], leaf_x[j]), max(hi[p], leaf_x[j])
    for i in range(m):  # children first: each node's x is final before its parent reads it
        node_x[i] = (lo[i] + hi[i]) // 2
        p = parents[i]
        if p >= 0:
            lo[p], hi[p] = min(lo[p], node_x[i]), max(hi[p], node_x[i])
    node_y = [TOP + d * ROW_H for d in depth]
    tag_y = [TOP + (depth[p] + 1 if p >= 0 else 0) * ROW_H for p in leaf_parents]
    leaf_y = max([TOP] + tag_y)
    word_y = leaf_y + (WORD_DY if any(tags) else 0)  # no tag anywhere: the words take the tags' row
    drops = []  # from under the tag (a tagless leaf: from its edge's end) to above the word
    for y, tag in zip(tag_y, tags):
        y1 = y + 5 if tag else y - 12
        drops.append((y1, word_y - 12) if word_y - 12 > y1 else None)
    return {"leaf_x": leaf_x, "node_x": node_x, "node_y": node_y, "parents": parents, "leaf_parents": leaf_parents,
            "tag_y": tag_y, "leaf_y": leaf_y, "word_y": word_y, "drops": drops, "width": left + MARGIN,
            "height": word_y + MARGIN}


def _cls(base: str, extra: Optional[Sequence[str]], k: int) -> str:
    return f"{base} {extra[k]}" if extra and extra[k] else base


def tree_svg(words: Sequence[str], tags: Sequence[Optional[str]], nodes: Sequence[Tuple[int, int, str]],
             node_classes: Optional[Sequence[str]] = None, leaf_classes: Optional[Sequence[str]] = None) -> str:
    """The SVG drawing of one tree (see the module docstring) as one string."""
    if len(tags) != len(words):
        raise ValueError(f"{len(words)} words vs {len(tags)} tags")
    box = tree_layout(words, tags, nodes)
    nx, ny, lx, ty = box["node_x"], box["node_y"], box["leaf_x"], box["tag_y"]
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="tree" width="{box["width"]}" height="{box["height"]}" '
           f'viewBox="0 0 {box["width"]} {box["height"]}">']
    for i, p in enumerate(box["parents"]):
        if p >= 0:
            out.append(f'<line class="edge" x1="{nx[p]}" y1="{ny[p] + 5}" x2="{nx[i]}" y2="{ny[i] - 12}"/>')
    for j, p in enumerate(box["leaf_parents"]):
        if p >= 0:
            out.append(f'<line class="edge" x1="{nx[p]}" y1="{ny[p] + 5}" x2="{lx[j]}" y2="{ty[j] - 12}"/>')
    for i, (s, e, label) in enumerate(nodes):
        out.append(f'<g class="{_cls("node", node_classes, i)}" data-span="{s}-{e}">'
                   f'<text x="{nx[i]}" y="{ny[i]}">{escape(label)}</text></g>')
    for j, (word, tag) in enumerate(zip(words, tags)):
        drop = box["drops"][j]
        drop_el = f'<line class="drop" x1="{lx[j]}" y1="{drop[0]}" x2="{lx[j]}" y2="{drop[1]}"/>' if drop else ""
        tag_el = f'<text class="tag" x="{lx[j]}" y="{ty[j]}">{escape(tag)}</text>' if tag else ""
        out.append(f'<g class="{_cls("leaf", leaf_classes, j)}">{drop_el}{tag_el}'
                   f'<text class="word" x="{lx[j]}" y="{box["word_y"]}">{escape(word)}</text></g>')
    out.append("</svg>")
    return "".join(out)
