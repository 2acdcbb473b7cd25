"""The page's data: one compact record per sentence, built from the project's readers and scorers (EVALB's view and
marks from :mod:`fairseq_tree.evaluation.bracket_f1`, UF1 from :mod:`fairseq_tree.evaluation.unsupervised`); the
page draws a record only when it is selected.

A page's data is ``{"title", "mode", "summary": [[name, value], ..], "labels": [..], "sentences": [record, ..]}``;
``mode`` is ``treebank``, ``compare``, ``sst``, ``induced`` or ``attention``. A record:

* ``i`` (1-based sentence number), ``w`` (the words), ``f`` (the sentence's F1 in percent, or None), ``bad`` (1: it
  has an error: a wrong bracket, a wrong class, a skipped sentence), ``lab`` (the labels the label filter matches),
  ``s`` (a note: why a sentence was not scored; a class prediction), ``c`` (the list's short code where there is
  no F1: SST's ``gold->predicted`` classes);
* ``trees``: trees to draw, each ``{"title", "t": tags or None, "n": [[start, end, label], ..] (post-order, a unary
  chain lower first), "m": one mark per node (:data:`MARK_CHARS`), "lm": one per leaf (``.`` not counted),
  "cls": 1 (colour nodes and leaves by their label / tag: SST classes), "w": its own words if they differ}``;
* ``arcs``: dependency trees ``{"title", "h": heads (1-based, 0 root), "g": gold heads or None}``;
* ``att``: heat maps ``{"title", "rows": [..], "cols": [..], "v": [[..]]}`` (rows = query positions).
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Dict, List, Optional, Sequence, Tuple

from fairseq_tree.evaluation import unsupervised as U
from fairseq_tree.evaluation.bracket_f1 import (
    EXTRA,
    IGNORED,
    MATCH,
    MISSING,
    STATUS_OK,
    EvalbScorer,
    EvalbSentence,
    bracket_marks,
    evalb_label,
    evalb_pairs,
    evalb_tree,
    read_sentences,
    totals,
)
from fairseq_tree.trees import Tree, TreeFormatError, labelled_tree_from_brackets, parse_brackets, read_conllu
from fairseq_tree.trees.svg import tree_svg

#: a bracket's mark -> its character in ``m`` / ``lm``, and the CSS class the page gives it
MARK_CHARS = {MATCH: "=", MISSING: "-", EXTRA: "+", IGNORED: "."}
MARK_CLASSES = {c: mark for mark, c in MARK_CHARS.items()}
SST_CLASSES = ("0", "1", "2", "3", "4")


def tree_record(title: str, tags: Sequence[Optional[str]], nodes: Sequence[Tuple[int, int, str]],
                marks: Optional[Sequence[str]] = None, leaf_marks: Optional[Sequence[str]] = None,
                classes: bool = False) -> Dict[str, object]:
    """One tree of a record (see the module docstring); ``marks`` / ``leaf_marks``: :data:`MARK_CHARS` keys."""
    out: Dict[str, object] = {"title": title, "t": list(tags) if any(tags) else None,
                              "n": [[s, e, label] for s, e, label in nodes]}
    if marks is not None:
        out["m"] = "".join(MARK_CHARS[m] for m in marks)
    if leaf_marks is not None and any(leaf_marks):
        out["lm"] = "".join(MARK_CHARS[m] if m else " " for m in leaf_marks)
    if classes:
        out["cls"] = 1
    return out


def record_classes(tree: Dict[str, object], n: int) -> Tuple[List[str], List[str]]:
    """The extra CSS classes the page gives a record tree's nodes and leaves (the same in ``view.js``)."""
    nodes, tags = tree["n"], tree["t"] or [None] * n
    if tree.get("cls"):
        return [f"c-{x[2]}" for x in nodes], [f"c-{t}" if t else "" for t in tags]
    marks, leaf_marks = tree.get("m") or "", tree.get("lm") or ""
    return ([MARK_CLASSES.get(c, "") for c in marks] if marks else [""] * len(nodes),
            [MARK_CLASSES.get(c, "") for c in leaf_marks] if leaf_marks else [""] * n)


def record_svg(record: Dict[str, object], k: int = 0) -> str:
    """The SVG of tree ``k`` of a record, drawn in Python: the page's drawing of it, element for element."""
    tree = record["trees"][k]
    words = tree.get("w") or record["w"]
    node_classes, leaf_classes = record_classes(tree, len(words))
    return tree_svg(words, tree["t"] or [None] * len(words), [tuple(x) for x in tree["n"]], node_classes,
                    leaf_classes)


def _labels(spans) -> List[str]:
    return sorted({evalb_label(label) or label for _, _, label in spans})


def _leaf_marks(tags: Sequence[Optional[str]], delete_labels) -> List[str]:
    return [IGNORED if t in delete_labels else "" for t in tags]


def _pct(x: float) -> float:
    return round(x, 2)


# -------------------------------------------------------------------------------- treebanks, gold vs predicted
def treebank_records(path: str) -> List[Dict[str, object]]:
    """A bracket file as EVALB reads it, one record per sentence (no scores)."""
    out = []
    for k, (_, raw) in enumerate(read_sentences(path, predicted=False), 1):
        t = evalb_tree(raw, bare_leaves=True)
        out.append({"i": k, "w": t.words, "f": None, "bad": 0, "lab": _labels(t.spans),
                    "trees": [tree_record("tree", t.tags, t.spans)]})
    return out


def compare_record(k: int, gold: EvalbSentence, pred: Optional[EvalbSentence], scorer: EvalbScorer) -> Dict:
    """One gold/predicted pair scored by ``scorer`` (EVALB), its brackets marked (:func:`bracket_marks`)."""
    s = scorer.add(gold, pred)
    rec: Dict[str, object] = {"i": k, "w": gold.words, "f": None, "bad": 1, "lab": [], "s": s.message}
    gmarks = pmarks = None
    if s.status == STATUS_OK:
        t = totals([s])
        gmarks, pmarks = bracket_marks(gold, pred, scorer.delete_labels)
        rec.update(f=_pct(t["f1"]), r=_pct(t["recall"]), p=_pct(t["precision"]), bad=int(s.matched < max(
            s.gold_brackets, s.pred_brackets)), s="")
        wrong = [x for x, m in zip(gold.spans, gmarks) if m == MISSING]
        rec["lab"] = _labels(wrong + [x for x, m in zip(pred.spans, pmarks) if m == EXTRA])
    trees = [tree_record("gold", gold.tags, gold.spans, gmarks, _leaf_marks(gold.tags, scorer.delete_labels))]
    if pred is not None:
        trees.append(tree_record("predicted", pred.tags, pred.spans, pmarks,
                                 _leaf_marks(pred.tags, scorer.delete_labels)))
        if pred.words != gold.words:
            trees[-1]["w"] = pred.words
    rec["trees"] = trees
    return rec


def compare_records(gold_path: str, pred_path: str, delete_wrappers: bool = False
                    ) -> Tuple[List[Dict[str, object]], List[List[str]]]:
    """Gold and predicted bracket files (one predicted tree per line), scored as ``fairseq-tree-score`` does
    (:func:`fairseq_tree.evaluation.bracket_f1.score_files`) -> (records, summary rows)."""
    scorer = EvalbScorer(delete_wrappers)
    out = [compare_record(k, gold, pred, scorer)
           for k, (_, gold, _, pred) in enumerate(evalb_pairs(gold_path, pred_path), 1)]
    return out, evalb_summary(scorer)


def evalb_summary(scorer: EvalbScorer) -> List[List[str]]:
    """The corpus scores shown in the page's header: EVALB's summary (all sentences and ``len<=40``)."""
    r = scorer.result()
    short = r[f"len<={scorer.cutoff_len}"]
    return [["F1", f"{r['f1']:.2f}"], ["recall", f"{r['recall']:.2f}"], ["precision", f"{r['precision']:.2f}"],
            ["complete match", f"{r['complete_match']:.2f}"], ["tagging", f"{r['tagging_accuracy']:.2f}"],
            ["sentences", str(r["sentences"])], ["valid", str(r["valid_sentences"])],
            ["errors", str(r["error_sentences"])], ["skipped", str(r["skip_sentences"])],
            [f"F1 len<={scorer.cutoff_len}", f"{short['f1']:.2f}"], ["rules", str(r["rules"])]]


# -------------------------------------------------------------------------------- SST
def sst_tree_record(tree: Tree, title: str) -> Dict[str, object]:
    """A class-labelled tree: nodes and leaves coloured by class."""
    return tree_record(title, tree.tags, tree.labeled_spans(), classes=True)


def root_class(tree: Tree) -> str:
    return tree.labels[-1] if tree.labels else str(tree.tags[0])


def sst_records(path: str, predictions: Optional[str] = None, classes: Sequence[str] = SST_CLASSES
                ) -> Tuple[List[Dict[str, object]], List[List[str]]]:
    """SST-format trees (``trees.labelled_tree_from_brackets``) and, optionally, one predicted class per line
    (``fairseq-tree-classify``'s output) -> (records, summary rows: root accuracy)."""
    with open(path, encoding="utf-8") as f:
        lines = [(n, line) for n, line in enumerate(f, 1) if line.strip()]
    preds = None
    if predictions is not None:
        with open(predictions, encoding="utf-8") as f:
            preds = [line.strip() for line in f]
        if len(preds) != len(lines):
            raise TreeFormatError(f"{len(preds)} predicted classes for {len(lines)} trees of {path}", predictions)
    out = []
    for k, (n, line) in enumerate(lines, 1):
        try:
            tree = labelled_tree_from_brackets(line, classes)
        except TreeFormatError as e:
            raise e.at(path, n) from None
        gold = root_class(tree)
        rec = {"i": k, "w": tree.words, "f": None, "bad": 0, "lab": [gold], "s": f"gold {gold}", "c": gold,
               "trees": [sst_tree_record(tree, "gold classes")]}
        if preds is not None:
            rec["bad"] = int(preds[k - 1] != gold)
            rec["s"] = f"gold {gold}, predicted {preds[k - 1]}"
            rec["c"] = f"{gold}\u2192{preds[k - 1]}"
        out.append(rec)
    summary = [["sentences", str(len(out))], ["classes", " ".join(classes)]]
    if preds is not None:
        right = sum(not r["bad"] for r in out)
        summary.insert(0, ["accuracy", f"{100.0 * right / max(len(out), 1):.2f}"])
    return out, summary


# -------------------------------------------------------------------------------- induced structure
def _gold_nodes(g) -> List[Tuple[int, int, str]]:
    """A GoldSentence's labeled nodes in post-order, a chain lower first (``labeled`` lists it top first)."""
    order = sorted(range(len(g.labeled)), key=lambda k: (g.labeled[k][1], -g.labeled[k][0], -k))
    return [g.labeled[k] for k in order]


def induced_records(trees_path: str, deps_path: Optional[str] = None, gold_path: Optional[str] = None,
                    gold_deps: Optional[str] = None) -> Tuple[List[Dict[str, object]], List[List[str]]]:
    """``fairseq-tree-induce`` output (``trees.txt``, ``deps.conllu``) and, optionally, the gold treebank it was
    induced from (its words, punctuation removed: :func:`fairseq_tree.evaluation.unsupervised.read_gold`):
    induced spans matching / not matching a gold one and the sentence UF1 (UF1's rules: the whole-sentence span
    and one-word spans are not scored, :func:`~fairseq_tree.evaluation.unsupervised.scored_spans`)."""
    induced = [evalb_tree(raw, bare_leaves=True) if raw else None
               for _, raw in read_sentences(trees_path, predicted=True)]
    deps = list(read_conllu(deps_path, trees=False)) if deps_path else None
    gold = U.read_gold(gold_path, gold_deps, lowercase=False, digits=False) if gold_path else None
    if gold is not None and len(gold) != len(induced):
        raise TreeFormatError(f"{len(induced)} induced trees for {len(gold)} gold sentences of {gold_path}",
                              trees_path)
    dep_iter = iter(deps) if deps is not None else None
    out, pred_spans, pred_heads = [], [], []
    for k, t in enumerate(induced):
        dep = next(dep_iter) if dep_iter is not None and t is not None else None
        rec = _induced_record(k + 1, t, dep, gold[k] if gold else None)
        out.append(rec)
        pred_spans.append(rec.pop("_spans", []))
        pred_heads.append(rec.pop("_heads", None))
    summary = [["sentences", str(len(out))]]
    if gold is not None:
        uf = U.uf1(gold, pred_spans)
        summary = [["UF1 (sentence mean)", f"{uf['sentence_f1']:.2f}"], ["UF1 (corpus)", f"{uf['corpus_f1']:.2f}"]
                   ] + summary
        if gold_deps and deps is not None:
            att = U.attachment([g.heads for g in gold], [h or [0] * len(g) for h, g in zip(pred_heads, gold)])
            summary += [["UAS", f"{att['uas']:.2f}"], ["UUAS", f"{att['uuas']:.2f}"]]
    return out, summary


def _induced_record(k: int, tree: Optional[EvalbSentence], dep, g) -> Dict[str, object]:
    if tree is None:
        return {"i": k, "w": list(g.raw_words) if g else [], "f": None, "bad": 1, "lab": [], "s": "no tree",
                "trees": []}
    if g is None:
        rec = {"i": k, "w": tree.words, "f": None, "bad": 0, "lab": [],
               "trees": [tree_record("induced", tree.tags, tree.spans)]}
        if dep is not None:
            rec["arcs"] = [{"title": "induced dependencies", "h": dep.heads, "g": None}]
        return rec
    spans = U.spans_over_words(g, tree)
    n = len(g)
    pred, gold = U.scored_spans(spans, n), U.scored_spans(g.spans, n)
    marks = [MATCH if x in gold else IGNORED if x not in pred else EXTRA for x in spans]
    gnodes = _gold_nodes(g)
    gmarks = [MATCH if (s, e) in pred else IGNORED if (s, e) not in gold else MISSING for s, e, _ in gnodes]
    rec = {"i": k, "w": list(g.raw_words), "f": _pct(100.0 * U.sentence_f1(gold, pred)), "lab": [],
           "trees": [tree_record("induced", [None] * n, [(s, e, "S") for s, e in spans], marks),
                     tree_record("gold", g.tags, gnodes, gmarks)], "_spans": spans}
    rec["bad"] = int(pred != gold)
    rec["lab"] = sorted({label for (s, e, label), m in zip(gnodes, gmarks) if m == MISSING})
    if dep is not None:
        heads = U.heads_over_words(g, dep)
        rec["arcs"] = [{"title": "induced dependencies", "h": heads, "g": g.heads}]
        rec["_heads"] = heads
    return rec


# -------------------------------------------------------------------------------- attention
def attention_record(k: int, item: Dict[str, object]) -> Dict[str, object]:
    """One sentence's attention (a line of an attention dump, see ``docs/view.md``): ``words``, ``maps``
    ``{name: [[..]]}`` (rows = queries) or ``{name: {"rows", "cols", "v"}}`` (a map with its own labels), optional
    ``rows`` / ``cols`` labels of the plain maps (default: the words) and ``tree`` (brackets, drawn above)."""
    words = list(item["words"])
    att = []
    for name, matrix in item["maps"].items():
        rows = list(item.get("rows") or words)
        cols = list(item.get("cols") or words)
        if isinstance(matrix, dict):  # a map with its own labels
            rows, cols, matrix = list(matrix["rows"]), list(matrix["cols"]), matrix["v"]
        if len(matrix) != len(rows) or any(len(r) != len(cols) for r in matrix):
            raise ValueError(f"sentence {k}: map {name!r} is not {len(rows)} x {len(cols)}")
        att.append({"title": name, "rows": rows, "cols": cols, "v": [[round(float(x), 4) for x in r]
                                                                      for r in matrix]})
    rec = {"i": k, "w": words, "f": None, "bad": 0, "lab": [m["title"] for m in att], "att": att, "trees": []}
    if item.get("tree"):
        t = evalb_tree(parse_brackets(item["tree"]), bare_leaves=True)
        rec["trees"] = [tree_record("tree", t.tags, t.spans)]
    return rec


def attention_records(path: str) -> Tuple[List[Dict[str, object]], List[List[str]]]:
    """An attention dump: one JSON object per line (:func:`attention_record`)."""
    out = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if line.strip():
                try:
                    out.append(attention_record(len(out) + 1, json.loads(line)))
                except (ValueError, KeyError, TypeError) as e:
                    raise TreeFormatError(f"not an attention record: {e}", path, n) from None
    names = Counter(m["title"] for r in out for m in r["att"])
    return out, [["sentences", str(len(out))], ["maps", ", ".join(names)]]


def attention_item(words: Sequence[str], maps: Dict[str, object], tree: Optional[str] = None,
                   rows: Optional[Sequence[str]] = None, cols: Optional[Sequence[str]] = None) -> Dict[str, object]:
    """One line of an attention dump (:func:`attention_record` reads it) from ``maps`` ``{name: matrix}`` (nested
    lists, numpy arrays or tensors: anything with ``tolist``). A [len(rows), len(cols)] matrix (default: the words
    both ways) is kept as it is; another 2-D one becomes ``{"rows", "cols", "v"}`` with its rows numbered and its
    columns the words (n), the pairs of neighbouring words (n - 1: e.g. a link per layer) or numbers; a map with
    more dimensions (e.g. heads) is split into ``name/0``, ``name/1`` ..; a 1-D map is left out; a map given as
    ``{"rows", "cols", "v"}`` keeps its labels."""
    rows_, cols_ = list(rows or words), list(cols or words)
    out: Dict[str, object] = {}
    for name, m in maps.items():
        if isinstance(m, dict):  # a map with its own labels
            v = m["v"].tolist() if hasattr(m["v"], "tolist") else m["v"]
            out[name] = {"rows": list(m["rows"]), "cols": list(m["cols"]),
                         "v": [[round(float(x), 4) for x in row] for row in v]}
            continue
        _flatten_map(name, m.tolist() if hasattr(m, "tolist") else m, out, words, (len(rows_), len(cols_)))
    item: Dict[str, object] = {"words": list(words), "maps": out}
    if tree:
        item["tree"] = tree
    if rows is not None:
        item["rows"] = rows_
    if cols is not None:
        item["cols"] = cols_
    return item


def _depth(x) -> int:
    d = 0
    while isinstance(x, list):
        d, x = d + 1, (x[0] if x else None)
    return d


def _flatten_map(name: str, m, out: Dict[str, object], words: Sequence[str], shape: Tuple[int, int]) -> None:
    d = _depth(m)
    if d > 2:
        for k, sub in enumerate(m):
            _flatten_map(f"{name}/{k}", sub, out, words, shape)
    elif d == 2:
        v = [[round(float(x), 4) for x in row] for row in m]
        if (len(v), len(v[0]) if v else 0) == shape:
            out[name] = v
            return
        c, n = (len(v[0]) if v else 0), len(words)
        cols = list(words) if c == n else [f"{a}|{b}" for a, b in zip(words, words[1:])] if c == n - 1 else \
            [str(j) for j in range(c)]
        out[name] = {"rows": [str(i) for i in range(len(v))], "cols": cols, "v": v}


# -------------------------------------------------------------------------------- Trees in memory (the hub)
def svg_sentence(t: Tree) -> EvalbSentence:
    """A Tree's EVALB view in the drawing's order (:meth:`Tree.svg_nodes`: a chain's labels lower first)."""
    return EvalbSentence(t.words, t.tags, t.svg_nodes())


def tree_records(trees: Sequence[Tree], gold: Optional[Sequence[Tree]] = None,
                 delete_wrappers: bool = False) -> Tuple[List[Dict[str, object]], List[List[str]]]:
    """Trees in memory (a parser's output) -> (records, summary): drawn as :meth:`Tree.to_svg` draws them, and
    with ``gold`` scored and marked against it as :func:`compare_records` does (EVALB's rules)."""
    if gold is None:
        out = [{"i": k, "w": t.words, "f": None, "bad": 0, "lab": _labels(t.svg_nodes()),
                "trees": [tree_record("tree", t.tags, t.svg_nodes())]} for k, t in enumerate(trees, 1)]
        return out, [["sentences", str(len(out))]]
    if len(gold) != len(trees):
        raise ValueError(f"{len(gold)} gold vs {len(trees)} predicted trees")
    scorer = EvalbScorer(delete_wrappers)
    out = [compare_record(k, svg_sentence(g), svg_sentence(p), scorer)
           for k, (g, p) in enumerate(zip(gold, trees), 1)]
    return out, evalb_summary(scorer)
