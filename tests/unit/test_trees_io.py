"""The trees package's shared helpers: the one atomic write, the one CoNLL-U writer (round trip through
``read_conllu`` on the PTB sample), the one bracket writer, the two punctuation sets."""

import os
import stat

import pytest
from conftest import SHARED

from fairseq_tree.trees import (
    EVALB_PUNCT_TAGS,
    UPOS_PUNCT_TAGS,
    atomic_copy,
    atomic_path,
    atomic_write,
    atomic_write_text,
    bracket_line,
    labeled_to_brackets,
    ptb_to_upos,
    read_conllu,
    spans_to_brackets,
    tree_from_brackets,
    write_conllu,
)

PTB = SHARED / "data" / "ptb_sample"


def test_atomic_write_replaces_whole_file(tmp_path):
    p = tmp_path / "out.txt"
    p.write_text("old\n")
    atomic_write_text(str(p), "new\n")
    assert p.read_text() == "new\n"
    assert os.listdir(tmp_path) == ["out.txt"]


def test_atomic_write_leaves_no_partial_file_on_error(tmp_path):
    p = tmp_path / "out.txt"
    with pytest.raises(RuntimeError):
        with atomic_write(str(p)) as f:
            f.write("half")
            raise RuntimeError("interrupted")
    assert os.listdir(tmp_path) == []  # neither the target nor the temporary file
    p.write_text("old\n")
    with pytest.raises(RuntimeError):
        with atomic_path(str(p)) as tmp:
            open(tmp, "w").write("half")
            raise RuntimeError("interrupted")
    assert os.listdir(tmp_path) == ["out.txt"] and p.read_text() == "old\n"


def test_atomic_write_has_open_permissions_and_copies(tmp_path):
    """mkstemp's 0600 is not kept: the file gets what ``open(path, "w")`` gives under the umask."""
    open(tmp_path / "plain", "w").close()
    atomic_write_text(str(tmp_path / "a"), "x")
    atomic_copy(str(tmp_path / "a"), str(tmp_path / "b"))
    expected = stat.S_IMODE(os.stat(tmp_path / "plain").st_mode)
    for name in "ab":
        assert stat.S_IMODE(os.stat(tmp_path / name).st_mode) == expected
    assert (tmp_path / "b").read_text() == "x"


def test_write_conllu_hand_made(tmp_path):
    p = tmp_path / "x.conllu"
    write_conllu(str(p), [["Hi", "there"], ["Yes"]], [[0, 1], [0]], [["UH", "RB"], ["UH"]],
                 upos=[["INTJ", "ADV"], ["INTJ"]], relations=[["root", "advmod"], ["root"]], blank_after_last=True)
    assert p.read_text() == ("# sent_id = 1\n# text = Hi there\n"
                             "1\tHi\t_\tINTJ\tUH\t_\t0\troot\t_\t_\n2\tthere\t_\tADV\tRB\t_\t1\tadvmod\t_\t_\n\n"
                             "# sent_id = 2\n# text = Yes\n1\tYes\t_\tINTJ\tUH\t_\t0\troot\t_\t_\n\n")
    write_conllu(str(p), [["Yes"]], [[0]])  # defaults: tags "_", root/dep, no blank line after the last sentence
    assert p.read_text() == "# sent_id = 1\n# text = Yes\n1\tYes\t_\t_\t_\t_\t0\troot\t_\t_\n"


@pytest.mark.skipif(not (PTB / "valid.conllu").exists(), reason="no shared PTB sample")
@pytest.mark.parametrize("blank_after_last", [False, True])
def test_write_conllu_round_trips_the_ptb_sample(tmp_path, blank_after_last):
    gold = list(read_conllu(str(PTB / "valid.conllu")))
    p = tmp_path / "rt.conllu"
    write_conllu(str(p), [d.words for d in gold], [d.heads for d in gold], [d.tags for d in gold],
                 relations=[d.relations for d in gold], blank_after_last=blank_after_last)
    back = list(read_conllu(str(p)))
    assert [(d.words, d.tags, d.heads, d.relations) for d in back] == \
        [(d.words, d.tags, d.heads, d.relations) for d in gold]


def test_bracket_line_nests_chains_in_the_order_given():
    leaves = ["(PRP it)", "(VBZ is)"]
    assert bracket_line(leaves, [(0, 2, "S"), (0, 1, "NP"), (1, 2, "VP"), (0, 2, "ROOT")]) == \
        "(S (ROOT (NP (PRP it)) (VP (VBZ is))))"
    assert spans_to_brackets([(0, 2)], ["(", "x", "}"]) == "(S (S -LRB- x) -RCB-)"
    assert spans_to_brackets([], ["a", "b"], "X", "W") == "(X (W a) (W b))"


def test_labeled_brackets_split_joined_chains():
    t = tree_from_brackets("(S (VP (NP (PRP it)) (VBZ is)))", "join", one_word=True)
    assert t.labeled_spans(one_word=True) == [(0, 1, "NP"), (0, 2, "S+VP")]
    assert t.to_brackets(one_word=True) == "(S (VP (NP (PRP it)) (VBZ is)))"
    assert labeled_to_brackets(["a"], [""], [(0, 1, "X")]) == "(X (X a))"  # an empty tag is written X


def test_the_two_punctuation_sets():
    """EVALB (COLLINS.prm DELETE_LABEL, and UAS/LAS without punctuation) keeps brackets as words; the UPOS
    conversion for stanza's tagger maps them to PUNCT."""
    assert EVALB_PUNCT_TAGS == {",", ":", "``", "''", "."}
    assert UPOS_PUNCT_TAGS - EVALB_PUNCT_TAGS == {"-LRB-", "-RRB-", "-LCB-", "-RCB-"}
    assert [ptb_to_upos(t) for t in ["-LRB-", ",", "NN", "HYPH", "???"]] == ["PUNCT", "PUNCT", "NOUN", "PUNCT", "X"]


def test_tree_views_hand_made():

    t = tree_from_brackets("(S (NP (DT The) (NN cat)) (VP (VBD sat) (PP (IN on) (NP (PRP it)))) (. .))")
    assert t.labeled_spans() == [(0, 2, "NP"), (3, 5, "PP"), (2, 5, "VP"), (0, 6, "S")]
    assert t.distances() == [1, 3, 2, 1, 3]
    assert t.to_brackets() == "(S (NP (DT The) (NN cat)) (VP (VBD sat) (PP (IN on) (PRP it))) (. .))"
    assert t.parents() == [3, 2, 3, -1]


def test_one_tree_type_evalb_view_hand_made():
    """The EVALB view of the one Tree: one-word constituents (chains joined top first) beside the canonical nodes,
    merged in post-order; the canonical view of the same tree is unchanged."""

    text = "(TOP (S (NP-SBJ (PRP It)) (VP (VBZ is) (ADJP (JJ fine))) (S (VP (VB go))) (. .)))"
    t = tree_from_brackets(text, "join", one_word=True)
    assert t.word_phrases == ["NP", None, "ADJP", "S+VP", None]
    assert t.labeled_spans() == [(1, 3, "VP"), (0, 5, "S")]
    assert t.labeled_spans(one_word=True) == [(0, 1, "NP"), (2, 3, "ADJP"), (1, 3, "VP"), (3, 4, "S+VP"), (0, 5, "S")]
    assert t.to_brackets(one_word=True) == "(S (NP (PRP It)) (VP (VBZ is) (ADJP (JJ fine))) (S (VP (VB go))) (. .))"
    canonical = tree_from_brackets(text, "join")
    assert (canonical.labels, canonical.spans, canonical.word_phrases) == (t.labels, t.spans, None)
    # the other chain rules act on one-word chains too
    assert tree_from_brackets(text, "lowest", one_word=True).word_phrases == ["NP", None, "ADJP", "VP", None]
    assert tree_from_brackets(text, "highest", one_word=True).word_phrases == ["NP", None, "ADJP", "S", None]
    # wrappers: removed over a phrase, kept over a lone preterminal; a bare preterminal gets ROOT
    assert tree_from_brackets("(TOP (NN x))", "join", one_word=True).labeled_spans(one_word=True) == [(0, 1, "TOP")]
    assert tree_from_brackets("(NN x)", "join", one_word=True).labeled_spans(one_word=True) == [(0, 1, "ROOT")]
    assert tree_from_brackets("(NN x)").labeled_spans(one_word=True) == []  # canonical: no one-word view read


def test_one_tree_type_from_labeled_spans_inverts_the_evalb_view():
    """A parser's labeled spans (any order, lengths >= 1) -> Tree -> the same spans in post-order; heads and
    relations ride along; the CoNLL-U view writes them."""
    from fairseq_tree.trees import Tree

    spans = [(0, 4, "S"), (1, 3, "VP"), (2, 3, "ADJP"), (0, 1, "NP")]
    t = Tree.from_labeled_spans(["It", "is", "fine", "."], ["PRP", "VBZ", "JJ", "."], spans, [2, 0, 2, 2],
                                ["nsubj", "root", "acomp", "punct"])
    assert (t.labels, t.spans, t.word_phrases) == (["VP", "S"], [(1, 3), (0, 4)], ["NP", None, "ADJP", None])
    assert t.labeled_spans(one_word=True) == [(0, 1, "NP"), (2, 3, "ADJP"), (1, 3, "VP"), (0, 4, "S")]
    t.check()  # the nodes of length >= 2 are in canonical form
    assert t.conllu("7")[:3] == ["# sent_id = 7", "# text = It is fine .", "1\tIt\t_\tPRP\tPRP\t_\t2\tnsubj\t_\t_"]
    with pytest.raises(ValueError, match="out of range"):
        Tree.from_labeled_spans(["a"], ["X"], [(0, 2, "S")])
    with pytest.raises(ValueError, match="no CoNLL-U view"):
        Tree(["a"], ["X"]).conllu()


def test_read_conllu_gives_trees_with_heads():
    from fairseq_tree.trees import Tree

    t = next(iter(read_conllu(str(PTB / "valid.conllu"))))
    assert isinstance(t, Tree) and t.labels == [] and t.line == 3 and len(t.heads) == len(t.words)  # first token line


def test_read_tree_lines_keeps_the_unary_rule(tmp_path):
    """A unary chain over a phrase keeps the label the rule asks for, line by line (S over VP: lowest VP,
    highest S, join S+VP)."""
    from fairseq_tree.trees.brackets import read_tree_lines

    path = tmp_path / "t.txt"
    path.write_text("(S (VP (VB go) (RB now)))\n")
    assert [t.labels for t in read_tree_lines(str(path))] == [["VP"]]
    assert [t.labels for t in read_tree_lines(str(path), unary="highest")] == [["S"]]
    assert [t.labels for t in read_tree_lines(str(path), unary="join")] == [["S+VP"]]


@pytest.mark.parametrize("text", ["(S (NP (DT a)) (", "(", "(S (NN a)) ("])
def test_an_open_bracket_at_the_end_is_a_format_error(text):
    """A line that ends on "(" (cut short) is reported as unbalanced brackets, not an IndexError."""
    from fairseq_tree.trees import TreeFormatError, tree_from_brackets

    with pytest.raises(TreeFormatError):
        tree_from_brackets(text)


def test_plain_word_undoes_every_escape():
    from fairseq_tree.trees.brackets import plain_word

    assert [plain_word(w) for w in ["-LRB-", "-RCB-", "1\\/2", "\\*", "a\\*b\\/c", "cat"]] == \
        ["(", "}", "1/2", "*", "a*b/c", "cat"]


def test_check_heads_names_the_bad_head():
    from fairseq_tree.trees.conllu import check_heads

    check_heads([2, 0, 2])
    with pytest.raises(ValueError, match="bad head 5 for word 2"):
        check_heads([0, 5])  # out of range
    with pytest.raises(ValueError, match="bad head 2 for word 2"):
        check_heads([0, 2])  # its own head
    with pytest.raises(ValueError, match="cycle through word"):
        check_heads([0, 3, 2])


def test_read_conllu_predicted_heads_need_only_be_in_range(tmp_path):
    """``trees=False`` (per-word argmax heads) takes cycles and several roots, but a head past the sentence is a
    format error naming the file and the sentence's first line; ``trees=True`` refuses the cycle."""
    from fairseq_tree.trees import TreeFormatError

    path = str(tmp_path / "pred.conllu")  # each sentence: "# sent_id", "# text", then its words
    write_conllu(path, [["a", "b", "c"], ["d", "e"]], [[2, 1, 0], [0, 0]])
    assert [t.heads for t in read_conllu(path, trees=False)] == [[2, 1, 0], [0, 0]]
    with pytest.raises(TreeFormatError, match="pred.conllu:3"):
        list(read_conllu(path))
    write_conllu(path, [["a"], ["d", "e"]], [[0], [0, 3]])
    with pytest.raises(TreeFormatError, match=r"pred.conllu:7: head out of range for 2 words"):
        list(read_conllu(path, trees=False))


def test_utf8_files_read_under_an_ascii_locale(tmp_path):
    """A cluster job under LANG=C (no UTF-8 coercion, no UTF-8 mode: Python's default encoding is ASCII) still
    reads UTF-8 CoNLL-U files and BPE codes: every open names its encoding."""
    import subprocess
    import sys

    write_conllu(str(tmp_path / "a.conllu"), [["café", "naïve"]], [[0, 1]])
    (tmp_path / "codes").write_text("#version: 0.2\nc a\nca f\ncaf é</w>\n", encoding="utf-8")
    code = ("from fairseq_tree.trees.conllu import read_conllu; from fairseq_tree.text.bpe import Segmenter\n"
            "print([t.words for t in read_conllu('a.conllu')] == [['caf\\u00e9', 'na\\u00efve']], "
            "Segmenter('codes')('caf\\u00e9') == ['caf\\u00e9'], "
            "Segmenter('codes')('caf\\u00e9s') == ['caf@@', '\\u00e9@@', 's'])")
    (tmp_path / "run.py").write_text(code, encoding="ascii")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LC_", "LANG", "PYTHONUTF8"))}
    env.update(LC_ALL="C", PYTHONCOERCECLOCALE="0", PYTHONUTF8="0", PYTHONIOENCODING="utf-8")
    out = subprocess.run([sys.executable, "run.py"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.split() == ["True"] * 3, out.stderr[-2000:]
