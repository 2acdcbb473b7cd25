"""The drawn tree's rows (fairseq_tree/trees/svg.py) when only some leaves have a tag (a treebank line with a bare
word beside tagged ones, e.g. ``(S (NP (DT The) dog) (VBZ runs))``): the words go on their own row below every tag,
as in a fully tagged tree; only a tree with no tag at all puts its words on the tags' row. A bug of one line that
tests/unit/test_tree_layout.py let through (scripts/mutation/, docs/development.md)."""

from fairseq_tree.trees.svg import ROW_H, TOP, WORD_DY, tree_layout


def test_words_go_below_the_tags_when_any_leaf_has_one():
    # nodes: NP (0, 2) and S (0, 3), post-order; "dog" hangs from NP with no tag
    nodes = [(0, 2, "NP"), (0, 3, "S")]
    box = tree_layout(["The", "dog", "runs"], ["DT", None, "VBZ"], nodes)
    assert box["tag_y"] == [TOP + 2 * ROW_H, TOP + 2 * ROW_H, TOP + ROW_H]  # under NP (depth 1), under S (depth 0)
    assert box["leaf_y"] == TOP + 2 * ROW_H and box["word_y"] == TOP + 2 * ROW_H + WORD_DY
    untagged = tree_layout(["The", "dog", "runs"], [None] * 3, nodes)
    assert untagged["word_y"] == untagged["leaf_y"] == TOP + 2 * ROW_H


def test_the_treebank_views_drawing_of_a_bare_word_beside_tagged_ones(tmp_path):
    """fairseq-tree-view --trees on such a treebank line: every word on one row, below the DT tag (not on it)."""
    import re

    from fairseq_tree.view import records

    (tmp_path / "t.mrg").write_text("(S (NP (DT The) dog) (VBZ runs))\n")
    (rec,) = records.treebank_records(str(tmp_path / "t.mrg"))
    assert rec["trees"][0]["t"] == ["DT", None, "VBZ"]
    svg = records.record_svg(rec)
    words = re.findall(r'<text class="word" x="\d+" y="(\d+)">(\w+)</text>', svg)
    assert words == [(str(TOP + 2 * ROW_H + WORD_DY), w) for w in ("The", "dog", "runs")]
    assert re.search(r'<text class="tag" x="\d+" y="(\d+)">DT</text>', svg).group(1) == str(TOP + 2 * ROW_H)
