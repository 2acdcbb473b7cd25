"""The viewer without a browser: the SVG drawing of a tree (coordinates computed by hand), EVALB's missing / extra
brackets of hand-made pairs, the page's records (compare, treebank, SST, induced, attention), escaping and the
page's self-containedness. tests/integration/test_view_browser.py opens the pages in headless Chromium."""

import json
import re
import xml.etree.ElementTree as ET

import pytest
from conftest import SHARED

from fairseq_tree.evaluation.bracket_f1 import (
    EXTRA,
    IGNORED,
    MATCH,
    MISSING,
    EvalbSentence,
    bracket_marks,
    evalb_tree,
    score_sentence,
)
from fairseq_tree.trees import Tree, parse_brackets, tree_from_brackets
from fairseq_tree.trees.svg import tree_layout, tree_parents, tree_svg
from fairseq_tree.view import page, records
from fairseq_tree.view.page import json_script, render_html

SVG = "{http://www.w3.org/2000/svg}"
# 5 words, 4 nodes: NP(0,2) NP(3,5) VP(2,5) S(0,5)
FIVE = "(S (NP (DT the) (NN cat)) (VP (VBD saw) (NP (DT a) (NN dog))))"
GOLD = "(S (NP (DT The) (NN cat)) (VP (VBD sat) (PP (IN on) (NP (DT the) (NN mat)))) (. .))"
PRED = "(S (NP (DT The) (NN cat)) (VP (VBD sat) (PP (IN on) (NP (DT the)) (NN mat))) (. .))"


def elements(svg: str):
    """(tag, class, attributes without class, text) of every element under the <svg>, in document order."""
    root = ET.fromstring(svg)
    return [(e.tag.replace(SVG, ""), e.get("class"), {k: v for k, v in e.attrib.items() if k != "class"},
             e.text) for e in root.iter() if e is not root]


def evalb(line: str) -> EvalbSentence:
    return evalb_tree(parse_brackets(line))


# ------------------------------------------------------------------------------------------- the drawing
def test_five_word_tree_coordinates_by_hand():
    t = tree_from_brackets(FIVE)
    box = tree_layout(t.words, t.tags, t.svg_nodes())
    # leaf widths max(len(word), len(tag)) * 7 + 10: 31 31 31 24 31, from x = 8; centres at left + width // 2
    assert box["leaf_x"] == [23, 54, 85, 113, 140]
    assert box["width"] == 8 + 31 * 4 + 24 + 8
    # NP(0,2) over the, cat; NP(3,5) over a, dog; VP over saw and NP(3,5); S over the two
    assert box["node_x"] == [(23 + 54) // 2, (113 + 140) // 2, (85 + 126) // 2, (38 + 105) // 2]
    assert box["node_y"] == [16 + 34, 16 + 2 * 34, 16 + 34, 16]
    assert box["parents"] == [3, 2, 3, -1] and box["leaf_parents"] == [0, 0, 2, 1, 1]
    # a tag one row below its parent: the, cat under NP(0,2) and saw under VP (depth 1), a, dog under NP(3,5) (2)
    assert box["tag_y"] == [16 + 2 * 34] * 3 + [16 + 3 * 34] * 2
    assert box["leaf_y"] == 16 + 3 * 34 and box["word_y"] == box["leaf_y"] + 16 and box["height"] == box["word_y"] + 8
    # the words on the bottom row; a drop from under a higher tag (y + 5) to above the word (word_y - 12)
    assert box["drops"] == [(16 + 2 * 34 + 5, 16 + 3 * 34 + 4)] * 3 + [None] * 2
    bare = tree_layout(t.words, [None] * 5, t.svg_nodes())  # no tags: the words on the tags' row
    assert bare["word_y"] == bare["leaf_y"] == 16 + 3 * 34 and bare["height"] == bare["leaf_y"] + 8
    # a tagless leaf's drop goes on from its edge's end (tag row - 12)
    assert bare["drops"] == [(16 + 2 * 34 - 12, 16 + 3 * 34 - 12)] * 3 + [None] * 2
    flat = tree_layout(["a", "b"], ["X", "Y"], [])  # no node: the tags on the top row, no drop
    assert flat["tag_y"] == [16, 16] and flat["leaf_y"] == 16 and flat["word_y"] == 32 and flat["drops"] == [None] * 2


def test_five_word_tree_elements():
    els = elements(tree_from_brackets(FIVE).to_svg())
    assert [e[1] for e in els if e[0] == "g"] == ["node"] * 4 + ["leaf"] * 5
    assert [e[3] for e in els if e[1] == "word"] == ["the", "cat", "saw", "a", "dog"]
    assert [e[3] for e in els if e[1] == "tag"] == ["DT", "NN", "VBD", "DT", "NN"]
    assert [e[2]["data-span"] for e in els if e[1] == "node"] == ["0-2", "3-5", "2-5", "0-5"]
    edges = [e[2] for e in els if e[1] == "edge"]
    assert len(edges) == 3 + 5  # one per node but the root, one per leaf
    # the first: NP(0,2) hangs from S (x 71, text at y 16) -> its own label (x 38, y 50)
    assert edges[0] == {"x1": "71", "y1": "21", "x2": "38", "y2": "38"}
    # the leaf 'saw' hangs from VP (x 105, y 50) down to its tag one row below (y 84), then drops to its word
    assert {"x1": "105", "y1": "55", "x2": "85", "y2": "72"} in edges
    assert [e[2] for e in els if e[1] == "drop"] == [{"x1": str(x), "y1": "89", "x2": str(x), "y2": "122"}
                                                     for x in (23, 54, 85)]
    leaves = ET.fromstring(tree_from_brackets(FIVE).to_svg()).findall(f"{SVG}g")[4:]
    assert [[c.get("class") for c in g] for g in leaves] == [["drop", "tag", "word"]] * 3 + [["tag", "word"]] * 2
    assert [e[2]["y"] for e in els if e[1] == "tag"] == ["84", "84", "84", "118", "118"]


def test_unary_chain_lower_node_first():
    parents, leaf_parents = tree_parents([(0, 2, "VP"), (0, 2, "S")], 2)
    assert parents == [1, -1] and leaf_parents == [0, 0]
    t = tree_from_brackets("(S (VP (VB go) (RB now)))", unary="join")
    assert t.labels == ["S+VP"] and t.svg_nodes() == [(0, 2, "VP"), (0, 2, "S")]
    box = tree_layout(t.words, t.tags, t.svg_nodes())
    assert box["node_y"] == [16 + 34, 16]


def test_words_labels_and_tags_are_escaped():
    svg = tree_svg(["<script>alert(1)</script>", "&"], ['"X"', None], [(0, 2, "<b>")])
    assert "<script>" not in svg and "<b>" not in svg
    els = elements(svg)  # well-formed XML, the text comes back as written
    assert [e[3] for e in els if e[1] == "word"] == ["<script>alert(1)</script>", "&"]
    assert [e[3] for e in els if e[1] == "tag"] == ['"X"']  # a None tag draws nothing
    assert [e[3] for e in els if e[1] == "node"] == [None] and "&lt;b&gt;" in svg


def test_classes_go_on_nodes_and_leaves():
    els = elements(tree_svg(["a", "b"], ["DT", "NN"], [(0, 2, "NP")], ["missing"], ["", "ignored"]))
    assert [e[1] for e in els if e[0] == "g"] == ["node missing", "leaf", "leaf ignored"]


# ------------------------------------------------------------------------------------------- EVALB's marks
def test_marks_of_a_hand_made_pair():
    gold, pred = evalb(GOLD), evalb(PRED)
    # post-order spans: gold NP(0,2) NP(4,6) PP(3,6) VP(2,6) S(0,7); predicted NP(4,5) instead of NP(4,6)
    assert [s[:2] for s in gold.spans] == [(0, 2), (4, 6), (3, 6), (2, 6), (0, 7)]
    assert [s[:2] for s in pred.spans] == [(0, 2), (4, 5), (3, 6), (2, 6), (0, 7)]
    g, p = bracket_marks(gold, pred)
    assert g == [MATCH, MISSING, MATCH, MATCH, MATCH]
    assert p == [MATCH, EXTRA, MATCH, MATCH, MATCH]
    assert score_sentence(gold, pred).matched == 4 == g.count(MATCH) == p.count(MATCH)


def test_marks_ignore_what_evalb_deletes():
    gold = evalb("(TOP (S (NP (PRP It)) (VP (VBZ is) (ADJP (JJ odd))) (X (, ,)) (. .)))")
    pred = evalb("(TOP (S (NP (PRP It)) (VP (VBZ is) (NP (JJ odd))) (X (, ,)) (. .)))")
    # post-order: NP ADJP|NP VP X S TOP; X covers only punctuation (a zero element), TOP is a DELETE_LABEL
    g, p = bracket_marks(gold, pred)
    assert g == [MATCH, MISSING, MATCH, IGNORED, MATCH, IGNORED]
    assert p == [MATCH, EXTRA, MATCH, IGNORED, MATCH, IGNORED]


def test_marks_of_a_unary_chain_are_a_multiset():
    gold = EvalbSentence(["a", "b"], ["DT", "NN"], [(0, 2, "NP"), (0, 2, "NP")])
    pred = EvalbSentence(["a", "b"], ["DT", "NN"], [(0, 2, "NP-SBJ")])
    assert bracket_marks(gold, pred) == ([MATCH, MISSING], [MATCH])


@pytest.mark.skipif(not (SHARED / "data" / "ptb_sample" / "valid.mrg").exists(), reason="no shared PTB sample")
def test_marks_agree_with_the_scorer_on_the_ptb_sample():
    from fairseq_tree.evaluation.bracket_f1 import read_sentences

    for _, raw in list(read_sentences(str(SHARED / "data" / "ptb_sample" / "valid.mrg"), predicted=False))[:60]:
        gold = evalb_tree(raw)
        # a perturbed prediction: every other bracket one word shorter on the right (where it stays a bracket)
        pred = gold._replace(spans=[(s, e - (k % 2 and e - s > 1), lab) for k, (s, e, lab) in enumerate(gold.spans)])
        g, p = bracket_marks(gold, pred)
        s = score_sentence(gold, pred)
        assert g.count(MATCH) == p.count(MATCH) == s.matched
        assert g.count(MATCH) + g.count(MISSING) == s.gold_brackets
        assert p.count(MATCH) + p.count(EXTRA) == s.pred_brackets


# ------------------------------------------------------------------------------------------- records
@pytest.fixture()
def pair(tmp_path):
    gold, pred = tmp_path / "gold.mrg", tmp_path / "pred.txt"
    gold.write_text(GOLD + "\n" + FIVE + "\n")
    pred.write_text(PRED + "\n\n")  # the second sentence not parsed: skipped
    return str(gold), str(pred)


def test_compare_records(pair):
    sents, summary = records.compare_records(*pair)
    one, two = sents
    assert one["f"] == 80.0 and one["r"] == 80.0 and one["p"] == 80.0 and one["bad"] == 1
    assert one["lab"] == ["NP"]
    gold, pred = one["trees"]
    assert gold["m"] == "=-===" and pred["m"] == "=+===" and gold["lm"] == "      ." and "w" not in pred
    assert gold["n"][1] == [4, 6, "NP"] and pred["n"][1] == [4, 5, "NP"]
    assert two["f"] is None and two["bad"] == 1 and two["s"] == "no predicted word left"
    assert [t["title"] for t in two["trees"]] == ["gold"] and "m" not in two["trees"][0]
    rows = dict(summary)
    assert rows["F1"] == "80.00" and rows["sentences"] == "2" and rows["skipped"] == "1"


def test_record_svg_is_tree_to_svg(tmp_path):
    t = tree_from_brackets(GOLD, unary="join", one_word=True)
    path = tmp_path / "t.mrg"
    path.write_text(t.to_brackets(one_word=True) + "\n")
    (rec,) = records.treebank_records(str(path))
    assert records.record_svg(rec) == t.to_svg()


def test_record_svg_marks_classes(pair):
    sents, _ = records.compare_records(*pair)
    els = elements(records.record_svg(sents[0], 1))
    assert [e[1] for e in els if e[0] == "g"][:5] == ["node match", "node extra"] + ["node match"] * 3
    assert [e[1] for e in els if e[0] == "g"][-1] == "leaf ignored"


def test_sst_records(tmp_path):
    trees, preds = tmp_path / "sst.txt", tmp_path / "pred.txt"
    trees.write_text("(3 (2 A) (4 (4 lovely) (2 film)))\n(1 (2 No) (1 fun))\n")
    preds.write_text("3\n2\n")
    sents, summary = records.sst_records(str(trees), str(preds))
    assert [s["bad"] for s in sents] == [0, 1] and sents[1]["s"] == "gold 1, predicted 2"
    assert [s["c"] for s in sents] == ["3\u21923", "1\u21922"]
    assert dict(summary)["accuracy"] == "50.00" and sents[0]["lab"] == ["3"]
    els = elements(records.record_svg(sents[0]))
    assert [e[1] for e in els if e[0] == "g"] == ["node c-4", "node c-3", "leaf c-2", "leaf c-4", "leaf c-2"]
    assert Tree.to_svg(tree_from_brackets("(3 (2 A) (4 (4 lovely) (2 film)))"))  # a plain Tree draws too


def test_induced_records_against_gold(tmp_path):
    (tmp_path / "gold.mrg").write_text("(S (NP (DT The) (NN cat)) (VP (VBD sat) (PRT (RP down))) (. .))\n")
    (tmp_path / "trees.txt").write_text("(S The (S cat (S sat down)))\n")
    conll = "".join(f"{k}\t{w}\t_\t{t}\t{t}\t_\t{h}\tdep\t_\t_\n" for k, (w, t, h) in enumerate(
        [("The", "DT", 2), ("cat", "NN", 3), ("sat", "VBD", 0), ("down", "RP", 3), (".", ".", 3)], 1))
    (tmp_path / "gold.conll").write_text(conll + "\n")
    (tmp_path / "deps.conllu").write_text("".join(f"{k}\t{w}\t_\t_\t_\t_\t{h}\tdep\t_\t_\n" for k, (w, h) in enumerate(
        [("The", 2), ("cat", 0), ("sat", 2), ("down", 3)], 1)) + "\n")
    sents, summary = records.induced_records(str(tmp_path / "trees.txt"), str(tmp_path / "deps.conllu"),
                                             str(tmp_path / "gold.mrg"), str(tmp_path / "gold.conll"))
    (rec,) = sents
    induced, gold = rec["trees"]
    # induced (2,4) (1,4) (0,4); gold (scored) (0,2) (2,4): one of two each way -> UF1 50
    assert induced["n"] == [[2, 4, "S"], [1, 4, "S"], [0, 4, "S"]] and induced["m"] == "=+."
    assert [x[:2] for x in gold["n"]] == [[0, 2], [2, 4], [0, 4]] and gold["m"] == "-=."
    assert rec["f"] == 50.0 and rec["lab"] == ["NP"] and rec["w"] == ["The", "cat", "sat", "down"]
    # heads over the words: gold 2 3 0 3, induced 2 0 2 3 -> UAS 50
    assert rec["arcs"] == [{"title": "induced dependencies", "h": [2, 0, 2, 3], "g": [2, 3, 0, 3]}]
    rows = dict(summary)
    assert rows["UF1 (corpus)"] == "50.00" and rows["UAS"] == "50.00"


def test_attention_records(tmp_path):
    path = tmp_path / "att.jsonl"
    path.write_text(json.dumps({"words": ["a", "b"], "maps": {"prior_layer0": [[1, 0.5], [0.25, 1]]},
                                "tree": "(S a b)"}) + "\n")
    (rec,) = records.attention_records(str(path))[0]
    assert rec["att"] == [{"title": "prior_layer0", "rows": ["a", "b"], "cols": ["a", "b"],
                           "v": [[1.0, 0.5], [0.25, 1.0]]}]
    assert rec["trees"][0]["n"] == [[0, 2, "S"]]
    path.write_text(json.dumps({"words": ["a", "b"], "maps": {"x": [[1, 0.5]]}}) + "\n")
    with pytest.raises(ValueError, match=r"att.jsonl:1: .*'x' is not 2 x 2"):
        records.attention_records(str(path))


# ------------------------------------------------------------------------------------------- the page
def test_page_is_self_contained_and_data_cannot_close_its_script(pair):
    sents, summary = records.compare_records(*pair)
    sents[0]["w"][0] = "</script><script>window.pwned=1</script>"
    html = page("compare", sents, summary, title="<i>t</i>").html
    assert html.count("</script>") == 2  # the data's and the script's own: the word cannot close either
    assert "<title>&lt;i&gt;t&lt;/i&gt;</title>" in html
    assert "default-src 'none'" in html
    assert not re.search(r"""\b(src|href)\s*=|@import|url\(""", html)  # nothing loaded from anywhere
    data = json.loads(re.search(r'id="view-data">(.*?)</script>', html, re.S).group(1))
    assert data["sentences"][0]["w"][0] == "</script><script>window.pwned=1</script>"
    assert data["labels"] == ["NP"] and data["mode"] == "compare"


def test_json_script_escapes():
    assert json_script(["</script>&\u2028"]) == '["\\u003c/script\\u003e\\u0026\\u2028"]'


def test_page_rejects_an_unknown_mode():
    with pytest.raises(ValueError, match="mode 'x'"):
        page("x", [])
    assert render_html({"title": "t", "mode": "treebank", "summary": [], "labels": [], "sentences": []})


def test_tree_records_of_trees_in_memory(pair):
    """What the parser hub's view draws: Trees (one-word constituents kept) scored and marked as the files are."""
    gold = tree_from_brackets(GOLD, "join", one_word=True)
    pred = tree_from_brackets(PRED, "join", one_word=True)
    (rec,), summary = records.tree_records([pred], [gold])
    from_files = records.compare_records(*pair)[0][0]
    assert [t["m"] for t in rec["trees"]] == [t["m"] for t in from_files["trees"]] == ["=-===", "=+==="]
    assert rec["f"] == 80.0 and dict(summary)["F1"] == "80.00"
    assert records.record_svg(rec, 0) == gold.to_svg(["match", "missing", "match", "match", "match"],
                                                     [""] * 6 + ["ignored"])
    (plain,), _ = records.tree_records([gold])
    assert records.record_svg(plain) == gold.to_svg() and "m" not in plain["trees"][0]
    with pytest.raises(ValueError, match="1 gold vs 2 predicted"):
        records.tree_records([pred, pred], [gold])


def test_cli_writes_the_page(pair, tmp_path, capsys):
    from fairseq_tree.cli import view

    out = tmp_path / "p.html"
    assert view.main([str(out), "--trees", pair[0], "--pred", pair[1], "--title", "T"]) == str(out)
    assert capsys.readouterr().out == f"{out}: {out.stat().st_size:,} bytes\n"
    data = json.loads(re.search(r'id="view-data">(.*?)</script>', out.read_text(), re.S).group(1))
    assert data["mode"] == "compare" and data["title"] == "T" and len(data["sentences"]) == 2
    view.main([str(out), "--trees", pair[0]])
    assert '"mode":"treebank"' in out.read_text()
    with pytest.raises(SystemExit, match="--pred goes with --trees or --sst"):
        view.main([str(out), "--induced", pair[1], "--pred", pair[1]])
    with pytest.raises(SystemExit, match="bad.txt:1: 1 unclosed"):
        (tmp_path / "bad.txt").write_text("(S (NP a)\n")
        view.cli_main([str(out), "--trees", pair[0], "--pred", str(tmp_path / "bad.txt")])


def test_attention_item_labels_its_maps():
    import numpy as np

    item = records.attention_item(["a", "b", "c"], {
        "prior": np.eye(3), "links": np.array([[0.5, 0.25]]), "heads": np.zeros((2, 3, 3)), "root": np.ones(3),
        "cross": {"rows": ["x", "</s>"], "cols": ["a", "b", "c"], "v": np.full((2, 3), 1 / 3)}}, "(S a (S b c))")
    assert item["maps"]["prior"] == [[1, 0, 0], [0, 1, 0], [0, 0, 1]]
    assert item["maps"]["links"] == {"rows": ["0"], "cols": ["a|b", "b|c"], "v": [[0.5, 0.25]]}
    assert sorted(item["maps"]) == ["cross", "heads/0", "heads/1", "links", "prior"]  # 1-D "root" left out
    assert item["maps"]["cross"] == {"rows": ["x", "</s>"], "cols": ["a", "b", "c"], "v": [[0.3333] * 3] * 2}
    rec = records.attention_record(1, json.loads(json.dumps(item)))
    assert [(a["title"], a["rows"], len(a["v"][0])) for a in rec["att"]][-1] == ("cross", ["x", "</s>"], 3)
    nodes = records.attention_item(["a", "b"], {"m": [[1, 0, 0], [0, 1, 0], [0, 0, 1]]}, rows=["a", "b", "S 0-2"],
                                   cols=["a", "b", "S 0-2"])
    assert nodes["maps"]["m"][2] == [0, 0, 1] and nodes["cols"] == ["a", "b", "S 0-2"]


def test_the_cli_writes_into_a_folder_it_creates(tmp_path):
    """docs/view.md's first command, in a fresh directory: ``out/`` is made (as fairseq-tree-parse --output does);
    it used to fail on the temporary file beside the missing folder."""
    from fairseq_tree.cli.view import main

    (tmp_path / "g.mrg").write_text("(S (NP (DT The) (NN dog)) (VP (VBZ runs)))\n", encoding="utf-8")
    path = main([str(tmp_path / "out" / "new" / "wsj22.html"), "--trees", str(tmp_path / "g.mrg")])
    assert (tmp_path / "out" / "new" / "wsj22.html").is_file() and path.endswith("wsj22.html")
