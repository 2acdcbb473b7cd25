"""Evaluation of unsupervised parsing (induced trees and dependencies) and of masked-word perplexity.

A library (the CLI is elsewhere): read a gold treebank into per-sentence records over the *words*, score
induced spans / heads against them, score trivial baselines with the same scorer, compute the masked-word
perplexity of Wang et al. (2019), and write induced structures as CoNLL-U / bracket files.

Words (``/work/shared/notes/eval_protocol.md``, the ON-LSTM / Tree Transformer / StructFormer scripts):
a leaf is a word when its POS tag is in :data:`fairseq_tree.data.induction_text.WORD_TAGS` (punctuation,
``$``, ``#`` and ``-NONE-`` go); gold spans are recomputed over the kept words. Predicted spans and heads are
over the kept words too (``InducedStructure`` of a model fed the normalised kept words).

Unlabeled F1 (:func:`uf1`), the exact rules:

1. per sentence, both span sets hold the *distinct* half-open spans ``(i, j)`` with ``j - i >= 2`` over the
   kept words, the whole-sentence span ``(0, n)`` removed (from gold and prediction);
2. sentences with fewer than 2 kept words are skipped (not counted anywhere);
3. per sentence ``P = |G ∩ P| / |P|``, ``R = |G ∩ P| / |G|``, ``F1 = 2PR / (P + R)``; ``F1 = 1`` when both sets
   are empty (n = 2, or a flat gold tree and a flat prediction), ``F1 = 0`` when exactly one is empty or the
   overlap is empty;
4. ``sentence_f1`` = mean of the per-sentence F1 (the papers' number); ``corpus_f1`` from the summed counts
   (micro P = Σ overlap / Σ |P|, R = Σ overlap / Σ |G|). All scores in percent.

Per-label recall (:func:`label_recall`, the papers' Table 3): every gold *node* over >= 2 kept words is one
labeled gold span (a multiset: the nodes of a unary chain, e.g. ``S -> VP``, each count with their own label,
and two nodes whose spans coincide once punctuation is removed both count); the whole-sentence span is left
out as in UF1 (``include_sentence_span=True`` keeps it); a gold node is recalled when its unlabeled span is
among the sentence's predicted spans. Corpus-level: recall(label) = recalled / total over all sentences.

Attachment (:func:`attachment`): heads are 1-based with 0 for the root, over the kept words. UAS = fraction of
words whose predicted head equals the gold head. UUAS = ``|P ∩ G| / n`` per corpus, with P and G the *sets* of
undirected edges ``{i, head(i)}`` of a sentence (the root is node 0, so a root edge ``{i, 0}`` matches only a
gold root edge) and n the number of words (= |G|: one gold edge per word; one-word sentences included). As sets,
one gold edge is credited once even when predicted heads that are not a tree give it twice (words 1 and 2
heading each other: gold ``[2, 0]``, predicted ``[2, 1]`` -> UUAS 50, UAS 50). StructFormer's evaluation
(``tree_utils.evald``) instead counts every predicted word whose undirected (word, head word) pair is in the
gold list, duplicates included, and compares lower-cased word *strings*: 100 for that example, so its UUAS of
non-tree heads (eq. 17) can exceed ours.
Gold heads of the kept words (:func:`read_gold`): a kept word whose gold head is a removed token (punctuation,
``$``: ``$ 35.2 million`` has ``$`` as head in the PTB dependency sample) is attached to its nearest kept
ancestor (0 if none), so the gold stays a tree over the kept words (possibly with several roots).

Baselines (:func:`baseline_scores`), scored with the same functions: left-branching ``((w1 w2) w3) ..``,
right-branching ``.. (w_{n-2} (w_{n-1} w_n))``, balanced (top-down, a span of length L splits after
``ceil(L / 2)`` words: :data:`BALANCED_SPLIT`, the convention that reproduces eval_protocol.md's 21.1 / 22.4),
random (syntactic distances uniform in [0, 1), split at the largest, as StructFormer's Algorithm 1; one
``numpy.random.RandomState(seed)`` per seed, drawn sentence by sentence; the score is the mean over
:data:`RANDOM_SEEDS` = 5 seeds, their standard deviation beside it). Dependency baselines: left chain (each word
headed by its left neighbour, the first word is the root) and right chain (right neighbour, last word root).
"""

from __future__ import annotations

import logging
import math
from typing import TYPE_CHECKING, Dict, Iterable, List, Optional, Sequence, Tuple, Union

import numpy as np

from fairseq_tree.evaluation.bracket_f1 import aligned, evalb_tree, fmt, percent, read_sentences

if TYPE_CHECKING:  # torch only for the annotation: the scorers run without it
    import torch

# the writers and the gold view live in the trees package; re-exported as this module's API
from fairseq_tree.trees import (  # noqa: F401
    Span,
    Tree,
    TreeFormatError,
    atomic_write_text,
    conllu_lines,
    distances_to_tree,
    post_order,
    read_conllu,
    spans_to_brackets,
    write_brackets,
    write_conllu,
)
from fairseq_tree.trees.gold import GoldSentence, gold_from_tree, project_heads, read_gold, same_token  # noqa: F401

logger = logging.getLogger("fairseq_tree.evaluation")

#: the labels of the papers' per-label recall tables (Kim et al. 2019; Wang et al. Table 3; Shen et al. Table 3)
PAPER_LABELS = ("NP", "VP", "PP", "ADJP", "SBAR", "ADVP")
#: balanced baseline: a span of length L splits after ceil(L/2) ("ceil") or floor(L/2) ("floor") words
BALANCED_SPLIT = "ceil"
RANDOM_SEEDS = (0, 1, 2, 3, 4)


# ------------------------------------------------------------------------------------------ UF1
def _check_spans(spans: Sequence[Span], n: int, k: int) -> None:
    for i, j in spans:
        if not 0 <= i < j <= n:
            raise ValueError(f"sentence {k}: predicted span {(i, j)} out of range for {n} words")


def scored_spans(spans: Iterable[Span], n: int) -> set:
    """The set UF1 compares: distinct spans of length >= 2 without the whole-sentence span."""
    return {(i, j) for i, j in spans if j - i >= 2 and (i, j) != (0, n)}


def sentence_f1(gold: set, pred: set) -> float:
    """F1 of two span sets (fractions, not percent); 1 when both are empty."""
    if not gold and not pred:
        return 1.0
    overlap = len(gold & pred)
    if overlap == 0:
        return 0.0
    p, r = overlap / len(pred), overlap / len(gold)
    return 2 * p * r / (p + r)


def uf1(gold: Sequence[GoldSentence], pred_spans: Sequence[Sequence[Span]]) -> Dict[str, float]:
    """Unlabeled F1 with the rules of the module docstring. ``pred_spans[k]`` are half-open word spans of
    sentence k (as ``InducedStructure.spans``; root and single words may be included, they are ignored).

    Returns percent scores ``sentence_f1`` (mean over scored sentences), ``corpus_f1`` / ``corpus_precision`` /
    ``corpus_recall``, and ``sentences`` (scored), ``skipped`` (fewer than 2 words).
    """
    if len(gold) != len(pred_spans):
        raise ValueError(f"{len(pred_spans)} predicted vs {len(gold)} gold sentences")
    f1_sum, overlap, n_pred, n_gold, scored = 0.0, 0, 0, 0, 0
    for k, (g, ps) in enumerate(zip(gold, pred_spans)):
        n = len(g)
        _check_spans(ps, n, k)
        if n < 2:
            continue
        G, P = scored_spans(g.spans, n), scored_spans(ps, n)
        f1_sum += sentence_f1(G, P)
        overlap += len(G & P)
        n_pred += len(P)
        n_gold += len(G)
        scored += 1
    if not scored:  # a score over nothing is no score (null), never 0.0
        logger.warning("UF1: no sentence of 2 or more words to score, reported as null")
        return {"sentence_f1": None, "corpus_f1": None, "corpus_precision": None, "corpus_recall": None,
                "sentences": 0, "skipped": len(gold)}
    prec = overlap / n_pred if n_pred else 0.0
    rec = overlap / n_gold if n_gold else 0.0
    return {"sentence_f1": 100.0 * f1_sum / scored,
            "corpus_f1": 100.0 * (2 * prec * rec / (prec + rec) if prec + rec else 0.0),
            "corpus_precision": 100.0 * prec, "corpus_recall": 100.0 * rec,
            "sentences": scored, "skipped": len(gold) - scored}


def label_recall(gold: Sequence[GoldSentence], pred_spans: Sequence[Sequence[Span]],
                 include_sentence_span: bool = False) -> Dict[str, Dict[str, float]]:
    """Per-label recall (module docstring): ``{label: {"recall": percent, "matched": m, "gold": g}}`` for
    every gold label seen (:data:`PAPER_LABELS` are the papers' columns; absent ones are simply missing)."""
    if len(gold) != len(pred_spans):
        raise ValueError(f"{len(pred_spans)} predicted vs {len(gold)} gold sentences")
    matched: Dict[str, int] = {}
    total: Dict[str, int] = {}
    for k, (g, ps) in enumerate(zip(gold, pred_spans)):
        n = len(g)
        _check_spans(ps, n, k)
        P = {(i, j) for i, j in ps if j - i >= 2}
        for i, j, label in g.labeled:
            if (i, j) == (0, n) and not include_sentence_span:
                continue
            total[label] = total.get(label, 0) + 1
            matched[label] = matched.get(label, 0) + ((i, j) in P)
    return {lab: {"recall": 100.0 * matched[lab] / total[lab], "matched": matched[lab], "gold": total[lab]}
            for lab in sorted(total, key=lambda x: (-total[x], x))}

# ----------------------------------------------------------------------------------- dependencies
def undirected_edges(heads: Sequence[int]) -> set:
    """The set of undirected edges ``{i, heads[i-1]}`` (words 1-based, 0 the root) of one sentence."""
    return {frozenset((d, h)) for d, h in enumerate(heads, 1)}


def attachment(gold_heads: Sequence[Sequence[int]], pred_heads: Sequence[Sequence[int]]) -> Dict[str, float]:
    """UAS / UUAS in percent over the kept words (rules in the module docstring: UUAS compares undirected edge
    sets), and the counts ``words``, ``uas_correct``, ``uuas_correct``."""
    if len(gold_heads) != len(pred_heads):
        raise ValueError(f"{len(pred_heads)} predicted vs {len(gold_heads)} gold sentences")
    words = uas = uuas = 0
    for k, (gh, ph) in enumerate(zip(gold_heads, pred_heads)):
        if len(gh) != len(ph):
            raise ValueError(f"sentence {k}: {len(ph)} predicted vs {len(gh)} gold heads")
        uas += sum(g == p for g, p in zip(gh, ph))
        uuas += len(undirected_edges(gh) & undirected_edges(ph))
        words += len(gh)
    return {"uas": percent(uas, words, "UAS"), "uuas": percent(uuas, words, "UUAS"), "words": words,
            "uas_correct": uas, "uuas_correct": uuas}

# -------------------------------------------------------------------------------------- baselines
def left_branching(n: int) -> List[Span]:
    """((w1 w2) w3) ..: spans (0, 2) .. (0, n) in post-order."""
    return [(0, j) for j in range(2, n + 1)]


def right_branching(n: int) -> List[Span]:
    """.. (w_{n-2} (w_{n-1} w_n)): spans (n-2, n) .. (0, n) in post-order."""
    return [(i, n) for i in range(n - 2, -1, -1)]


def balanced(n: int, split: str = BALANCED_SPLIT) -> List[Span]:
    """Top-down halving: (i, j) splits after ceil((j-i)/2) words (``split="floor"``: floor). Post-order."""
    if split not in ("ceil", "floor"):
        raise ValueError(f"split must be ceil or floor, not {split!r}")
    out: List[Span] = []
    stack = [(0, n)]
    while stack:
        i, j = stack.pop()
        if j - i < 2:
            continue
        out.append((i, j))
        half = (j - i + 1) // 2 if split == "ceil" else (j - i) // 2
        stack.extend([(i, i + half), (i + half, j)])
    return post_order(out)

TRIVIAL_SHAPES = {"right": right_branching, "left": left_branching, "balanced": balanced}


def trivial_tree(tree: "Tree", shape: str, split: str = BALANCED_SPLIT) -> "Tree":
    """``tree``'s words and POS tags under the trivial binary tree of ``shape`` (right / left / balanced, halving by
    ``split``), every node labelled ``X``: tree2seq's trivial-tree control and parser_quality.py's right-branching
    parser."""
    spans = balanced(len(tree), split) if shape == "balanced" else TRIVIAL_SHAPES[shape](len(tree))
    return Tree(tree.words, tree.tags, ["X"] * len(spans), spans)


def random_tree(n: int, rng: np.random.RandomState) -> List[Span]:
    """Binary tree from n - 1 uniform random syntactic distances (split at the largest). Post-order."""
    return distances_to_tree(rng.rand(max(n - 1, 0)).tolist()) if n >= 2 else []


def left_chain_heads(n: int) -> List[int]:
    """Each word headed by its left neighbour; word 1 is the root."""
    return list(range(n))


def right_chain_heads(n: int) -> List[int]:
    """Each word headed by its right neighbour; word n is the root."""
    return list(range(2, n + 1)) + [0] if n else []


def baseline_scores(gold: Sequence[GoldSentence], seeds: Sequence[int] = RANDOM_SEEDS,
                    balanced_split: str = BALANCED_SPLIT) -> Dict[str, Dict[str, float]]:
    """UF1 (:func:`uf1`) of the trivial trees, plus ``left_chain`` / ``right_chain`` attachment scores when the
    gold has heads. ``random`` holds the per-seed mean of every uf1 field and ``sentence_f1_std``."""
    lengths = [len(g) for g in gold]
    out: Dict[str, Dict[str, float]] = {
        "left": uf1(gold, [left_branching(n) for n in lengths]),
        "right": uf1(gold, [right_branching(n) for n in lengths]),
        "balanced": uf1(gold, [balanced(n, balanced_split) for n in lengths]),
    }
    if seeds:
        runs = []
        for seed in seeds:
            rng = np.random.RandomState(seed)
            runs.append(uf1(gold, [random_tree(n, rng) for n in lengths]))
        out["random"] = {key: float(np.mean([r[key] for r in runs])) for key in runs[0]}
        out["random"]["sentence_f1_std"] = float(np.std([r["sentence_f1"] for r in runs]))
        out["random"]["seeds"] = len(seeds)
    if gold and all(g.heads is not None for g in gold):
        heads = [g.heads for g in gold]
        out["left_chain"] = attachment(heads, [left_chain_heads(n) for n in lengths])
        out["right_chain"] = attachment(heads, [right_chain_heads(n) for n in lengths])
    return out


def evaluate(gold: Sequence[GoldSentence], pred_spans: Optional[Sequence[Sequence[Span]]] = None,
             pred_heads: Optional[Sequence[Sequence[int]]] = None) -> Dict[str, object]:
    """All scores of an induced structure: ``uf1``, ``label_recall`` (from spans), ``attachment`` (from heads,
    when the gold has heads)."""
    out: Dict[str, object] = {}
    if pred_spans is not None:
        out["uf1"] = uf1(gold, pred_spans)
        out["label_recall"] = label_recall(gold, pred_spans)
    if pred_heads is not None:
        if any(g.heads is None for g in gold):
            raise ValueError("the gold has no heads: read_gold(..., conllu_path=...)")
        out["attachment"] = attachment([g.heads for g in gold], pred_heads)
    return out

# ----------------------------------------------------------------- scoring files (fairseq-tree-score --unsupervised)
def kept_leaves(gold: GoldSentence, n: int) -> List[int]:
    """Which of a prediction's n tokens are the gold sentence's words: all of them (a structure over the words, as
    ``fairseq-tree-induce`` writes) or, when n is the gold's token count, those the gold keeps (a full parse: its
    punctuation etc. go by the *gold* tags, as in the gold). Raises ValueError for any other n."""
    if n == len(gold):
        return list(range(n))
    if n == gold.tokens and gold.positions is not None:
        return list(gold.positions)
    raise ValueError(f"{n} tokens, but the gold sentence has {len(gold)} words ({gold.tokens} tokens in all)")


def _check_words(gold: GoldSentence, words: Sequence[str]) -> None:
    for k, (a, b) in enumerate(zip(words, gold.raw_words), 1):
        if not same_token(a, b):
            raise ValueError(f"word {k} is {a!r}, the gold's is {b!r}")


def spans_over_words(gold: GoldSentence, tree) -> List[Span]:
    """A predicted tree (``bracket_f1.evalb_tree(raw, bare_leaves=True)``: leaves bare or ``(TAG word)``) -> its
    distinct spans of >= 2 gold words (half-open, post-order): ``-NONE-`` leaves dropped, the others chosen by
    :func:`kept_leaves` and checked against the gold words (PTB escapes undone)."""
    leaves = [k for k, t in enumerate(tree.tags) if t != "-NONE-"]
    keep = [leaves[k] for k in kept_leaves(gold, len(leaves))]
    _check_words(gold, [tree.words[k] for k in keep])
    kept, before = set(keep), [0]
    for k in range(len(tree.words)):
        before.append(before[-1] + (k in kept))
    return post_order((before[s], before[e]) for s, e, _ in tree.spans if before[e] - before[s] >= 2)


def heads_over_words(gold: GoldSentence, dep) -> List[int]:
    """A predicted dependency tree (a ``trees.Tree`` read by ``read_conllu``) -> heads over the gold words: its tokens
    chosen by :func:`kept_leaves`, a head outside them climbing to the nearest kept ancestor (:func:`project_heads`)."""
    keep = kept_leaves(gold, len(dep.words))
    _check_words(gold, [dep.words[k] for k in keep])
    return project_heads(dep.heads, keep)


def predicted_heads(gold: Sequence[GoldSentence], pred_dep: str, gold_path: str = "gold") -> Dict[int, List[int]]:
    """A predicted CoNLL(-U) file -> {gold sentence index: heads over its words (:func:`heads_over_words`)}. The
    file holds one sentence per gold sentence, or one per gold sentence that has words (``fairseq-tree-induce``
    writes no token for a sentence without words): those without words are then absent. Mismatches raise
    :class:`TreeFormatError` naming FILE:LINE."""
    deps = list(read_conllu(pred_dep, trees=False))  # eq. 17 heads need not form a tree
    with_words = [g for g in gold if len(g)]
    targets = gold if len(deps) == len(gold) else with_words if len(deps) == len(with_words) else None
    if targets is None:
        raise TreeFormatError(f"{len(deps)} sentences, but {gold_path} has {len(gold)} ({len(with_words)} with "
                              f"words)", pred_dep)
    heads = {}
    for g, d in zip(targets, deps):
        try:
            heads[g.index] = heads_over_words(g, d)
        except ValueError as e:
            raise TreeFormatError(f"sentence {g.index + 1} of {gold_path}: {e}", pred_dep, d.line) from None
    return heads


def score_files(gold_path: str, pred_path: Optional[str] = None, gold_dep: Optional[str] = None,
                pred_dep: Optional[str] = None) -> Dict[str, object]:
    """UF1 / corpus F1 / per-label recall of a predicted bracket file, and UAS / UUAS of a predicted CoNLL-U file,
    against a gold .mrg (and its dependencies), by the rules of the module docstring. Predicted trees: one per line
    (a blank line: nothing predicted), leaves bare or ``(TAG word)``, over the gold words or over all its tokens
    (:func:`kept_leaves`). Predicted CoNLL-U: one sentence per gold sentence, or per gold sentence that has words
    (``fairseq-tree-induce`` writes no token for a sentence without words). Mismatches raise
    :class:`TreeFormatError` naming FILE:LINE."""

    gold = read_gold(gold_path, gold_dep)
    out: Dict[str, object] = {"sentences": len(gold), "rules": "UF1: words only (WORD_TAGS), spans >= 2 words, "
                              "sentence span excluded, sentences < 2 words skipped; UUAS: undirected edge sets"}
    if pred_path is not None:
        spans, empty = [], 0
        pairs = aligned(((g.line, g) for g in gold), read_sentences(pred_path, predicted=True), gold_path, pred_path)
        for k, ((_, g), (line, raw)) in enumerate(pairs, 1):
            try:
                spans.append(spans_over_words(g, evalb_tree(raw, bare_leaves=True)) if raw else [])
            except (TreeFormatError, ValueError) as e:
                raise TreeFormatError(f"sentence {k}: {getattr(e, 'message', e)}", pred_path, line) from None
            empty += not raw and len(g) > 0
        r = uf1(gold, spans)
        out.update(uf1=r["sentence_f1"], corpus_f1=r["corpus_f1"], recall=r["corpus_recall"],
                   precision=r["corpus_precision"], f1=r["corpus_f1"], tagging_accuracy=None,
                   scored_sentences=r["sentences"], skipped=r["skipped"], empty_predictions=empty,
                   label_recall=label_recall(gold, spans))
    if pred_dep is not None:
        if gold_dep is None:
            raise ValueError("UAS / UUAS need the gold dependencies (--gold-dep)")
        heads = predicted_heads(gold, pred_dep, gold_path)
        a = attachment([g.heads for g in gold], [heads.get(g.index, []) for g in gold])
        out.update(uas=a["uas"], uuas=a["uuas"], dep_words=a["words"])
    return out


def format_unsupervised(r: Dict[str, object]) -> str:
    """The summary block of :func:`score_files`, in EVALB's layout."""
    rows = [f"{'Number of sentence':<26}= {r['sentences']:6d}"]
    if "uf1" in r:
        rows += [f"{'Number of Skip  sentence':<26}= {r['skipped']:6d}   (fewer than 2 words)",
                 f"{'Number of Valid sentence':<26}= {r['scored_sentences']:6d}"]
        rows += [f"{name:<26}= {fmt(r[key])}" for name, key in (
            ("Sentence-level F1 (UF1)", "uf1"), ("Corpus-level F1", "corpus_f1"), ("Corpus Recall", "recall"),
            ("Corpus Precision", "precision"))]
        rows += [f"{'Recall ' + lab:<26}= {v['recall']:6.2f}   ({v['matched']}/{v['gold']})"
                 for lab, v in r["label_recall"].items() if lab in PAPER_LABELS]
    if "uas" in r:
        rows += [f"{'UAS':<26}= {fmt(r['uas'])}", f"{'UUAS':<26}= {fmt(r['uuas'])}",
                 f"{'Dependency words':<26}= {r['dep_words']:6d}"]
    return "\n".join(["=== Summary (unsupervised: the literature's rules) ===", "", "-- All --"] + rows)

# ---------------------------------------------------------------------------- masked-word perplexity
def masked_word_perplexity(model, dictionary, sentences: Iterable[Union[Sequence[str], "torch.Tensor"]],
                           max_tokens: int = 8192, mask_symbol: str = "<mask>",
                           device=None) -> Dict[str, float]:
    """Masked-word perplexity of Wang et al. (2019, Sec. 7 and footnote 3): every word of every sentence is
    masked once, alone (one copy of the sentence per word, that word replaced by ``<mask>``), and
    ``ppl = exp(-Σ log p(w | sentence with w masked) / n_mask)`` over all words (``<unk>`` targets count).

    model: ``forward(src_tokens [R, T], src_lengths [R], masked_tokens=bool [R, T]) -> (logits, extra)`` with
        logits [M, V] over the masked positions in row-major order (or [R, T, V]); layout ``<s> w.. </s> <pad>``.
    sentences: word lists (looked up in ``dictionary``) or 1-D LongTensors of word ids (no BOS/EOS).
    max_tokens: bound on R x T per forward: the copies of several sentences (sorted by length) share a batch,
        a long sentence's copies are split over several.
    Returns ``perplexity``, ``nll`` (mean, nats) and ``words``.
    """
    import torch
    import torch.nn.functional as F

    mask = dictionary.index(mask_symbol)
    if mask == dictionary.unk() and mask_symbol != dictionary.unk_word:
        raise ValueError(f"{mask_symbol!r} is not in the dictionary")
    if device is None:
        p = next(model.parameters(), None)
        device = p.device if p is not None else torch.device("cpu")
    ids = [s.long().cpu() if torch.is_tensor(s) else torch.tensor([dictionary.index(w) for w in s], dtype=torch.long)
           for s in sentences]
    ids = sorted((s for s in ids if s.numel() > 0), key=len)
    bos, eos, pad = dictionary.bos(), dictionary.eos(), dictionary.pad()

    def run(group: List["torch.Tensor"]) -> Tuple[float, int]:
        """All masked copies of ``group`` (sentences of similar length), in chunks of <= max_tokens."""
        lengths = torch.tensor([len(s) for s in group])
        T = int(lengths.max()) + 2
        base = torch.full((len(group), T), pad, dtype=torch.long)
        base[:, 0] = bos
        for b, s in enumerate(group):
            base[b, 1:len(s) + 1] = s
            base[b, len(s) + 1] = eos
        # row r masks word pos[r] (1-based token position) of sentence sent[r]
        sent = torch.repeat_interleave(torch.arange(len(group)), lengths)
        starts = torch.cumsum(lengths, 0) - lengths
        pos = torch.arange(len(sent)) - starts[sent] + 1
        rows = base[sent]
        rows[torch.arange(len(sent)), pos] = mask
        masked = torch.zeros_like(rows, dtype=torch.bool)
        masked[torch.arange(len(sent)), pos] = True
        targets = base[sent, pos]
        row_lengths = lengths[sent] + 2
        nll, step = 0.0, max(1, max_tokens // T)
        for a in range(0, len(sent), step):
            sl = slice(a, a + step)
            t = int(row_lengths[sl].max())
            logits, _ = model(rows[sl, :t].to(device), src_lengths=row_lengths[sl].to(device),
                              masked_tokens=masked[sl, :t].to(device))
            if logits.dim() == 3:  # a model that ignores masked_tokens
                logits = logits[masked[sl, :t].to(logits.device)]
            nll += F.cross_entropy(logits.float(), targets[sl].to(logits.device), reduction="sum").item()
        return nll, len(sent)

    was_training = model.training
    model.eval()
    total_nll, words = 0.0, 0
    try:
        with torch.no_grad():
            group: List[torch.Tensor] = []
            rows = 0  # copies in the group = its words
            for s in ids:  # ascending length: the group's copies fill max_tokens at the current length
                if group and (rows + len(s)) * (len(s) + 2) > max_tokens:
                    nll, m = run(group)
                    total_nll, words = total_nll + nll, words + m
                    group, rows = [], 0
                group.append(s)
                rows += len(s)
            if group:
                nll, m = run(group)
                total_nll, words = total_nll + nll, words + m
    finally:
        model.train(was_training)
    mean = total_nll / max(words, 1)
    return {"perplexity": math.exp(mean), "nll": mean, "words": words}

__all__ = [
    "GoldSentence", "read_gold", "gold_from_tree", "project_heads", "scored_spans", "sentence_f1", "uf1",
    "label_recall", "undirected_edges", "attachment", "left_branching", "right_branching", "balanced", "random_tree",
    "left_chain_heads", "right_chain_heads", "baseline_scores", "evaluate", "masked_word_perplexity",
    "conllu_lines", "write_conllu", "spans_to_brackets", "write_brackets", "PAPER_LABELS", "BALANCED_SPLIT",
    "RANDOM_SEEDS", "kept_leaves", "spans_over_words", "heads_over_words", "predicted_heads", "score_files",
    "format_unsupervised",
]
