"""EVALB-rule bracket scorer, attachment scores and the parsing reader/writer on hand-made cases. Expected
numbers marked "EVALB:" are the output of the real evalb.c (COLLINS.prm) on the same lines."""

import pytest

from fairseq_tree.evaluation.bracket_f1 import (
    COLLINS_DELETE_LABELS,
    WRAPPER_LABELS,
    attachment_scores,
    bracket_f1,
    evalb_brackets,
    format_report,
    score_files,
)
from fairseq_tree.trees import Tree, tree_from_brackets


def T(text):
    return tree_from_brackets(text, "join", one_word=True)  # the EVALB view


def test_reader_keeps_one_word_unaries_and_joins_chains():
    t = T("(TOP (S (NP-SBJ (PRP It)) (VP (VBZ is) (ADJP (JJ fine))) (. .)))")
    assert t.words == ["It", "is", "fine", "."]
    assert t.labeled_spans(one_word=True) == [(0, 1, "NP"), (2, 3, "ADJP"), (1, 3, "VP"), (0, 4, "S")]
    t = T("(S (S (VP (VB Go))) (NP (-NONE- *)) (. !))")
    assert t.labeled_spans(one_word=True) == [(0, 1, "S+VP"), (0, 2, "S")]
    t = T("(NN Hello)")  # a bare preterminal gets a root
    assert t.labeled_spans(one_word=True) == [(0, 1, "ROOT")]
    for text in ("(S (S (VP (VB Go))) (. !))", "(S (NP (DT the) (NN dog)) (VP (VBZ barks)))"):
        t = T(text)
        assert t.to_brackets(one_word=True) == text
        assert T(t.to_brackets(one_word=True)) == t


GOLD = "(TOP (S (NP (DT The) (NN cat)) (VP (VBD sat) (PRT (RP down))) (. .)))"


def test_identical_trees_score_100():
    g = T(GOLD)
    r = bracket_f1([g], [g])
    assert r["f1"] == 100.0 and r["complete_match"] == 100.0
    assert r["gold_brackets"] == 4  # S, NP, VP, PRT; TOP and POS tags are not brackets


def test_top_ignored_and_advp_prt_equivalent():
    g = T(GOLD)
    p = T("(TOP (S (NP (DT The) (NN cat)) (VP (VBD sat) (ADVP (RB down))) (. .)))")
    assert bracket_f1([g], [p])["f1"] == 100.0
    # the reader drops the TOP wrapper
    assert g.labeled_spans(one_word=True) == [(0, 2, "NP"), (3, 4, "PRT"), (2, 4, "VP"), (0, 5, "S")]
    # DELETE_LABEL TOP: not counted even where a tree keeps it; PRT scored as ADVP; re-indexed over the words
    # that are not punctuation (the final period). ROOT is no COLLINS.prm label: counted unless asked
    kept = evalb_brackets([(0, 2, "NP"), (3, 4, "PRT"), (0, 5, "S"), (0, 5, "TOP"), (0, 5, "ROOT")], g.tags)
    assert kept == [("NP", 0, 2), ("ADVP", 3, 4), ("S", 0, 4), ("ROOT", 0, 4)]
    assert evalb_brackets([(0, 5, "ROOT")], g.tags, delete_labels=COLLINS_DELETE_LABELS | WRAPPER_LABELS) == []


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


def test_length_mismatch_is_an_error_sentence():
    # EVALB does not stop: the sentence is an error sentence ("Length unmatch (4|3)") and is not scored (this test
    # expected a ValueError before the scorer followed evalb.c)
    r = bracket_f1([T(GOLD), T(GOLD)], [T("(S (NP (DT The) (NN cat)) (VBD sat))"), T(GOLD)])
    assert (r["sentences"], r["error_sentences"], r["valid_sentences"], r["skipped"]) == (2, 1, 1, 1)
    assert r["skipped_by_reason"] == {"length unmatch": 1} and r["f1"] == 100.0


IT_WORKS = "(TOP (S (NP (PRP It)) (VP (VBZ works)) (. .)))"


def test_tagging_accuracy_excludes_punctuation():
    # EVALB: Tagging accuracy 50.00 (1 of the 2 words left once '.' is deleted); counting '.' gives 66.67
    r = bracket_f1([T(IT_WORKS)], [T(IT_WORKS.replace("VBZ", "NNS"))])
    assert r["tagging_accuracy"] == pytest.approx(50.0)
    assert (r["words"], r["correct_tags"], r["f1"]) == (2, 1, 100.0)


def test_words_deleted_by_each_trees_own_tags():
    gold = [T(IT_WORKS), T(IT_WORKS), T(IT_WORKS.replace("(. .)", "(NN .)"))]
    pred = [T(IT_WORKS.replace("(. .)", "(NN .)")),  # '.' tagged NN: 3 predicted words vs 2 gold
            T("(TOP (S (NP (PRP It)) (VP (VBZ works))))"),  # no '.' at all: 2 words each, scored
            T(IT_WORKS)]  # gold tags the final '.' NN: 3 gold words vs 2
    r = bracket_f1(gold, pred)
    # EVALB: 1 : Length unmatch (2|3), 3 : Length unmatch (3|2); sentence 2 valid, 100 / 100
    assert (r["error_sentences"], r["valid_sentences"], r["skipped_by_reason"]) == (2, 1, {"length unmatch": 2})
    assert (r["recall"], r["precision"], r["matched"]) == (100.0, 100.0, 3)


def test_words_are_compared():
    # EVALB: Words unmatch (works|work): an error sentence, nothing of it scored
    r = bracket_f1([T(IT_WORKS), T(IT_WORKS)], [T(IT_WORKS.replace("works", "work")), T(IT_WORKS)])
    assert (r["error_sentences"], r["valid_sentences"], r["skipped_by_reason"]) == (1, 1, {"words unmatch": 1})
    assert (r["gold_brackets"], r["pred_brackets"]) == (3, 3)


def test_root_and_empty_wrappers_count_as_brackets():
    # COLLINS.prm deletes TOP only. EVALB on the gold line IT_WORKS against (ROOT (S ..)), ( (S ..)) and (TOP (S ..)):
    # Bracketing Recall 100.00, Precision 81.82, FMeasure 90.00, Complete match 33.33
    g = T(IT_WORKS)
    spans = g.labeled_spans(one_word=True)
    assert spans[-1] == (0, 3, "S")
    wrapped = [Tree.from_labeled_spans(g.words, g.tags, spans[:-1] + [(0, 3, label + "+S")])  # a chain over S
               for label in ("ROOT", "")] + [g]
    r = bracket_f1([g] * 3, wrapped)
    assert (r["matched"], r["gold_brackets"], r["pred_brackets"]) == (9, 9, 11)
    assert round(r["precision"], 2) == 81.82 and round(r["f1"], 2) == 90.0 and round(r["complete_match"], 2) == 33.33
    r = bracket_f1([g] * 3, wrapped, delete_wrappers=True)  # our readers' convention, on request
    assert r["precision"] == 100.0 and "ROOT" in r["delete_labels"] and "" in r["delete_labels"]


def _lines(tmp_path, name, lines):
    path = tmp_path / name
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return str(path)


def test_files_as_evalb_reads_them(tmp_path):
    """Every status of evalb.c's per-sentence table; the report equals EVALB's output on these lines."""
    gold = _lines(tmp_path, "g.mrg", [IT_WORKS] * 4 + ["(TOP (NP (NN cost) (-LCB- -LCB-) (CD 5) (-RCB- -RCB-)))"])
    pred = _lines(tmp_path, "p.mrg", [IT_WORKS.replace("(. .)", "(NN .)"), "(TOP (S (NP (PRP It)) (VP (VBZ works))))",
                                      IT_WORKS.replace("works", "wrks"), "",
                                      "(TOP (NP (NN cost) (-LCB- {) (CD 5) (-RCB- })))"])
    sc = score_files(gold, pred)
    assert [(s.status, s.message) for s in sc.sentences] == [
        (1, "Length unmatch (2|3)"), (0, ""), (1, "Words unmatch (works|wrks)"), (2, "no predicted word left"),
        (1, "Words unmatch (-LCB-|{)")]  # EVALB compares words as written: '{' is not '-LCB-'
    assert [s.pred_line for s in sc.skipped] == [1, 3, 4, 5]
    report = format_report(sc, per_sentence=True).splitlines()
    assert report[3:5] == ["   1    3    1    0.00   0.00     0      0    0      0      0     0     0.00",
                           "   2    3    0  100.00 100.00     3      3    3      0      2     2   100.00"]
    assert report[12:17] == ["-- All --", "Number of sentence        =      5", "Number of Error sentence  =      3",
                             "Number of Skip  sentence  =      1", "Number of Valid sentence  =      1"]


def test_multiline_gold_and_empty_wrapper(tmp_path):
    # a gold tree over several lines (PTB's own .mrg layout) is one sentence; its "( (S" wrapper is a bracket with
    # an empty label, which EVALB counts (so does a prediction that has it too): 4 brackets each, all matched
    gold = _lines(tmp_path, "g.mrg", ["( (S ", "    (NP-SBJ (PRP It) )", "    (VP (VBZ works) )", "    (. .) ))", "",
                                      "( (S (NP (PRP We)) (VP (VBD left))))"])
    pred = _lines(tmp_path, "p.mrg", ["( (S (NP (PRP It)) (VP (VBZ works)) (. .)))",
                                      "(S (NP (PRP We)) (VP (VBD left)))"])
    a, b = score_files(gold, pred).sentences
    assert (a.gold_line, a.matched, a.gold_brackets, a.pred_brackets) == (1, 4, 4, 4)
    assert (b.gold_line, b.matched, b.gold_brackets, b.pred_brackets) == (6, 3, 4, 3)  # EVALB: recall 75, prec. 100
    assert score_files(gold, pred, delete_wrappers=True).sentences[1].gold_brackets == 3


def test_crossing_and_function_tags(tmp_path):
    # EVALB on these two lines: Recall 60.00, Precision 60.00, crossing 1 (sentence 1), Tagging accuracy 100.00
    gold = _lines(tmp_path, "g.mrg",
                  ["(S (NP-SBJ (DT The) (NN cat)) (VP (VBD sat) (PP (IN on) (NP (DT a) (NN mat)))))"])
    pred = _lines(tmp_path, "p.mrg", ["(S (NP (DT The) (NN cat) (VBD sat)) (VP (PP (IN on) (NP=2 (DT a) (NN mat)))))"])
    sc = score_files(gold, pred)
    (s,) = sc.sentences
    assert (s.matched, s.gold_brackets, s.pred_brackets, s.crossing) == (3, 5, 5, 1)


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


def test_punctuation_elsewhere_in_the_prediction_still_aligns(tmp_path):
    """Rule 2: each tree loses its own punctuation before the words are compared, so a comma in the gold and a
    period elsewhere in the prediction leave the same three words, compared in order: a valid sentence, all 3
    brackets (NP 0-2, VP 2-3, S 0-3) and all 3 tags right."""
    gold = _lines(tmp_path, "g.mrg", ["(S (NP (DT The) (NN cat)) (, ,) (VP (VBD sat)))"])
    pred = _lines(tmp_path, "p.mrg", ["(S (NP (DT The) (NN cat)) (VP (VBD sat)) (. .))"])
    (s,) = score_files(gold, pred).sentences
    assert (s.status, s.matched, s.gold_brackets, s.pred_brackets, s.words, s.correct_tags) == (0, 3, 3, 3, 3, 3)


def test_score_sentence_numbers_from_one_as_evalb():
    from fairseq_tree.evaluation.bracket_f1 import as_evalb, score_sentence

    assert score_sentence(as_evalb(T(GOLD)), as_evalb(T(GOLD))).sentence == 1
