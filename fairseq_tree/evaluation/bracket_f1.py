"""Labeled bracket scores exactly as EVALB computes them with ``COLLINS.prm``, and UAS / LAS without punctuation.

EVALB (``evalb.c``, Sekine & Collins 1997) with COLLINS.prm, step by step (``read_line`` / ``calc_result``), which
is what :func:`score_sentence` does:

1. Reading: one sentence per line (:func:`read_sentences`). ``(TAG word)`` is a terminal, every other bracket a
   constituent over the terminals inside it; words, tags and labels are compared as written (``-LCB-`` is not
   ``{``). A unary chain is one bracket per label; preterminals are not brackets.
2. ``DELETE_LABEL TOP -NONE- , : `` '' .`` (:data:`COLLINS_DELETE_LABELS`): a terminal whose tag is one of them is
   removed from **its own** tree (gold by gold tags, prediction by predicted tags); brackets are re-indexed over
   the terminals left, a bracket left with none is dropped ("zero element"), and a bracket whose label is one of
   them (``TOP``) is not counted. Labels lose their function tags first (``modify_label``: cut at the first ``-``
   or ``=``; :func:`evalb_label`); tags are compared as written. Nothing else is deleted: a ``ROOT`` bracket or
   the empty-label wrapper of ``( (S ..) )`` counts as a constituent (``delete_wrappers=True`` deletes them too,
   which EVALB never does).
3. Skips and errors, in this order: no predicted terminal left -> **skip** (status 2: an empty line, a parser
   that failed); unequal terminal counts -> **error** "Length unmatch" (status 1); a terminal whose word differs
   -> **error** "Words unmatch". Such a sentence counts in ``Number of sentence`` and nowhere else.
4. Matching: a gold bracket matches an unused predicted bracket with the same start, end and label (``EQ_LABEL
   ADVP PRT``); complete match: as many gold, predicted and matched brackets; crossing: predicted brackets that
   cross a gold one; tagging accuracy over the terminals left (punctuation does not count).
5. Totals over the valid sentences: recall = matched / gold, precision = matched / predicted, F = 2PR / (P + R); the
   ``len<=40`` block keeps the sentences of <= 40 gold terminals, ``-NONE-`` not counted
   (``DELETE_LABEL_FOR_LENGTH``), punctuation counted.

Where this differs from the C program (per-sentence numbers and summaries are otherwise identical, checked on
perturbed copies of wsj22 and ptb_sample/valid): a malformed line (unbalanced brackets, two words in one bracket,
an empty bracket) is a fatal ``FILE:LINE`` error (EVALB counts an error sentence or reads an empty word);
there is no ``MAX_ERROR`` (COLLINS.prm's 10 makes EVALB exit without a summary at its 12th error); no limit of 200
words or brackets per sentence; a gold tree may continue over several lines (PTB's multi-line .mrg files) and blank
gold lines are ignored (EVALB reads a blank gold line as a sentence); an F-measure of 0 / 0 is 0 (EVALB: nan).

Dependencies (:func:`attachment_scores`): UAS / LAS over words whose gold tag is not one of the punctuation tags
of rule 2 (:data:`PUNCT_TAGS`, the usual convention for PTB Stanford dependencies).
"""

import logging
import re
from collections import Counter
from dataclasses import dataclass
from typing import Dict, Iterable, Iterator, List, NamedTuple, Optional, Sequence, Tuple

from fairseq_tree.trees import (
    EVALB_PUNCT_TAGS,
    TOKEN_RE,
    LabeledSpan,
    RawTree,
    Tree,
    TreeFormatError,
    is_preterminal,
    parse_tokens,
    plain_word,
    read_conllu,
)

logger = logging.getLogger("fairseq_tree.evaluation")

#: COLLINS.prm's punctuation DELETE_LABELs (terminals removed before anything is compared; ``trees.tags``)
PUNCT_TAGS = EVALB_PUNCT_TAGS
#: every DELETE_LABEL of COLLINS.prm
COLLINS_DELETE_LABELS = frozenset(["TOP", "-NONE-"]) | PUNCT_TAGS
#: deleted as well with ``delete_wrappers=True``: fairseq-tree's readers drop these outer brackets, EVALB does not
#: (``trees.WRAPPER_LABELS`` also has ``TOP``, which COLLINS.prm deletes anyway)
WRAPPER_LABELS = frozenset(["ROOT", ""])
#: COLLINS.prm's EQ_LABEL pairs, as label -> representative
EQ_LABELS = {"PRT": "ADVP"}
#: DELETE_LABEL_FOR_LENGTH: not counted in a sentence's length (the len<=40 block)
LENGTH_DELETE_LABELS = frozenset(["-NONE-"])
CUTOFF_LEN = 40

STATUS_OK, STATUS_ERROR, STATUS_SKIP = 0, 1, 2


# ------------------------------------------------------------------------------------------- reading
class EvalbSentence(NamedTuple):
    """What evalb.c reads of one sentence (the scorer's record, not a tree): words [n] and tags [n] as written
    (``-NONE-`` terminals included) and one span (start, end, label) per bracket, post-order, a multiset (a unary
    chain gives several spans with the same range)."""

    words: List[str]
    tags: List[Optional[str]]
    spans: List[LabeledSpan]


def evalb_tree(raw: Sequence[RawTree], bare_leaves: bool = False) -> EvalbSentence:
    """EVALB's view of one sentence (the trees of one line, ``trees.parse_brackets`` output): words and tags as
    written, one span per bracket, label as written, over all n terminals (:class:`EvalbSentence`).

    ``bare_leaves``: a word outside a ``(TAG word)`` bracket is a terminal with tag None (induced trees such as
    ``(S (S w1 w2) w3)``); otherwise it is an error, as in EVALB ("More than two elements in a bracket")."""
    words: List[str] = []
    tags: List[Optional[str]] = []
    spans: List[LabeledSpan] = []

    def visit(node: RawTree) -> None:
        if is_preterminal(node):
            words.append(node[1])
            tags.append(node[0])
            return
        start = len(words)
        for child in node[1:]:
            if not isinstance(child, str):
                visit(child)
            elif bare_leaves:
                words.append(child)
                tags.append(None)
            else:
                raise TreeFormatError(f"bare word {child!r} in ({node[0]} ...): EVALB reads (TAG word) terminals")
        spans.append((start, len(words), node[0]))

    for tree in raw:
        visit(tree)
    return EvalbSentence(words, tags, spans)


def read_sentences(path: str, predicted: bool) -> Iterator[Tuple[int, List[RawTree]]]:
    """The sentences of a bracket file as EVALB reads them: one per line, every bracket on the line. Yields (line,
    raw trees). ``predicted``: a blank line is a sentence with no tree ([]: one the parser did not parse), and a
    line whose brackets do not close is an error. Gold (``predicted=False``): blank lines are ignored and a tree
    may go on over the next lines (multi-line .mrg files). Errors name FILE:LINE."""
    tokens: List[str] = []
    start, depth = None, 0
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            toks = TOKEN_RE.findall(line)
            if not toks and depth == 0:
                if predicted:
                    yield lineno, []
                continue
            start = start or lineno
            for tok in toks:
                depth += (tok == "(") - (tok == ")")
                if depth < 0:
                    raise TreeFormatError("unbalanced ')'", path, lineno)
            tokens.extend(toks)
            if depth > 0 and predicted:
                raise TreeFormatError(f"{depth} unclosed '(' (predicted trees are read one per line)", path, lineno)
            if depth == 0:
                try:
                    raw, _ = parse_tokens(tokens)
                except TreeFormatError as e:
                    raise e.at(path, start) from None
                yield start, raw
                tokens, start = [], None
    if tokens:
        raise TreeFormatError(f"{depth} unclosed '(' at end of file", path, start)


# ------------------------------------------------------------------------------------------- rules
def evalb_label(label: str) -> str:
    """``modify_label`` of evalb.c: cut at the first ``-`` or ``=`` (``NP-SBJ-1`` -> ``NP``, ``-NONE-`` -> '')."""
    return re.split(r"[-=]", label, maxsplit=1)[0]


def _same_class(label: str, eq_labels: Dict[str, str]) -> str:
    return eq_labels.get(label, label)


def kept_terminals(tags: Sequence[Optional[str]], delete_labels=COLLINS_DELETE_LABELS) -> List[int]:
    """Positions of the terminals EVALB keeps: those whose tag, as written, is not a DELETE_LABEL."""
    return [k for k, t in enumerate(tags) if t not in delete_labels]


def evalb_brackets(spans: Sequence[LabeledSpan], tags: Sequence[Optional[str]], delete_labels=COLLINS_DELETE_LABELS,
                   eq_labels: Dict[str, str] = EQ_LABELS) -> List[LabeledSpan]:
    """The brackets EVALB counts for a tree: spans (start, end, label) over all its terminals and **its own** tags ->
    (label, start, end) re-indexed over the kept terminals (:func:`kept_terminals`), without zero elements and
    deleted labels, labels by :func:`evalb_label` and EQ_LABEL class. A list: a unary chain counts once per label."""
    return [b for b in span_brackets(spans, tags, delete_labels, eq_labels) if b is not None]


def span_brackets(spans: Sequence[LabeledSpan], tags: Sequence[Optional[str]], delete_labels=COLLINS_DELETE_LABELS,
                  eq_labels: Dict[str, str] = EQ_LABELS) -> List[Optional[LabeledSpan]]:
    """:func:`evalb_brackets` span by span: [len(spans)], the bracket EVALB counts for each span, None for a span it
    does not count (a zero element or a deleted label)."""
    keep_before = [0]
    for t in tags:
        keep_before.append(keep_before[-1] + (t not in delete_labels))
    deleted = {_same_class(d, eq_labels) for d in delete_labels}
    out: List[Optional[LabeledSpan]] = []
    for s, e, label in spans:
        a, b = keep_before[s], keep_before[e]
        label = _same_class(evalb_label(label), eq_labels)
        out.append((label, a, b) if a < b and label not in deleted else None)
    return out


#: :func:`bracket_marks`' marks: a counted bracket matched / unmatched (gold: missing, predicted: extra), not counted
MATCH, MISSING, EXTRA, IGNORED = "match", "missing", "extra", "ignored"


def bracket_marks(gold: EvalbSentence, pred: EvalbSentence, delete_labels=COLLINS_DELETE_LABELS,
                  eq_labels: Dict[str, str] = EQ_LABELS) -> Tuple[List[str], List[str]]:
    """Which brackets of a scored sentence (:func:`score_sentence` status 0) EVALB finds wrong: -> (one mark per gold
    span, one per predicted span): ``match``, ``missing`` (gold only), ``extra`` (predicted only) or ``ignored`` (not
    counted). Matching is EVALB's multiset one, in order (the first equal unused bracket), so the number of gold
    ``match`` marks, of predicted ones and :attr:`SentenceScore.matched` are the same."""
    g = span_brackets(gold.spans, gold.tags, delete_labels, eq_labels)
    p = span_brackets(pred.spans, pred.tags, delete_labels, eq_labels)
    return _marks(g, Counter(b for b in p if b is not None), MISSING), \
        _marks(p, Counter(b for b in g if b is not None), EXTRA)


def _marks(brackets: Sequence[Optional[LabeledSpan]], other: Counter, unmatched: str) -> List[str]:
    out = []
    for b in brackets:
        if b is None:
            out.append(IGNORED)
        elif other[b] > 0:
            other[b] -= 1
            out.append(MATCH)
        else:
            out.append(unmatched)
    return out


def _crosses(x: LabeledSpan, y: LabeledSpan) -> bool:
    (_, a, b), (_, c, d) = x, y
    return a < c < b < d or c < a < d < b


@dataclass
class SentenceScore:
    """One row of EVALB's per-sentence table. ``status``: 0 scored, 1 error (``reason`` "length unmatch" or "words
    unmatch"), 2 skip ("empty prediction"); ``length``: gold terminals without ``-NONE-``; the counts are 0 unless
    the sentence was scored. ``sentence`` is 1-based; ``gold_line``/``pred_line`` where it starts in each file."""

    sentence: int
    length: int
    status: int = STATUS_OK
    reason: str = ""
    message: str = ""
    matched: int = 0
    gold_brackets: int = 0
    pred_brackets: int = 0
    crossing: int = 0
    words: int = 0
    correct_tags: int = 0
    gold_line: Optional[int] = None
    pred_line: Optional[int] = None


def score_sentence(gold: EvalbSentence, pred: Optional[EvalbSentence], sentence: int = 1,
                   delete_labels=COLLINS_DELETE_LABELS, eq_labels: Dict[str, str] = EQ_LABELS) -> SentenceScore:
    """``calc_result`` of evalb.c for one sentence (rules 2-4 of the module docstring); ``pred`` None: an empty line."""
    out = SentenceScore(sentence, sum(t not in LENGTH_DELETE_LABELS for t in gold.tags))
    g_keep = kept_terminals(gold.tags, delete_labels)
    p_keep = kept_terminals(pred.tags, delete_labels) if pred is not None else []
    if not p_keep:
        out.status, out.reason, out.message = STATUS_SKIP, "empty prediction", "no predicted word left"
        return out
    if len(g_keep) != len(p_keep):
        out.status, out.reason = STATUS_ERROR, "length unmatch"
        out.message = f"Length unmatch ({len(g_keep)}|{len(p_keep)})"
        return out
    for a, b in zip(g_keep, p_keep):
        if gold.words[a] != pred.words[b]:
            out.status, out.reason = STATUS_ERROR, "words unmatch"
            out.message = f"Words unmatch ({gold.words[a]}|{pred.words[b]})"
            return out
    g = evalb_brackets(gold.spans, gold.tags, delete_labels, eq_labels)
    p = evalb_brackets(pred.spans, pred.tags, delete_labels, eq_labels)
    out.matched = sum((Counter(g) & Counter(p)).values())
    out.gold_brackets, out.pred_brackets = len(g), len(p)
    out.crossing = sum(any(_crosses(y, x) for x in g) for y in p)  # counted over predicted brackets (by Mike)
    out.words = len(g_keep)
    out.correct_tags = sum(_same_class(gold.tags[a], eq_labels) == _same_class(pred.tags[b], eq_labels)
                           for a, b in zip(g_keep, p_keep))
    return out


# ------------------------------------------------------------------------------------------- totals
def _pct(a: float, b: float) -> float:
    return 100.0 * a / b if b else 0.0


def totals(scores: Sequence[SentenceScore]) -> Dict[str, float]:
    """EVALB's summary block (``print_total``) over ``scores``: percentages, counts and averages."""
    ok = [s for s in scores if s.status == STATUS_OK]
    matched, gold, pred = (sum(getattr(s, k) for s in ok) for k in ("matched", "gold_brackets", "pred_brackets"))
    words, tags, crossing = (sum(getattr(s, k) for s in ok) for k in ("words", "correct_tags", "crossing"))
    r, p = _pct(matched, gold), _pct(matched, pred)
    return {
        "sentences": len(scores), "error_sentences": sum(s.status == STATUS_ERROR for s in scores),
        "skip_sentences": sum(s.status == STATUS_SKIP for s in scores), "valid_sentences": len(ok),
        "recall": r, "precision": p, "f1": 2 * p * r / (p + r) if p + r else 0.0,
        "complete_match": _pct(sum(s.gold_brackets == s.pred_brackets == s.matched for s in ok), len(ok)),
        "average_crossing": crossing / len(ok) if ok else 0.0,
        "no_crossing": _pct(sum(s.crossing == 0 for s in ok), len(ok)),
        "two_or_less_crossing": _pct(sum(s.crossing <= 2 for s in ok), len(ok)),
        "tagging_accuracy": _pct(tags, words),
        "matched": matched, "gold_brackets": gold, "pred_brackets": pred, "words": words, "correct_tags": tags,
        "crossing": crossing,
    }


class EvalbScorer:
    """Scores sentence pairs by EVALB's rules (COLLINS.prm; ``delete_wrappers`` also deletes ROOT and the empty
    label) and keeps every :class:`SentenceScore`: ``skipped`` lists the sentences not scored, with the reason."""

    def __init__(self, delete_wrappers: bool = False, cutoff_len: int = CUTOFF_LEN):
        self.delete_labels = COLLINS_DELETE_LABELS | (WRAPPER_LABELS if delete_wrappers else frozenset())
        self.delete_wrappers, self.cutoff_len = delete_wrappers, cutoff_len
        self.sentences: List[SentenceScore] = []

    def add(self, gold: EvalbSentence, pred: Optional[EvalbSentence], gold_line: Optional[int] = None,
            pred_line: Optional[int] = None) -> SentenceScore:
        s = score_sentence(gold, pred, len(self.sentences) + 1, self.delete_labels)
        s.gold_line, s.pred_line = gold_line, pred_line
        self.sentences.append(s)
        return s

    @property
    def skipped(self) -> List[SentenceScore]:
        return [s for s in self.sentences if s.status != STATUS_OK]

    def result(self) -> Dict[str, object]:
        """All sentences' totals, plus ``skipped`` (error + skip sentences), ``skipped_by_reason`` and the
        ``len<=CUTOFF`` totals under the key ``"len<=40"``."""
        out: Dict[str, object] = dict(totals(self.sentences))
        out["skipped"] = len(self.skipped)
        out["skipped_by_reason"] = dict(Counter(s.reason for s in self.skipped))
        out[f"len<={self.cutoff_len}"] = totals([s for s in self.sentences if s.length <= self.cutoff_len])
        out["rules"] = "EVALB COLLINS.prm" + (" + DELETE_LABEL ROOT and ''" if self.delete_wrappers else "")
        out["delete_labels"] = sorted(self.delete_labels)
        return out


def score_files(gold_path: str, pred_path: str, delete_wrappers: bool = False,
                cutoff_len: int = CUTOFF_LEN) -> EvalbScorer:
    """Score a predicted bracket file against a gold one, sentence by sentence (:func:`read_sentences`; a blank
    predicted line is an empty prediction). Unequal sentence counts or malformed brackets raise
    :class:`TreeFormatError` naming FILE:LINE."""
    scorer = EvalbScorer(delete_wrappers, cutoff_len)
    for gline, gold, pline, pred in evalb_pairs(gold_path, pred_path):
        scorer.add(gold, pred, gline, pline)
    return scorer


def evalb_pairs(gold_path: str, pred_path: str):
    """-> (gold line, gold EvalbTree, predicted line, predicted EvalbTree or None for a blank line) per sentence
    of two aligned bracket files; TreeFormatError names FILE:LINE of a malformed tree or unequal counts."""
    pairs = aligned(read_sentences(gold_path, predicted=False), read_sentences(pred_path, predicted=True),
                    gold_path, pred_path)
    for (gline, graw), (pline, praw) in pairs:
        try:
            gold = evalb_tree(graw)
        except TreeFormatError as e:
            raise e.at(gold_path, gline) from None
        try:
            pred = evalb_tree(praw) if praw else None
        except TreeFormatError as e:
            raise e.at(pred_path, pline) from None
        yield gline, gold, pline, pred


def aligned(gold: Iterable[Tuple[int, object]], pred: Iterable[Tuple[int, object]], gold_path: str,
            pred_path: str) -> Iterator[Tuple[Tuple[int, object], Tuple[int, object]]]:
    """Zip two streams of (line, sentence) of the files ``gold_path`` and ``pred_path``; unequal sentence counts
    raise :class:`TreeFormatError` at the predicted file's line where they part."""
    pred_it = iter(pred)
    k, last_pred = 0, 0
    for g in gold:
        p = next(pred_it, None)
        if p is None:
            raise TreeFormatError(f"ends after {k} sentences, but {gold_path}:{g[0]} holds sentence {k + 1}",
                                  pred_path, last_pred + 1)
        k, last_pred = k + 1, p[0]
        yield g, p
    extra = next(pred_it, None)
    if extra is not None:
        raise TreeFormatError(f"sentence {k + 1}, but {gold_path} holds only {k}", pred_path, extra[0])


# ------------------------------------------------------------------------------------------- printing
def format_sentence(s: SentenceScore) -> str:
    """One line of EVALB's per-sentence table (``individual_result``)."""
    return (f"{s.sentence:4d}  {s.length:3d}    {s.status:d}  {_pct(s.matched, s.gold_brackets):6.2f} "
            f"{_pct(s.matched, s.pred_brackets):6.2f}   {s.matched:3d}    {s.gold_brackets:3d}  {s.pred_brackets:3d}"
            f"    {s.crossing:3d}   {s.words:4d}  {s.correct_tags:4d}   {_pct(s.correct_tags, s.words):6.2f}")


SENTENCE_HEADER = ("  Sent.                        Matched  Bracket   Cross        Correct Tag\n"
                   " ID  Len.  Stat. Recal  Prec.  Bracket gold test Bracket Words  Tags Accracy\n" + "=" * 76)


def format_block(t: Dict[str, float], title: str) -> str:
    """EVALB's summary block (``-- All --`` or ``-- len<=40 --``) of :func:`totals`."""
    rows = [("Number of sentence", t["sentences"]), ("Number of Error sentence", t["error_sentences"]),
            ("Number of Skip  sentence", t["skip_sentences"]), ("Number of Valid sentence", t["valid_sentences"])]
    out = [f"-- {title} --"] + [f"{name:<26}= {v:6d}" for name, v in rows]
    for name, key in (("Bracketing Recall", "recall"), ("Bracketing Precision", "precision"),
                      ("Bracketing FMeasure", "f1"), ("Complete match", "complete_match"),
                      ("Average crossing", "average_crossing"), ("No crossing", "no_crossing"),
                      ("2 or less crossing", "two_or_less_crossing"), ("Tagging accuracy", "tagging_accuracy")):
        out.append(f"{name:<26}= {t[key]:6.2f}")
    return "\n".join(out)


def format_report(scorer: EvalbScorer, per_sentence: bool = False) -> str:
    """EVALB's output: optionally the per-sentence table and its total line, then ``=== Summary ===`` with the
    ``-- All --`` and ``-- len<=N --`` blocks."""
    out = []
    if per_sentence:
        t = totals(scorer.sentences)
        out += [SENTENCE_HEADER] + [format_sentence(s) for s in scorer.sentences] + ["=" * 76]
        out.append(f"                {t['recall']:6.2f} {t['precision']:6.2f} {t['matched']:6d} {t['gold_brackets']:5d}"
                   f" {t['pred_brackets']:5d}  {t['crossing']:5d}  {t['words']:5d} {t['correct_tags']:5d}"
                   f"   {t['tagging_accuracy']:6.2f}")
    out += ["=== Summary ===", "", format_block(totals(scorer.sentences), "All"), "",
            format_block(totals([s for s in scorer.sentences if s.length <= scorer.cutoff_len]),
                         f"len<={scorer.cutoff_len}")]
    return "\n".join(out)


# ------------------------------------------------------------------------------------------- in-memory trees
def as_evalb(t: Tree) -> EvalbSentence:
    """A Tree's EVALB view (``labeled_spans(one_word=True)``, chains joined as ``S+VP``) as EVALB reads its
    brackets: one span per label of a chain."""
    return EvalbSentence(t.words, t.tags, [(s, e, part) for s, e, label in t.labeled_spans(one_word=True)
                                           for part in label.split("+")])


def bracket_f1(gold: Sequence[Tree], pred: Sequence[Tree], delete_wrappers: bool = False) -> Dict[str, object]:
    """EVALB scores (:meth:`EvalbScorer.result`) of parallel lists of Trees in the EVALB view
    (``trees.read_parse_trees``: their readers already removed wrappers and ``-NONE-`` and unescaped words)."""
    if len(gold) != len(pred):
        raise ValueError(f"{len(gold)} gold vs {len(pred)} predicted sentences")
    scorer = EvalbScorer(delete_wrappers)
    for g, p in zip(gold, pred):
        scorer.add(as_evalb(g), as_evalb(p))
    return scorer.result()


# ------------------------------------------------------------------------------------------- dependencies
def percent(correct: int, total: int, name: str) -> Optional[float]:
    """``100 * correct / total``; None (JSON ``null``) with a warning when nothing was scored, never 0.0."""
    if total == 0:
        logger.warning("%s: no word to score (every word excluded, or no sentence), reported as null", name)
        return None
    return 100.0 * correct / total


def fmt(value: Optional[float], width: int = 6, digits: int = 2) -> str:
    """A score for a table: ``n/a`` for None."""
    return f"{'n/a':>{width}}" if value is None else f"{value:{width}.{digits}f}"


def attachment_scores(gold_heads: Sequence[Sequence[int]], gold_rels: Sequence[Sequence[str]],
                      pred_heads: Sequence[Sequence[int]], pred_rels: Sequence[Sequence[str]],
                      gold_tags: Sequence[Sequence[str]]) -> Dict[str, float]:
    """UAS / LAS (percent) over words whose gold tag is not punctuation (``PUNCT_TAGS``)."""
    total = uas = las = 0
    for gh, gr, ph, pr, tags in zip(gold_heads, gold_rels, pred_heads, pred_rels, gold_tags):
        for a, b, c, d, t in zip(gh, gr, ph, pr, tags):
            if t in PUNCT_TAGS:
                continue
            total += 1
            if a == c:
                uas += 1
                las += int(b == d)
    return {"uas": percent(uas, total, "UAS"), "las": percent(las, total, "LAS"), "dep_tokens": total}


def score_dependency_files(gold_path: str, pred_path: str) -> Dict[str, float]:
    """:func:`attachment_scores` of two CoNLL-U / CoNLL-X files, gold tags from the gold file. Unequal sentence
    counts or a sentence whose words differ (PTB escapes undone: ``trees.plain_word``) raise
    :class:`TreeFormatError` naming FILE:LINE."""
    gold, pred = list(read_conllu(gold_path)), list(read_conllu(pred_path, trees=False))
    if len(gold) != len(pred):
        longer, path, k = (pred, pred_path, len(gold)) if len(pred) > len(gold) else (gold, gold_path, len(pred))
        raise TreeFormatError(f"sentence {k + 1}, but {pred_path} has {len(pred)} sentences and {gold_path} "
                              f"{len(gold)}", path, longer[k].line)
    for k, (g, p) in enumerate(zip(gold, pred), 1):
        if [plain_word(w) for w in g.words] != [plain_word(w) for w in p.words]:
            raise TreeFormatError(f"sentence {k}: words differ from {gold_path}:{g.line} ({len(p.words)} vs "
                                  f"{len(g.words)} words)", pred_path, p.line)
    return attachment_scores([g.heads for g in gold], [g.relations for g in gold], [p.heads for p in pred],
                             [p.relations for p in pred], [g.tags for g in gold])


__all__ = [
    "PUNCT_TAGS", "COLLINS_DELETE_LABELS", "WRAPPER_LABELS", "EQ_LABELS", "CUTOFF_LEN", "SentenceScore",
    "EvalbScorer", "EvalbSentence", "evalb_tree", "as_evalb", "read_sentences", "aligned", "evalb_label",
    "kept_terminals",
    "evalb_brackets", "span_brackets", "bracket_marks", "MATCH", "MISSING", "EXTRA", "IGNORED", "score_sentence",
    "totals", "score_files", "evalb_pairs", "format_sentence", "format_block",
    "format_report", "bracket_f1", "attachment_scores", "score_dependency_files",
]
