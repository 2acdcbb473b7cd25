"""Unsupervised-parsing evaluation: gold records over words, UF1, label recall, UAS/UUAS, baselines (calibrated
against eval_protocol.md), masked-word perplexity, CoNLL-U / bracket writers and the PNG plots."""

import math
import os

import nltk
import pytest
import torch
import torch.nn.functional as F
from conftest import BIN, SHARED
from fairseq.data import Dictionary
from torch import nn

from fairseq_tree.evaluation.plotting import plot_dependency, plot_prior_layers, plot_tree, tree_layout
from fairseq_tree.evaluation.unsupervised import (
    GoldSentence,
    attachment,
    balanced,
    baseline_scores,
    evaluate,
    label_recall,
    left_branching,
    left_chain_heads,
    masked_word_perplexity,
    random_tree,
    read_gold,
    right_branching,
    right_chain_heads,
    score_files,
    spans_to_brackets,
    uf1,
    write_brackets,
    write_conllu,
)
from fairseq_tree.models.induced_structure import InducedStructure
from fairseq_tree.trees import TreeFormatError, read_conllu, tree_from_brackets

# two multi-line trees: punctuation inside constituents, a unary chain SBAR -> S -> VP, a one-word tree
MRG = """(S
  (NP (NP (DT the) (NN dog)) (, ,)
      (SBAR (WDT which) (VBD barked)) (, ,))
  (VP (VBD ran))
  (. .))
( (S (NP-SBJ (PRP I)) (VP (VBD said) (SBAR (-NONE- 0) (S (VP (TO to) (VP (VB go) (NP (-NONE- *T*))))))) (. .)) )
(NP (NN Yes) (. !))
"""

# tokens of the trees above (-NONE- removed); sentence 1: "which" is headed by a comma, the comma by "dog"
CONLLU = """# sent_id = 1
1\tthe\t_\tDT\tDT\t_\t2\tdep\t_\t_
2\tdog\t_\tNN\tNN\t_\t7\tdep\t_\t_
3\t,\t_\t,\t,\t_\t2\tdep\t_\t_
4\twhich\t_\tWDT\tWDT\t_\t3\tdep\t_\t_
5\tbarked\t_\tVBD\tVBD\t_\t2\tdep\t_\t_
6\t,\t_\t,\t,\t_\t2\tdep\t_\t_
7\tran\t_\tVBD\tVBD\t_\t0\troot\t_\t_
8\t.\t_\t.\t.\t_\t7\tdep\t_\t_

1\tI\t_\tPRP\tPRP\t_\t2\tdep\t_\t_
2\tsaid\t_\tVBD\tVBD\t_\t0\troot\t_\t_
3\tto\t_\tTO\tTO\t_\t4\tdep\t_\t_
4\tgo\t_\tVB\tVB\t_\t2\tdep\t_\t_
5\t.\t_\t.\t.\t_\t2\tdep\t_\t_

1\tYes\t_\tNN\tNN\t_\t0\troot\t_\t_
2\t!\t_\t.\t.\t_\t1\tdep\t_\t_
"""


@pytest.fixture
def gold(tmp_path):
    (tmp_path / "g.mrg").write_text(MRG)
    (tmp_path / "g.conllu").write_text(CONLLU)
    return read_gold(str(tmp_path / "g.mrg"), str(tmp_path / "g.conllu"))


# ------------------------------------------------------------------------------------------- gold records
def test_gold_records_remove_punctuation_and_recompute_spans(gold):
    g0, g1, g2 = gold
    assert g0.raw_words == ["the", "dog", "which", "barked", "ran"] and g0.line == 1 and g0.index == 0
    # NP (the dog , which barked ,) shrinks to (0, 4); S spans the 5 words
    assert g0.spans == [(0, 2), (2, 4), (0, 4), (0, 5)]
    assert sorted(g0.labeled) == sorted([(0, 2, "NP"), (2, 4, "SBAR"), (0, 4, "NP"), (0, 5, "S")])
    # the chain SBAR -> S -> VP over "to go" counts once per label; VP (go) covers one word: gone
    assert g1.words == ["i", "said", "to", "go"] and g1.line == 6
    assert g1.spans == [(2, 4), (1, 4), (0, 4)]
    assert sorted(g1.labeled) == sorted([(2, 4, "SBAR"), (2, 4, "S"), (2, 4, "VP"), (1, 4, "VP"), (0, 4, "S")])
    assert g2.words == ["yes"] and g2.spans == [] and g2.labeled == []


def test_gold_heads_drop_punctuation_and_climb(gold):
    # "which" -> "," (dropped) -> "dog": attached to "dog" (kept word 2); "dog" -> "ran" is kept word 5
    assert gold[0].heads == [2, 5, 2, 2, 0]
    assert gold[1].heads == [2, 0, 4, 2]
    assert gold[2].heads == [0]


def test_conllu_misalignment_names_file_and_sentence(tmp_path):
    (tmp_path / "g.mrg").write_text(MRG)
    (tmp_path / "bad.conllu").write_text(CONLLU.replace("\tsaid\t", "\tsays\t"))
    with pytest.raises(TreeFormatError, match=r"bad\.conllu.*sentence 2 .*g\.mrg:6.*token 2"):
        read_gold(str(tmp_path / "g.mrg"), str(tmp_path / "bad.conllu"))
    (tmp_path / "short.conllu").write_text(CONLLU.split("\n\n")[0] + "\n")
    with pytest.raises(TreeFormatError, match=r"short\.conllu ends before sentence 2"):
        read_gold(str(tmp_path / "g.mrg"), str(tmp_path / "short.conllu"))


# ------------------------------------------------------------------------------------------------ scores
def test_uf1_hand_computed(gold):
    # sentence 1: gold {(0,2),(2,4),(0,4)}; prediction {(0,2),(3,5)} (+ root, single words ignored):
    #   P = 1/2, R = 1/3, F1 = 2/5.  sentence 2: gold {(2,4),(1,4)}, prediction right-branching {(2,4),(1,4)}:
    #   F1 = 1.  sentence 3 (one word) is skipped.
    pred = [[(0, 2), (3, 5), (0, 5), (4, 5)], right_branching(4), []]
    r = uf1(gold, pred)
    assert r["sentences"] == 2 and r["skipped"] == 1
    assert r["sentence_f1"] == pytest.approx(100 * (2 / 5 + 1) / 2)
    # corpus: overlap 3, predicted 4, gold 5 -> P = 3/4, R = 3/5, F1 = 2/3
    assert r["corpus_precision"] == pytest.approx(75.0) and r["corpus_recall"] == pytest.approx(60.0)
    assert r["corpus_f1"] == pytest.approx(200 / 3)
    # both sets empty -> 1 (a two-word sentence); one empty -> 0
    two = GoldSentence(words=["a", "b"], raw_words=["a", "b"], tags=["DT", "NN"], spans=[(0, 2)], labeled=[])
    assert uf1([two], [[(0, 2)]])["sentence_f1"] == 100.0
    assert uf1(gold[1:2], [[(0, 4)]])["sentence_f1"] == 0.0
    with pytest.raises(ValueError, match="out of range"):
        uf1(gold, [[(0, 6)], [], []])


def test_label_recall_hand_computed(gold):
    pred = [[(0, 2), (3, 5), (0, 5)], [(2, 4), (0, 4)], []]
    r = label_recall(gold, pred)
    # NP: (0,2) yes, (0,4) no -> 50; SBAR: (2,4) no in sentence 1, yes in sentence 2 -> 50; S (2,4) yes;
    # VP: (2,4) yes, (1,4) no -> 50. Whole-sentence spans are not counted.
    assert {k: (v["matched"], v["gold"]) for k, v in r.items()} == {
        "NP": (1, 2), "SBAR": (1, 2), "VP": (1, 2), "S": (1, 1)}
    assert r["NP"]["recall"] == 50.0 and r["S"]["recall"] == 100.0
    with_root = label_recall(gold, pred, include_sentence_span=True)
    assert (with_root["S"]["matched"], with_root["S"]["gold"]) == (3, 3)


def test_uas_uuas_four_words():
    gold_heads = [[2, 0, 2, 3]]
    # w1 -> 2 right; w2 root right; w3 -> 4 wrong, but {3,4} is a gold edge; w4 -> 2 wrong and {2,4} is not
    r = attachment(gold_heads, [[2, 0, 4, 2]])
    assert r["uas"] == 50.0 and r["uuas"] == 75.0 and r["words"] == 4
    # a predicted root edge {i, 0} only matches the gold root: w1 root is wrong even undirected
    r = attachment(gold_heads, [[0, 1, 2, 3]])
    assert r["uas"] == 50.0 and r["uuas"] == 75.0
    with pytest.raises(ValueError, match="sentence 0"):
        attachment(gold_heads, [[0, 1, 2]])


def test_uuas_counts_each_gold_edge_once():
    # heads that are not a tree: words 1 and 2 head each other. Gold edges {1,2} {2,root}; predicted {1,2} twice.
    # As edge sets UUAS = 1/2 (crediting {1,2} once per word gave 100 with UAS 50)
    r = attachment([[2, 0]], [[2, 1]])
    assert (r["uas"], r["uuas"]) == (50.0, 50.0)
    assert (r["uas_correct"], r["uuas_correct"]) == (1, 1)
    # the validation counts of the tree_induction task use the same rule
    from types import SimpleNamespace

    from fairseq_tree.tasks.tree_induction import score_batch

    g = GoldSentence(words=["a", "b"], raw_words=["a", "b"], tags=["DT", "NN"], spans=[(0, 2)], labeled=[],
                     heads=[2, 0])
    out = score_batch(SimpleNamespace(spans=[[(0, 2)]], heads=[[2, 1]]), [g])
    assert (out["uas_correct"], out["uuas_correct"], out["dep_total"]) == (1, 1, 2)
    # and the bracket counts: gold {(0,2), (2,4)}, predicted {(0,2), (1,4)} (the sentence's own span left out):
    # 1 of 2 right each way, F1 0.5; heads gold [2,0,4,2], predicted [2,0,2,3]: words 1, 2 right; undirected
    # also {3,4}
    g4 = GoldSentence(words=list("abcd"), raw_words=list("abcd"), tags=["DT", "NN", "VB", "NN"],
                      spans=[(0, 2), (2, 4), (0, 4)], labeled=[], heads=[2, 0, 4, 2])
    out = score_batch(SimpleNamespace(spans=[[(0, 2), (1, 4), (0, 4)]], heads=[[2, 0, 2, 3]]), [g4])
    assert out == dict(f1_sum=0.5, f1_count=1, tp=1, pred=2, gold=2, uas_correct=2, uuas_correct=3, dep_total=4)


def test_evaluate_from_induced_structure(gold):
    ind = InducedStructure(lengths=torch.tensor([5, 4, 1]), spans=[right_branching(5), right_branching(4), []],
                           heads=[right_chain_heads(5), right_chain_heads(4), right_chain_heads(1)])
    r = evaluate(gold, ind.spans, ind.heads)
    # sentence 1: right-branching {(3,5),(2,5),(1,5)} vs {(0,2),(2,4),(0,4)}: F1 0; sentence 2: F1 1
    assert r["uf1"]["sentence_f1"] == 50.0
    # heads: s1 gold [2,5,2,2,0] vs [2,3,4,5,0]: w1, w5 right; undirected also {2,3}: 3/5.
    # s2 gold [2,0,4,2] vs [2,3,4,0]: w1, w3 right, nothing more undirected; s3: 1/1.  UAS 5/10, UUAS 6/10
    assert r["attachment"]["uas"] == 50.0 and r["attachment"]["uuas"] == 60.0
    assert set(r["label_recall"]) == {"NP", "SBAR", "S", "VP"}


def test_evaluate_refuses_heads_against_a_gold_without_them():
    with_heads = GoldSentence(words=["a", "b"], raw_words=["a", "b"], tags=["DT", "NN"], spans=[(0, 2)],
                              labeled=[], heads=[2, 0])
    without = GoldSentence(words=["a", "b"], raw_words=["a", "b"], tags=["DT", "NN"], spans=[(0, 2)], labeled=[])
    for gold in ([without], [with_heads, without]):  # one sentence without heads is enough
        with pytest.raises(ValueError, match="the gold has no heads"):
            evaluate(gold, pred_heads=[[2, 0]] * len(gold))
    assert evaluate([with_heads], pred_heads=[[2, 0]])["attachment"]["uas"] == 100.0


def test_score_files_counts_empty_predictions(tmp_path):
    mrg, pred = tmp_path / "g.mrg", tmp_path / "p.txt"
    mrg.write_text("(S (NP (DT the) (NN cat)) (VP (VBD sat)))\n(S (NP (DT a) (NN dog)) (VP (VBD ran)))\n",
                   encoding="utf-8")
    pred.write_text("(S the (X cat sat))\n(S (X a dog) ran)\n", encoding="utf-8")
    r = score_files(str(mrg), str(pred))
    # 1: {(1,3)} vs gold {(0,2)}: F1 0; 2: {(0,2)}: F1 1 (the sentence span left out); nothing blank
    assert (r["uf1"], r["empty_predictions"], r["scored_sentences"]) == (50.0, 0, 2)
    pred.write_text("\n(S (X a dog) ran)\n", encoding="utf-8")  # nothing predicted for the first: F1 0, counted
    r = score_files(str(mrg), str(pred))
    assert (r["uf1"], r["empty_predictions"], r["scored_sentences"]) == (50.0, 1, 2)


def test_score_files_needs_the_gold_dependencies_for_heads(tmp_path):
    mrg, pred = tmp_path / "g.mrg", tmp_path / "p.conllu"
    mrg.write_text("(S (NP (DT the) (NN cat)) (VP (VBD sat)))\n", encoding="utf-8")
    pred.write_text("1\tthe\t_\t_\t_\t_\t2\t_\t_\t_\n2\tcat\t_\t_\t_\t_\t3\t_\t_\t_\n3\tsat\t_\t_\t_\t_\t0\t_\t_\t_\n\n",
                    encoding="utf-8")
    with pytest.raises(ValueError, match=r"UAS / UUAS need the gold dependencies \(--gold-dep\)"):
        score_files(str(mrg), pred_dep=str(pred))


def test_baseline_trees_small():
    assert left_branching(4) == [(0, 2), (0, 3), (0, 4)]
    assert right_branching(4) == [(2, 4), (1, 4), (0, 4)]
    assert balanced(5) == [(0, 2), (0, 3), (3, 5), (0, 5)]  # ceil: 3 | 2, then 2 | 1
    assert balanced(5, "floor") == [(0, 2), (3, 5), (2, 5), (0, 5)]  # floor: 2 | 3, then 1 | 2
    assert left_chain_heads(3) == [0, 1, 2] and right_chain_heads(3) == [2, 3, 0]
    import numpy as np

    t = random_tree(7, np.random.RandomState(0))
    assert len(t) == 6 and t[-1] == (0, 7) and t == random_tree(7, np.random.RandomState(0))


@pytest.mark.parametrize("path,expected", [
    ("wsj22/wsj22.mrg", (1700, 8.5, 38.3, 21.1)),
    ("ptb_sample/valid.mrg", (273, 7.8, 40.9, 22.4)),
])
def test_baselines_reproduce_eval_protocol(path, expected):
    f = SHARED / "data" / path
    if not f.is_file():
        pytest.skip(f"{f} not found")
    gold = read_gold(str(f))
    n, left, right, bal = expected
    assert len(gold) == n
    r = baseline_scores(gold, seeds=(0,))
    assert round(r["left"]["sentence_f1"], 1) == left
    assert round(r["right"]["sentence_f1"], 1) == right
    assert round(r["balanced"]["sentence_f1"], 1) == bal
    # the other split convention does not reproduce the table (why BALANCED_SPLIT is "ceil")
    floor = uf1(gold, [balanced(len(g), "floor") for g in gold])
    assert round(floor["sentence_f1"], 1) != bal
    assert left < r["random"]["sentence_f1"] < right


def test_gold_heads_align_on_shared_data():
    mrg, conllu = SHARED / "data" / "ptb_sample" / "valid.mrg", SHARED / "data" / "ptb_sample" / "valid.conllu"
    if not conllu.is_file():
        pytest.skip(f"{conllu} not found")
    gold = read_gold(str(mrg), str(conllu))
    assert all(len(g.heads) == len(g.words) for g in gold)
    assert all(0 <= h <= len(g.words) for g in gold for h in g.heads)
    r = baseline_scores(gold, seeds=())
    assert 0 < r["left_chain"]["uas"] < r["left_chain"]["uuas"]


# ------------------------------------------------------------------------------------- masked perplexity
class IdentityLM(nn.Module):
    """Predicts its input token with logit ``scale`` (0 elsewhere): at a <mask> position it predicts <mask>."""

    def __init__(self, vocab: int, scale: float = 10.0):
        super().__init__()
        self.vocab = vocab
        self.scale = nn.Parameter(torch.tensor(scale))

    def forward(self, src_tokens, src_lengths=None, masked_tokens=None, features_only=False):
        logits = F.one_hot(src_tokens, self.vocab).float() * self.scale
        return (logits[masked_tokens] if masked_tokens is not None else logits), {}


class ContextLM(nn.Module):
    """Logits from the left and right neighbours and the mean of the sentence's non-pad tokens."""

    def __init__(self, vocab: int, pad: int, d: int = 8):
        super().__init__()
        torch.manual_seed(0)
        self.emb, self.pad = nn.Embedding(vocab, d), pad
        self.left, self.right, self.ctx = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)

    def forward(self, src_tokens, src_lengths=None, masked_tokens=None, features_only=False):
        x = self.emb(src_tokens)
        keep = (src_tokens != self.pad).unsqueeze(-1).float()
        mean = (x * keep).sum(1, keepdim=True) / keep.sum(1, keepdim=True)
        h = self.left(torch.roll(x, 1, 1)) + self.right(torch.roll(x, -1, 1)) + self.ctx(mean)
        logits = h @ self.emb.weight.t()
        return (logits[masked_tokens] if masked_tokens is not None else logits), {}


@pytest.fixture
def dictionary():
    d = Dictionary()
    for w in "the dog cat saw a ran big".split():
        d.add_symbol(w)
    d.add_symbol("<mask>")
    return d


SENTS = [["the", "dog", "ran"], ["a", "big", "cat", "saw", "the", "dog"], ["dog"], ["the", "zebra", "ran"]]


def test_perplexity_identity_model_exact(dictionary):
    # every word is masked alone: the target's logit is 0, <mask>'s is 10, so each NLL = log(e^10 + V - 1)
    V = len(dictionary)
    r = masked_word_perplexity(IdentityLM(V), dictionary, SENTS, max_tokens=16)
    assert r["words"] == 13
    assert r["perplexity"] == pytest.approx(math.exp(10) + V - 1, rel=1e-5)
    # no words (an empty split): perplexity 1, not a division by zero
    assert masked_word_perplexity(IdentityLM(V), dictionary, [], max_tokens=16) == {"perplexity": 1.0, "nll": 0.0,
                                                                                     "words": 0}


def _slow_perplexity(model, d, sents):
    """One forward per (sentence, masked word), no padding: the protocol transcribed directly."""
    nll, n = 0.0, 0
    for s in sents:
        ids = [d.bos()] + [d.index(w) for w in s] + [d.eos()]
        for k in range(1, len(s) + 1):
            src = torch.tensor([ids])
            src[0, k] = d.index("<mask>")
            logits, _ = model(src)
            nll -= F.log_softmax(logits[0, k], -1)[ids[k]].item()
            n += 1
    return math.exp(nll / n)


@pytest.mark.parametrize("max_tokens", [1, 20, 10 ** 6])
def test_perplexity_batched_equals_one_by_one(dictionary, max_tokens):
    model = ContextLM(len(dictionary), dictionary.pad())
    model.train()
    ref = _slow_perplexity(model, dictionary, SENTS)
    # word lists and id tensors give the same result; the training mode is restored
    r = masked_word_perplexity(model, dictionary, SENTS, max_tokens=max_tokens)
    ids = [torch.tensor([dictionary.index(w) for w in s]) for s in SENTS]
    r2 = masked_word_perplexity(model, dictionary, ids, max_tokens=max_tokens)
    assert r["perplexity"] == pytest.approx(ref, rel=1e-5) and r2["perplexity"] == pytest.approx(ref, rel=1e-5)
    assert model.training


# ---------------------------------------------------------------------------------------------- writers
def test_write_conllu_roundtrip(tmp_path):
    p = tmp_path / "induced.conllu"
    words, heads = [["the", "dog", "ran"], ["yes"]], [[2, 3, 0], [0]]
    write_conllu(str(p), words, heads, tags=[["DT", "NN", "VBD"], ["UH"]])
    back = list(read_conllu(str(p)))
    assert [t.words for t in back] == words and [t.heads for t in back] == heads
    assert back[0].relations == ["dep", "dep", "root"] and back[0].tags == ["DT", "NN", "VBD"]
    assert os.listdir(tmp_path) == ["induced.conllu"]  # the temporary file was renamed


def test_write_brackets(tmp_path):
    assert spans_to_brackets([(0, 2), (0, 3)], ["w1", "w2", "w3"]) == "(S (S w1 w2) w3)"
    assert spans_to_brackets([], ["yes"]) == "(S yes)"
    words = [["a", "(", "b", "c"], ["x", "y"]]
    spans = [[(1, 3), (1, 4), (0, 4)], [(0, 2)]]
    p = tmp_path / "induced.txt"
    write_brackets(str(p), spans, words)
    lines = p.read_text().splitlines()
    assert lines == ["(S a (S (S -LRB- b) c))", "(S x y)"]
    t = nltk.Tree.fromstring(lines[0])
    assert t.leaves() == ["a", "-LRB-", "b", "c"] and t.label() == "S"
    # with preterminals the project's reader gives the spans back
    tree = tree_from_brackets(spans_to_brackets(spans[0], words[0], leaf_label="X"))
    assert tree.spans == spans[0] and tree.words == words[0]
    assert os.listdir(tmp_path) == ["induced.txt"]


# --------------------------------------------------------------------------------------------- plotting
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_tree_layout():
    pos, edges = tree_layout([(0, 2), (0, 3)], 3)
    assert pos[3] == (0.5, 1.0) and pos[4] == (1.25, 2.0)  # x = mean of its children (0.5, 2)
    assert sorted(edges) == [(3, 0), (3, 1), (4, 2), (4, 3)]


def test_plots_write_png(tmp_path):
    words = ["the", "dog", "ran", "home"]
    prior = torch.rand(3, 4, 4)
    dep = torch.softmax(torch.randn(4, 5), -1)
    outs = [plot_prior_layers(prior, words, str(tmp_path / "prior.png")),
            plot_prior_layers({"prior_layer0": prior[0], "prior_layer1": prior[1]}, words, str(tmp_path / "p2.png")),
            plot_dependency(dep, words, str(tmp_path / "dep.png")),
            plot_tree([(0, 2), (2, 4), (0, 4)], words, str(tmp_path / "tree.png")),
            plot_prior_layers(prior[:1], words, str(tmp_path / "one.png"))]  # one panel: a grid of one
    for path in outs:
        data = open(path, "rb").read()
        assert len(data) > 100 and data[:8] == PNG_MAGIC
    with pytest.raises(ValueError, match="expected"):
        plot_dependency(torch.rand(3, 3), words, str(tmp_path / "bad.png"))


def test_plots_leave_the_processs_backend_and_pyplots_figures_as_they_were(tmp_path):
    """A notebook user's process (here: backend pdf, pyplot imported) after every figure the package draws: the
    backend unchanged, pyplot's figure list empty, each PNG written (its own process: backends are per process)."""
    import subprocess
    import sys

    code = f"""
import matplotlib
matplotlib.use("pdf")
import matplotlib.pyplot as plt
import torch
from fairseq_tree.cli.parse import plot_attention
from fairseq_tree.cli.report_curves import plot
from fairseq_tree.cli.report_tree2seq import plot as plot_bleu
from fairseq_tree.evaluation.plotting import plot_corpus_size, plot_dependency, plot_prior_layers, plot_tree
w, d = ["a", "b", "c"], {str(tmp_path)!r}
plot_prior_layers(torch.rand(2, 3, 3), w, d + "/1.png")
plot_dependency(torch.rand(3, 4), w, d + "/2.png")
plot_tree([(0, 2), (0, 3)], w, d + "/3.png")
plot_corpus_size({{"m": [{{"sentences": 10, "uf1": [30.0], "uas": [20.0]}}]}}, d + "/4.png")
plot(["x"], [{{1: 1.0, 2: 0.5}}], "loss", d + "/5.png")
plot_bleu({{"de": [("lal", 80.0, [0.1, -0.2])]}}, d + "/6.png")
plot_attention(w, torch.rand(2, 5), ["h1", "h2"], d + "/7.png")
print(matplotlib.get_backend(), len(plt.get_fignums()))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["pdf", "0"]
    for k in range(1, 8):
        assert (tmp_path / f"{k}.png").read_bytes()[:8] == PNG_MAGIC


def test_parser_quality_right_branching_hand_computed(tmp_path):
    """fairseq-tree-parser-quality --parser right: sentence 1 gold {NP (0,2), VP (2,4)}, right-branching {(1,4),
    (2,4)}: F1 50; sentence 2 (the final '.' dropped by the rules) gold {VP (1,4), NP (2,4)}, predicted over the 5
    tokens {(1,5), (2,5), (3,5)} -> over the words {(1,4), (2,4)}: F1 100. UF1 75, corpus F1 3/4."""
    import json

    from conftest import run_command

    gold = tmp_path / "gold.mrg"
    gold.write_text("(S (NP (DT the) (NN dog)) (VP (VBD ran) (ADVP (RB fast))))\n"
                    "(S (NP (PRP I)) (VP (VBD saw) (NP (DT a) (NN cat))) (. .))\n")
    out = run_command(BIN / "fairseq-tree-parser-quality", "--parser", "right", "--gold", gold,
                      "--out", tmp_path / "out").stdout
    r = json.loads(out.strip().splitlines()[-1])
    assert r["sentences"] == 2 and r["f1"] is None
    assert r["uf1"] == pytest.approx(75.0) and r["corpus_f1"] == pytest.approx(75.0)
    assert (tmp_path / "out" / "gold.trees").read_text().splitlines()[1] == \
        "(X (PRP I) (X (VBD saw) (X (DT a) (X (NN cat) (. .)))))"


@pytest.mark.parametrize("shape,expected", [
    ("right", "(X (DT the) (X (JJ big) (X (NN dog) (X (VBD ran) (RB fast)))))"),
    ("left", "(X (X (X (X (DT the) (JJ big)) (NN dog)) (VBD ran)) (RB fast))"),
    # floor halving: 5 words -> 2 + 3, then 3 -> 1 + 2
    ("balanced", "(X (X (DT the) (JJ big)) (X (NN dog) (X (VBD ran) (RB fast))))"),
])
def test_make_trivial_trees_shapes_keep_words_tags_and_empty_lines(tmp_path, shape, expected):
    """fairseq-tree-trivial-trees: the tree2seq control's trees, written by hand for 5 words; the empty line of
    a skipped pair stays empty (the corpus stays aligned)."""

    from conftest import run_command

    src = tmp_path / "in.trees"
    src.write_text("(ROOT (S (NP (DT the) (JJ big) (NN dog)) (VP (VBD ran) (ADVP (RB fast)))))\n\n"
                   "(ROOT (NP (NN dog)))\n")
    out = tmp_path / "out.trees"
    run_command(BIN / "fairseq-tree-trivial-trees", src, out, "--shape", shape)
    lines = out.read_text().split("\n")
    assert lines[0] == expected
    assert lines[1] == "" and len(lines) == 4 and lines[3] == ""
