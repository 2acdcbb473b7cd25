"""The tree drawing's layout (fairseq_tree/trees/svg.py, the same in view.js: tests/integration/test_view_browser.py)
on real trees: every tree of the PTB sample's valid split (as ``Tree.to_svg()`` and the viewer's EVALB records
draw it, with and without tags) and the first SST dev trees is drawn with no two crossing lines; each parent is
centred over its children, one row above them; every word on the bottom row, joined by a vertical drop."""

import xml.etree.ElementTree as ET
from itertools import islice

import pytest
from conftest import SHARED

from fairseq_tree.trees import labelled_tree_from_brackets, read_treebank
from fairseq_tree.trees.svg import ROW_H, tree_layout, tree_svg
from fairseq_tree.view import records

VALID = SHARED / "data" / "ptb_sample" / "valid.mrg"
SST_DEV = SHARED / "data" / "sst" / "dev.txt"
pytestmark = pytest.mark.skipif(not VALID.exists(), reason="no shared PTB sample")


def svg_lines(svg: str):
    """Every ``<line>`` of a drawing (edges and drops) as ((x1, y1), (x2, y2), class)."""
    return [((int(e.get("x1")), int(e.get("y1"))), (int(e.get("x2")), int(e.get("y2"))), e.get("class"))
            for e in ET.fromstring(svg).iter("{http://www.w3.org/2000/svg}line")]


def _orient(a, b, c) -> int:
    d = (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])
    return (d > 0) - (d < 0)


def _on(a, b, c) -> bool:  # c, collinear with a-b, lies on the segment a-b
    return min(a[0], b[0]) <= c[0] <= max(a[0], b[0]) and min(a[1], b[1]) <= c[1] <= max(a[1], b[1])


def intersect(p, q) -> bool:
    """Segments p and q meet (touching counts)."""
    (a, b), (c, d) = p, q
    o1, o2, o3, o4 = _orient(a, b, c), _orient(a, b, d), _orient(c, d, a), _orient(c, d, b)
    if o1 != o2 and o3 != o4:
        return True
    return ((o1 == 0 and _on(a, b, c)) or (o2 == 0 and _on(a, b, d)) or (o3 == 0 and _on(c, d, a))
            or (o4 == 0 and _on(c, d, b)))


def crossings(segments):
    """Pairs (i, k) of segments that meet and share no endpoint."""
    out = []
    for i, p in enumerate(segments):
        for k in range(i + 1, len(segments)):
            q = segments[k]
            if set(p) & set(q):
                continue
            if max(p[0][0], p[1][0]) < min(q[0][0], q[1][0]) or max(q[0][0], q[1][0]) < min(p[0][0], p[1][0]):
                continue  # apart in x: cheap
            if intersect(p, q):
                out.append((i, k))
    return out


def drawings():
    """(name, words, tags, nodes) of every tree the test draws."""
    for k, (_, t) in enumerate(read_treebank(str(VALID), unary="join", one_word=True), 1):
        yield f"valid {k} Tree", t.words, t.tags, t.svg_nodes()
        yield f"valid {k} untagged", t.words, [None] * len(t.words), t.svg_nodes()
    for rec in records.treebank_records(str(VALID)):  # EVALB's view: -NONE- leaves, function tags, bare leaves
        tree = rec["trees"][0]
        yield f"valid {rec['i']} record", rec["w"], tree["t"] or [None] * len(rec["w"]), [tuple(x) for x in tree["n"]]
    if SST_DEV.exists():
        for k, line in enumerate(islice(open(SST_DEV, encoding="utf-8"), 100), 1):
            t = labelled_tree_from_brackets(line, records.SST_CLASSES)
            yield f"sst {k}", t.words, t.tags, t.svg_nodes()


def test_no_crossing_line_in_any_drawn_tree():
    seen, total = 0, 0
    for name, words, tags, nodes in drawings():
        lines = [(a, b) for a, b, _ in svg_lines(tree_svg(words, tags, nodes))]
        bad = crossings(lines)
        assert not bad, (name, [(lines[i], lines[k]) for i, k in bad[:3]], len(bad))
        seen, total = seen + 1, total + len(lines)
    assert seen == 3 * 273 + 100 and total > 50_000  # every tree drawn, all with their lines


def test_parents_centred_over_children_one_row_up_words_at_the_bottom():
    for name, words, tags, nodes in drawings():
        box = tree_layout(words, tags, nodes)
        xs, ny, ty = box["node_x"], box["node_y"], box["tag_y"]
        kids = [[] for _ in nodes]  # (x, y) of each node's children: nodes at their label, leaves at their tag row
        for i, p in enumerate(box["parents"]):
            if p >= 0:
                kids[p].append((xs[i], ny[i]))
        for j, p in enumerate(box["leaf_parents"]):
            if p >= 0:
                kids[p].append((box["leaf_x"][j], ty[j]))
        for i, ch in enumerate(kids):
            cx = [x for x, _ in ch]
            assert xs[i] == (min(cx) + max(cx)) // 2, (name, i)
            assert {y for _, y in ch} == {ny[i] + ROW_H}, (name, i)
        assert box["leaf_x"] == sorted(set(box["leaf_x"])), name  # a column per word, in order
        assert box["leaf_y"] == max(ty) and box["word_y"] >= box["leaf_y"], name
        for j, drop in enumerate(box["drops"]):
            if ty[j] < box["leaf_y"]:  # a word below its tag row hangs from a drop that reaches it
                assert drop is not None and drop[1] == box["word_y"] - 12 and drop[0] < drop[1], (name, j)


def test_sentence_one_reported_and_compared_cross_nothing():
    """Issue 50 item 11: the edges to "reported" and "compared" used to run through half the tree."""
    _, t = next(read_treebank(str(VALID), unary="join", one_word=True))
    svg = t.to_svg()
    root = ET.fromstring(svg)
    ns = "{http://www.w3.org/2000/svg}"
    box = tree_layout(t.words, t.tags, t.svg_nodes())
    for word in ("reported", "compared"):
        j = t.words.index(word)
        x, ty = box["leaf_x"][j], box["tag_y"][j]
        p = box["leaf_parents"][j]
        edge = ((box["node_x"][p], box["node_y"][p] + 5), (x, ty - 12))
        drop = ((x, box["drops"][j][0]), (x, box["word_y"] - 12))
        assert ty == box["node_y"][p] + ROW_H and drop[0][1] == ty + 5  # tag one row below VP / PP, then the drop
        lines = [(a, b) for a, b, _ in svg_lines(svg)]
        assert edge in lines and drop in lines
        assert not [q for q in lines if q not in (edge, drop) and not set(q) & set(edge) and intersect(edge, q)]
        assert not [q for q in lines if q not in (edge, drop) and not set(q) & set(drop) and intersect(drop, q)]
    leaves = root.findall(f"{ns}g[@class='leaf']")
    assert [g.find(f"{ns}line").get("class") for g in leaves[2:3]] == ["drop"]  # "reported" hangs from its VBD


def test_crossing_counter_by_hand():
    """The counter itself: an X crosses, a T touches, lines sharing an end or apart do not."""
    assert intersect(((0, 0), (10, 10)), ((0, 10), (10, 0)))
    assert intersect(((0, 0), (10, 0)), ((5, 0), (5, 10)))  # touching counts
    assert not intersect(((0, 0), (10, 0)), ((0, 1), (10, 1)))
    assert not intersect(((0, 0), (4, 4)), ((5, 5), (9, 9)))  # collinear, apart
    assert crossings([((0, 0), (10, 10)), ((0, 10), (10, 0)), ((0, 0), (0, 10))]) == [(0, 1)]
