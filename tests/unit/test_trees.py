"""The tree data model: canonical form, bracket I/O, BPE subtrees, distances, dependencies."""

import re

import pytest
from conftest import SHARED
from hypothesis import given, settings
from hypothesis import strategies as st

from fairseq_tree.trees import (
    Tree,
    TreeFormatError,
    arcs_to_heads,
    canonicalize,
    check_heads,
    distances_to_tree,
    expand_subwords,
    heads_to_arcs,
    merge_subwords,
    node_parents,
    read_conllu,
    read_tree_lines,
    read_treebank,
    strip_function_tags,
    to_brackets,
    tree_from_brackets,
    tree_to_distances,
    unlabeled_spans,
)

# ---------------------------------------------------------------- canonical form on hand-made trees

def test_canonical_form_hand_made():
    t = tree_from_brackets(
        "( (S (NP-SBJ-1 (NNP Mr.) (NNP Vinken)) (VP (VBZ is) (NP-PRD (NN chairman)))"
        " (NP (-NONE- *T*-2)) (. .)) )")
    assert t.words == ["Mr.", "Vinken", "is", "chairman", "."]
    assert t.tags == ["NNP", "NNP", "VBZ", "NN", "."]
    # NP-PRD over one word disappears (unary chain ending in a preterminal); the -NONE- NP is gone
    assert t.labels == ["NP", "VP", "S"]
    assert t.spans == [(0, 2), (2, 4), (0, 5)]
    t.check()


def test_function_tags_and_indices():
    assert strip_function_tags("NP-SBJ-1") == "NP"
    assert strip_function_tags("NP=2") == "NP"
    assert strip_function_tags("PP-LOC-CLR") == "PP"
    assert strip_function_tags("-LRB-") == "-LRB-"
    assert strip_function_tags("-NONE-") == "-NONE-"
    assert strip_function_tags("PRP$") == "PRP$"


def test_function_tags_on_one_letter_labels():
    """S-TPC, S-NOM, S-ADV (hundreds each in the PTB sample): the label is the single letter before the tag."""
    for raw in ("S-TPC", "S-TPC-2", "S-NOM", "S-ADV", "S-NOM-SBJ", "S=2", "X-ADV"):
        assert strip_function_tags(raw) == raw[0], raw
    # from ptb_sample/valid.mrg (shortened): a topicalised clause and its trace
    t = tree_from_brackets("(S (S-TPC-2 (NP-SBJ (DT The) (NNS charges)) (VP (VBD were) (VP (VBN offset)))) (, ,)"
                           " (NP-SBJ (PRP he)) (VP (VBD said) (SBAR (-NONE- 0) (S (-NONE- *T*-2)))) (. .))")
    assert t.words == ["The", "charges", "were", "offset", ",", "he", "said", "."]
    assert t.labels == ["NP", "VP", "S", "S"]
    assert t.spans == [(0, 2), (2, 4), (0, 4), (0, 8)]
    t = tree_from_brackets("(S (NP-SBJ (PRP We)) (VP (VBD tried) (S-NOM (VP (VBG going) (ADVP (RB home))))))",
                           unary="join")
    assert t.labels == ["S+VP", "VP", "S"] and t.spans == [(2, 4), (1, 4), (0, 4)]


@pytest.mark.parametrize("unary", ["lowest", "highest", "join"])
@pytest.mark.parametrize("wrapper", ["TOP", "ROOT", ""])
def test_outer_wrapper_removed(wrapper, unary):
    """`(TOP (S ..))` (wsj22), `(ROOT (S ..))` (stanza) and `( (S ..) )` (the .mrg files): the wrapper goes; it would
    otherwise survive as the root label of a unary chain with --unary highest (TOP) or join (TOP+S)."""
    t = tree_from_brackets(f"({wrapper} (S (NP (DT the) (NN dog)) (VP (VBD barked))))", unary=unary)
    assert t.words == ["the", "dog", "barked"]
    assert t.labels == ["NP", "S"] and t.spans == [(0, 2), (0, 3)]
    two = tree_from_brackets(f"({wrapper} (S (NP (PRP It)) (VP (VBD rained)))) ({wrapper} (S (NP (PRP We)) "
                             f"(VP (VBD left))))", unary=unary)
    assert two.labels == ["S", "S", "ROOT"] and two.spans == [(0, 2), (2, 4), (0, 4)]


def test_none_removal_empties_parents():
    # the SBAR holds only traces: it and its emptied children vanish, and S becomes unary -> collapsed
    t = tree_from_brackets("(S (NP (DT the) (NN dog)) (VP (VBD barked) (SBAR (-NONE- 0) (S (-NONE- *T*)))))")
    assert t.words == ["the", "dog", "barked"]
    assert t.spans == [(0, 2), (0, 3)] and t.labels == ["NP", "S"]


@pytest.mark.parametrize("unary,label", [("lowest", "VP"), ("highest", "S"), ("join", "S+VP")])
def test_unary_chain_collapse(unary, label):
    t = tree_from_brackets("(ROOT (S (VP (VB go) (ADVP (RB home)))))", unary=unary)
    assert t.words == ["go", "home"]
    assert t.labels == [label] and t.spans == [(0, 2)]


def test_brackets_in_words():
    t = tree_from_brackets("(NP (NP (NN cost)) (PRN (-LRB- -LRB-) (CD 5) (-RRB- -RRB-)) (-LCB- -LCB-) (SYM x))")
    assert t.words == ["cost", "(", "5", ")", "{", "x"]
    assert t.tags[1] == "-LRB-"
    text = to_brackets(t)
    # every bracket word is written as the treebank spells it (this read "(-LCB- {)" before: EVALB then finds
    # "Words unmatch" against the gold's -LCB-)
    assert "(-LRB- -LRB-)" in text and "(-RRB- -RRB-)" in text and "(-LCB- -LCB-)" in text
    assert tree_from_brackets(text) == t
    t = tree_from_brackets("(X (-LSB- -LSB-) (-RSB- -RSB-) (-RCB- -RCB-))")
    assert t.words == ["[", "]", "}"] and to_brackets(t) == "(X (-LSB- -LSB-) (-RSB- -RSB-) (-RCB- -RCB-))"


def test_multi_sentence_line_merged_under_root():
    t = tree_from_brackets("(ROOT (S (NP (PRP It)) (VP (VBD rained)) (. .))) (ROOT (S (NP (PRP We)) (VP (VBD left))))")
    assert t.words == ["It", "rained", ".", "We", "left"]
    assert t.labels == ["S", "S", "ROOT"]
    assert t.spans == [(0, 3), (3, 5), (0, 5)]
    assert tree_from_brackets(to_brackets(t)) == t


def test_single_word_sentence():
    t = tree_from_brackets("(ROOT (FRAG (UH Hello)))")
    assert t.words == ["Hello"] and t.labels == [] and t.spans == []
    assert tree_from_brackets(to_brackets(t)) == t
    t.check()


@pytest.mark.parametrize("bad", ["(S (NP (DT the) (NN dog))", "(S (NP (DT the)) ))", "S dog", "(S )",
                                 "(S (NP the dog))", "", "(S (-NONE- *))"])
def test_malformed_brackets_raise(bad):
    with pytest.raises(TreeFormatError):
        tree_from_brackets(bad)


def test_errors_name_file_and_line(tmp_path):
    p = tmp_path / "x.trees"
    p.write_text("(S (NP (DT a) (NN b)) (VP (VBD c)))\n(S (NP (DT a) (NN b))\n")
    with pytest.raises(TreeFormatError, match=r"x\.trees:2: "):
        list(read_tree_lines(str(p)))
    p.write_text("(S (NP (DT a) (NN b)) (VP (VBD c)))\n\n")
    with pytest.raises(TreeFormatError, match=r"x\.trees:2: empty line"):
        list(read_tree_lines(str(p)))


def test_read_multiline_mrg(tmp_path):
    p = tmp_path / "wsj_0001.mrg"
    p.write_text("( (S \n    (NP-SBJ (NNP Pierre) (NNP Vinken) )\n    (VP (MD will) \n      (VP (VB join) ))\n"
                 "    (. .) ))\n( (S (NP (PRP It)) (VP (VBD ended)) (. .) ))\n")
    trees = list(read_treebank(str(p)))
    assert [line for line, _ in trees] == [1, 6]
    assert trees[0][1].words == ["Pierre", "Vinken", "will", "join", "."]
    assert trees[0][1].labels == ["NP", "VP", "S"]


# ---------------------------------------------------------------- the whole treebank sample round-trips

def _ptb_trees(name):
    return [t for _, t in read_treebank(str(SHARED / "data" / "ptb_sample" / name))]


def test_round_trip_every_valid_tree():
    trees = _ptb_trees("valid.mrg")
    assert len(trees) == 273
    txt = (SHARED / "data" / "ptb_sample" / "valid.txt").read_text().splitlines()
    for t, words in zip(trees, txt):
        t.check()
        assert tree_from_brackets(to_brackets(t)) == t
        # leaves are the treebank words minus -NONE-, with bracket tokens unescaped
        unescape = {"-LRB-": "(", "-RRB-": ")", "-LCB-": "{", "-RCB-": "}"}
        assert t.words == [unescape.get(w, w) for w in words.split()]


_LEAF = re.compile(r"\(([^\s()]+) ([^\s()]+)\)")


@pytest.mark.parametrize("name", ["ptb_sample/train.mrg", "ptb_sample/valid.mrg", "wsj22/wsj22.mrg"])
def test_written_words_are_the_treebank_tokens(name):
    """Both bracket views (the canonical one and the EVALB view of fairseq-tree-parse) spell every word as the
    treebank does (-LCB- / -RCB- in ptb_sample/train and wsj22), so EVALB finds the same words."""
    path = SHARED / "data" / name
    if not path.is_file():
        pytest.skip(f"{path} not found")
    lines = path.read_text(encoding="utf-8").splitlines()
    for line, (_, t) in zip(lines, read_treebank(str(path))):
        tokens = [w for tag, w in _LEAF.findall(line) if tag != "-NONE-"]
        assert [w for _, w in _LEAF.findall(to_brackets(t))] == tokens
        p = tree_from_brackets(line, "join", one_word=True)
        assert [w for _, w in _LEAF.findall(p.to_brackets(one_word=True))] == tokens


def test_wsj22_reads_with_top_wrapper():
    trees = _ptb_trees("../wsj22/wsj22.mrg")
    assert len(trees) == 1700
    assert all(t.labels[-1] != "TOP" for t in trees if t.labels)
    for t in trees[:200]:
        t.check()


# ---------------------------------------------------------------- BPE subtrees (Nguyen et al., Fig. 7)

def _segment(table):
    return lambda w: table.get(w, [w])


def test_bpe_expansion_figure_7():
    t = tree_from_brackets("(S (NN He) (VP (PRP is) (V studying)))")
    b = expand_subwords(t, _segment({"studying": ["study@@", "ing"]}))
    assert b.words == ["He", "is", "study@@", "ing"]
    assert b.tags == ["NN", "PRP", "V", "V"]
    assert b.labels == ["V", "VP", "S"]
    assert b.spans == [(2, 4), (1, 4), (0, 4)]
    b.check()
    assert merge_subwords(b) == t
    assert tree_from_brackets(to_brackets(b)) == b


def test_bpe_expansion_first_word_and_three_pieces():
    t = tree_from_brackets("(S (NP (DT The) (NNS unbelievables)) (VP (VBD went)))")
    b = expand_subwords(t, _segment({"The": ["T@@", "he"], "unbelievables": ["un@@", "believ@@", "ables"]}))
    assert b.words == ["T@@", "he", "un@@", "believ@@", "ables", "went"]
    assert list(zip(b.labels, b.spans)) == [("DT", (0, 2)), ("NNS", (2, 5)), ("NP", (0, 5)), ("S", (0, 6))]
    b.check()
    assert merge_subwords(b) == t


def test_bpe_single_word_sentence_gets_a_root():
    t = tree_from_brackets("(NN playhouse)")
    b = expand_subwords(t, _segment({"playhouse": ["play@@", "house"]}))
    assert b.labels == ["NN"] and b.spans == [(0, 2)]
    b.check()


# ---------------------------------------------------------------- property tests on random trees

@st.composite
def raw_trees(draw, max_leaves=12):
    """Random n-ary raw trees (with unary chains and preterminals) as nested lists."""
    n = draw(st.integers(1, max_leaves))
    labels = st.sampled_from(["S", "NP", "VP", "PP", "SBAR", "ADJP"])
    tags = st.sampled_from(["DT", "NN", "VB", "JJ", "IN", "."])

    def build(lo, hi, depth):
        if hi - lo == 1 and (depth > 3 or draw(st.booleans())):
            return [draw(tags), f"w{lo}"]
        if hi - lo == 1:
            return [draw(labels), build(lo, hi, depth + 1)]  # a unary chain
        k = draw(st.integers(1 if depth < 4 else 2, min(4, hi - lo)))  # number of children (1 = unary)
        cuts = sorted(draw(st.sets(st.integers(lo + 1, hi - 1), min_size=k - 1, max_size=k - 1))) if k > 1 else []
        bounds = [lo] + cuts + [hi]
        return [draw(labels)] + [build(a, b, depth + 1) for a, b in zip(bounds, bounds[1:])]

    return build(0, n, 0)


@settings(max_examples=300, deadline=None)
@given(raw_trees())
def test_canonical_invariants(raw):
    t = canonicalize([raw])
    n, m = len(t.words), len(t.labels)
    assert t.words == [f"w{i}" for i in range(n)]
    assert m <= n - 1 or (n == 1 and m == 0)
    assert len(set(t.spans)) == m  # unique spans
    parents = node_parents(t.spans)  # raises if spans cross
    for i, p in enumerate(parents):  # spans nest
        if p >= 0:
            assert t.spans[p][0] <= t.spans[i][0] and t.spans[i][1] <= t.spans[p][1]
    t.check()  # every node has >= 2 children, post-order, root spans all
    assert tree_from_brackets(to_brackets(t)) == t


@st.composite
def binary_trees(draw):
    n = draw(st.integers(1, 30))

    def build(lo, hi):
        if hi - lo == 1:
            return ["X", f"w{lo}"]
        k = draw(st.integers(lo + 1, hi - 1))
        return ["N", build(lo, k), build(k, hi)]

    return canonicalize([build(0, n)])


@settings(max_examples=300, deadline=None)
@given(binary_trees())
def test_distance_tree_round_trip(t):
    d = tree_to_distances(t.spans, len(t.words))
    assert len(d) == len(t.words) - 1
    assert distances_to_tree(d) == t.spans


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(-5, 5, allow_nan=False), min_size=0, max_size=25))
def test_distances_to_tree_gives_binary_tree(d):
    spans = distances_to_tree(d)
    n = len(d) + 1
    assert len(spans) == n - 1
    t = Tree([f"w{i}" for i in range(n)], ["X"] * n, ["N"] * (n - 1), spans)
    t.check()
    # splitting again at the same distances reproduces the tree (distances of a tree have its ranks)
    assert distances_to_tree(tree_to_distances(spans, n)) == spans


def test_distances_hand_computed():
    # (S (NP the dog) (VP barked loudly))
    t = tree_from_brackets("(S (NP (DT the) (NN dog)) (VP (VBD barked) (RB loudly)))")
    assert tree_to_distances(t.spans, 4) == [1, 2, 1]
    assert distances_to_tree([1, 2, 1]) == [(0, 2), (2, 4), (0, 4)]
    assert distances_to_tree([3, 2, 1]) == [(2, 4), (1, 4), (0, 4)]  # right-branching
    # ties: the leftmost maximum splits first
    assert distances_to_tree([1, 1, 1]) == [(2, 4), (1, 4), (0, 4)]


def test_unlabeled_spans():
    t = tree_from_brackets("(S (NP (DT the) (NN dog)) (VP (VBD barked) (RB loudly)))")
    assert unlabeled_spans(t) == {(0, 2), (2, 4), (0, 4)}
    assert unlabeled_spans(t, include_root=False) == {(0, 2), (2, 4)}


# ---------------------------------------------------------------- dependencies

def test_heads_arcs_round_trip():
    heads = [2, 0, 2, 3]
    arcs = heads_to_arcs(heads)
    assert arcs == [(2, 1), (0, 2), (2, 3), (3, 4)]
    assert arcs_to_heads(reversed(arcs), 4) == heads
    with pytest.raises(ValueError, match="two heads"):
        arcs_to_heads([(0, 1), (1, 2), (1, 2)], 2)
    with pytest.raises(ValueError, match="without a head"):
        arcs_to_heads([(0, 1)], 2)
    with pytest.raises(ValueError, match="cycle"):
        check_heads([0, 3, 2])
    with pytest.raises(ValueError, match="one root"):
        check_heads([0, 0])


CONLLU_MWT = (
    "# sent_id = 1\n"
    "# text = Don't go.\n"
    "1-2\tDon't\t_\t_\t_\t_\t_\t_\t_\t_\n"
    "1\tDo\tdo\tAUX\tVBP\t_\t3\taux\t_\t_\n"
    "2\tn't\tnot\tPART\tRB\t_\t3\tneg\t_\t_\n"
    "3\tgo\tgo\tVERB\tVB\t_\t0\troot\t_\t_\n"
    "3.1\tgone\t_\tVERB\t_\t_\t_\t_\t3:conj\t_\n"
    "4\t.\t.\tPUNCT\t.\t_\t3\tpunct\t_\t_\n"
    "\n"
    "1\tHi\thi\tINTJ\t_\t_\t0\troot\t_\t_\n"
    "\n"
)


def test_read_conllu_skips_multiword_tokens_and_empty_nodes(tmp_path):
    """CoNLL-U `1-2` range lines (multi-word tokens) and `3.1` empty nodes are not words; XPOS `_` falls back
    to UPOS."""
    p = tmp_path / "x.conllu"
    p.write_text(CONLLU_MWT, encoding="utf-8")
    a, b = list(read_conllu(str(p)))
    assert a.words == ["Do", "n't", "go", "."] and a.tags == ["VBP", "RB", "VB", "."]
    assert a.heads == [3, 3, 0, 3] and a.relations == ["aux", "neg", "root", "punct"]
    assert b.words == ["Hi"] and b.tags == ["INTJ"] and b.heads == [0] and b.relations == ["root"]


@pytest.mark.parametrize("bad_line,got", [
    ("2\tthere\tthere\tADV\tRB\t_\t1", 7),  # HEAD present, DEPREL missing
    ("2 there there ADV RB _ 1 dep _ _", 1),  # spaces instead of tabs
], ids=["seven_columns", "space_separated"])
def test_read_conllu_column_check(tmp_path, bad_line, got):
    p = tmp_path / "x.conllu"
    p.write_text("# sent_id = 1\n1\tHi\thi\tINTJ\tUH\t_\t0\troot\t_\t_\n" + bad_line + "\n\n", encoding="utf-8")
    with pytest.raises(TreeFormatError, match=rf"x\.conllu:3: expected 10 tab-separated columns, got {got}$"):
        list(read_conllu(str(p)))


def test_read_conllu_aligned_with_trees():
    deps = list(read_conllu(str(SHARED / "data" / "ptb_sample" / "valid.conllu")))
    trees = _ptb_trees("valid.mrg")
    assert len(deps) == len(trees) == 273
    for d, t in zip(deps, trees):
        assert d.tags == t.tags
        assert len(d.heads) == len(t.words)
