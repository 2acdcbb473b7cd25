"""EVALB-rule bracket scorer, attachment scores and the parsing reader/writer on hand-made cases."""

from collections import Counter

import pytest

from fairseq_tree.data.parsing_data import parse_tree_from_brackets, to_brackets
from fairseq_tree.evaluation.bracket_f1 import attachment_scores, bracket_f1, evalb_brackets


def T(text):
    return parse_tree_from_brackets(text)


def test_reader_keeps_one_word_unaries_and_joins_chains():
    t = T("(TOP (S (NP-SBJ (PRP It)) (VP (VBZ is) (ADJP (JJ fine))) (. .)))")
    assert t.words == ["It", "is", "fine", "."]
    assert t.spans == [(0, 1, "NP"), (2, 3, "ADJP"), (1, 3, "VP"), (0, 4, "S")]
    t = T("(S (S (VP (VB Go))) (NP (-NONE- *)) (. !))")
    assert t.spans == [(0, 1, "S+VP"), (0, 2, "S")]
    t = T("(NN Hello)")  # a bare preterminal gets a root
    assert t.spans == [(0, 1, "ROOT")]
    for text in ("(S (S (VP (VB Go))) (. !))", "(S (NP (DT the) (NN dog)) (VP (VBZ barks)))"):
        t = T(text)
        assert to_brackets(t.words, t.tags, t.spans) == text
        assert T(to_brackets(t.words, t.tags, t.spans)) == t


GOLD = "(TOP (S (NP (DT The) (NN cat)) (VP (VBD sat) (PRT (RP down))) (. .)))"


def test_identical_trees_score_100():
    g = T(GOLD)
    r = bracket_f1([g], [g])
    assert r["f1"] == 100.0 and r["exact_match"] == 100.0
    assert r["gold_brackets"] == 4  # S, NP, VP, PRT; TOP and POS tags are not brackets


def test_top_ignored_and_advp_prt_equivalent():
    g = T(GOLD)
    p = T("(TOP (S (NP (DT The) (NN cat)) (VP (VBD sat) (ADVP (RB down))) (. .)))")
    assert bracket_f1([g], [p])["f1"] == 100.0
    assert g.spans == [(0, 2, "NP"), (3, 4, "PRT"), (2, 4, "VP"), (0, 5, "S")]  # the reader drops the TOP wrapper
    # DELETE_LABEL TOP (and ROOT): not counted even where a tree keeps them; PRT scored as ADVP; re-indexed
    # over the words that are not punctuation (the final period)
    kept = evalb_brackets([(0, 2, "NP"), (3, 4, "PRT"), (0, 5, "S"), (0, 5, "TOP"), (0, 5, "ROOT+S")], g.tags)
    assert kept == Counter({("NP", 0, 2): 1, ("ADVP", 3, 4): 1, ("S", 0, 4): 2})


def test_punctuation_removed_before_comparing_spans():
    g = T(GOLD)
    # attaches the final period inside the VP: differs only by punctuation, so still a perfect match
    p = T("(S (NP (DT The) (NN cat)) (VP (VBD sat) (PRT (RP down)) (. .)))")
    assert bracket_f1([g], [p])["f1"] == 100.0
    # a bracket over punctuation alone disappears
    p2 = T("(S (NP (DT The) (NN cat)) (VP (VBD sat) (PRT (RP down))) (X (. .)))")
    assert bracket_f1([g], [p2])["pred_brackets"] == 4


def test_wrong_label_and_span_counts():
    g = T(GOLD)
    p = T("(S (NP (DT The)) (VP (NN cat) (VBD sat) (PRT (RP down))) (. .))")
    # pred brackets: S(0,4) NP(0,1) VP(1,4) PRT(3,4); gold: S(0,4) NP(0,2) VP(2,4) PRT(3,4) -> 2 of 4
    r = bracket_f1([g], [p])
    assert (r["matched"], r["gold_brackets"], r["pred_brackets"]) == (2, 4, 4)
    assert r["precision"] == pytest.approx(50.0) and r["f1"] == pytest.approx(50.0)
    # a unary chain counts one bracket per label
    p3 = T("(S (NP (DT The) (NN cat)) (VP (VP (VBD sat) (PRT (RP down)))) (. .))")
    r3 = bracket_f1([g], [p3])
    assert (r3["matched"], r3["pred_brackets"]) == (4, 5)
    assert r3["recall"] == 100.0 and r3["precision"] == pytest.approx(80.0)


def test_length_mismatch_is_an_error():
    with pytest.raises(ValueError):
        bracket_f1([T(GOLD)], [T("(S (NP (DT The) (NN cat)) (VBD sat))")])


def test_attachment_scores_skip_punctuation():
    tags = [["DT", "NN", "VBD", "RP", "."]]
    gold_h, gold_r = [[2, 3, 0, 3, 3]], [["det", "nsubj", "root", "prt", "punct"]]
    pred_h, pred_r = [[2, 3, 0, 2, 1]], [["det", "dobj", "root", "prt", "punct"]]
    r = attachment_scores(gold_h, gold_r, pred_h, pred_r, tags)
    assert r["dep_tokens"] == 4
    assert r["uas"] == pytest.approx(75.0) and r["las"] == pytest.approx(50.0)


def test_binarizer_vocab_from_data_and_escaped_words(tmp_path):
    from fairseq.data import Dictionary

    from fairseq_tree.data.parsing_data import binarize, get_parser

    (tmp_path / "a.mrg").write_text(
        "(TOP (S (NP (NNP WCRS\\/Boston)) (VP (VBD won) (S (VP (TO to) (VP (VB go)))))))\n"
        "(TOP (FRAG (INTJ (UH Yes)) (. .)))\n", encoding="utf-8")
    (tmp_path / "a.conll").write_text(
        "1\tWCRS/Boston\t_\tNNP\tNNP\t_\t2\tnsubj\t_\t_\n2\twon\t_\tVBD\tVBD\t_\t0\troot\t_\t_\n"
        "3\tto\t_\tTO\tTO\t_\t4\taux\t_\t_\n4\tgo\t_\tVB\tVB\t_\t2\txcomp\t_\t_\n\n"
        "1\tYes\t_\tUH\tUH\t_\t0\troot\t_\t_\n2\t.\t_\t.\t.\t_\t1\tpunct\t_\t_\n\n", encoding="utf-8")
    rep = binarize(get_parser().parse_args(["--destdir", str(tmp_path / "bin"), "--train", str(tmp_path / "a.mrg"),
                                            "--train-dep", str(tmp_path / "a.conll")]))
    labels = Dictionary.load(str(tmp_path / "bin" / "dict.labels.txt"))
    got = {labels[i] for i in range(labels.nspecial, len(labels))}
    assert got == {"S", "NP", "VP", "S+VP", "FRAG", "INTJ"}
    rels = Dictionary.load(str(tmp_path / "bin" / "dict.rels.txt"))
    assert {rels[i] for i in range(rels.nspecial, len(rels))} == {"nsubj", "root", "aux", "xcomp", "punct"}
    assert rep["splits"]["train"]["spans"] == 7  # NP, VP(go), S+VP, VP, S; INTJ, FRAG
