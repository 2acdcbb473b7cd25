"""The viewer's measured pages and the docs' screenshots (docs/view.md): builds one page per view from ../shared
data, reports each page's size and its open time in headless Chromium, and writes docs/img/view_*.png.

    python scripts/benchmarks/bench_view.py --shared ../shared --out work/view \
        [--screenshots docs/img] [--attention A.jsonl]

* ``compare``: the first 2,416 trees of ptb_sample/train.mrg (WSJ section 23 is not in ../shared; 2,416 is its
  size) against a **perturbed copy** (not a parser: seeded, 10% of the nodes dropped, 5% relabelled, a bracket
  added over the first two children of 10% of the nodes with >= 3), scored by EVALB's rules;
* ``treebank``: wsj22; ``sst``: sst/dev with a trivial "prediction" (each sentence's most frequent word class,
  not a model); ``induced``: right-branching trees and right-chain heads (the baseline, not a model) over the
  first 300 sentences of wsj22, against its gold trees and dependencies; ``attention``: an attention dump
  (``fairseq-tree-induce --dump-attention``), when given.

Open time: ``window.__readyMs`` (``performance.now()`` when the page has drawn its list and first sentence, i.e.
from navigation start) and the wall time from ``Page.navigate`` until ``window.__ready``; the median of 5 opens.
"""

import argparse
import json
import os
import random
import statistics
import sys
from collections import Counter
from pathlib import Path

from fairseq_tree.evaluation import unsupervised as U
from fairseq_tree.trees import labeled_to_brackets, labelled_tree_from_brackets, read_treebank
from fairseq_tree.trees.tree import node_parents
from fairseq_tree.view import page, records
from fairseq_tree.view.browser import Chromium

LABELS = ["NP", "VP", "PP", "S", "SBAR", "ADJP", "ADVP"]


def perturb(tree, rng):
    """A tree's EVALB-view nodes, perturbed (see the module docstring) -> one line of brackets."""
    spans = tree.labeled_spans(one_word=True)
    n = len(tree.words)
    plain = [(s, e) for s, e, _ in spans]
    out = []
    for s, e, label in spans:
        if (s, e) == (0, n) or rng.random() >= 0.10:
            out.append((s, e, rng.choice(LABELS) if rng.random() < 0.05 else label))
    parents = node_parents(tree.spans)
    for i, (s, e) in enumerate(tree.spans):
        kids = sorted([tree.spans[c] for c, p in enumerate(parents) if p == i])
        starts = sorted({s} | {a for a, _ in kids} | {b for _, b in kids} | set(range(s, e)))
        if len(starts) >= 4 and rng.random() < 0.10:  # over the first two children (a child: a node or a word)
            end = next((b for a, b in kids if a == s), s + 1)
            end = next((b for a, b in kids if a == end), end + 1)
            if end < e and (s, end) not in plain:
                out.append((s, end, rng.choice(LABELS)))
    return labeled_to_brackets(tree.words, tree.tags, out)


def build(shared: Path, out: Path, attention=None):
    """-> {view: html path}."""
    out.mkdir(parents=True, exist_ok=True)
    pages = {}
    ptb = (shared / "data" / "ptb_sample" / "train.mrg").read_text(encoding="utf-8").splitlines()[:2416]
    (out / "gold2416.mrg").write_text("\n".join(ptb) + "\n", encoding="utf-8")
    rng = random.Random(1)
    pred = [perturb(t, rng) for _, t in read_treebank(str(out / "gold2416.mrg"), unary="join", one_word=True)]
    (out / "pred2416.txt").write_text("\n".join(pred) + "\n", encoding="utf-8")
    sents, summary = records.compare_records(str(out / "gold2416.mrg"), str(out / "pred2416.txt"))
    pages["compare"] = page("compare", sents, summary, "2,416 PTB trees vs a perturbed copy (EVALB)").save(
        str(out / "compare.html"))
    wsj22 = shared / "data" / "wsj22" / "wsj22.mrg"
    tb = records.treebank_records(str(wsj22))
    pages["treebank"] = page("treebank", tb, [["sentences", str(len(tb))]], "wsj22").save(str(out / "treebank.html"))
    pages["sst"] = sst_page(shared / "data" / "sst" / "dev.txt", out)
    pages["induced"] = induced_page(wsj22, shared / "data" / "wsj22" / "wsj22.sd.conll", out)
    if attention:
        a, summary = records.attention_records(attention)
        pages["attention"] = page("attention", a, summary, "constituent prior (tiny model)").save(
            str(out / "attention.html"))
    return pages


def sst_page(path: Path, out: Path) -> str:
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    guess = [Counter(labelled_tree_from_brackets(line, records.SST_CLASSES).tags).most_common(1)[0][0]
             for line in lines]
    (out / "sst_trivial.txt").write_text("\n".join(guess) + "\n", encoding="utf-8")
    sents, summary = records.sst_records(str(path), str(out / "sst_trivial.txt"))
    return page("sst", sents, summary, "SST dev vs the most frequent word class (a trivial baseline)").save(
        str(out / "sst.html"))


def induced_page(mrg: Path, conll: Path, out: Path, n: int = 300) -> str:
    trees = mrg.read_text(encoding="utf-8").splitlines()[:n]
    (out / "gold300.mrg").write_text("\n".join(trees) + "\n", encoding="utf-8")
    blocks = [b for b in conll.read_text(encoding="utf-8").split("\n\n") if b.strip()][:n]
    (out / "gold300.conll").write_text("\n\n".join(blocks) + "\n\n", encoding="utf-8")
    gold = U.read_gold(str(out / "gold300.mrg"), lowercase=False, digits=False)
    (out / "right.txt").write_text("".join(U.spans_to_brackets(U.right_branching(len(g)), g.raw_words) + "\n"
                                           for g in gold), encoding="utf-8")
    U.write_conllu(str(out / "right.conllu"), [g.raw_words for g in gold],
                   [U.right_chain_heads(len(g)) for g in gold], [g.tags for g in gold])
    sents, summary = records.induced_records(str(out / "right.txt"), str(out / "right.conllu"),
                                             str(out / "gold300.mrg"), str(out / "gold300.conll"))
    return page("induced", sents, summary, "right-branching baseline vs wsj22 (UF1, UAS)").save(
        str(out / "induced.html"))


def measure(b: Chromium, path: str, runs: int = 5):
    """-> (median readyMs, median wall seconds) over ``runs`` opens."""
    ready, wall = [], []
    for _ in range(runs):
        b.send("Page.navigate", url="about:blank")
        wall.append(b.open(Path(path).as_uri()))
        ready.append(b.eval("window.__readyMs"))
    return statistics.median(ready), statistics.median(wall)


SELECT = {  # which sentence each screenshot shows
    "compare": "SENTS => SENTS.findIndex(s => s.f !== null && s.f < 80 && s.w.length >= 12 && s.w.length <= 16)",
    "treebank": "SENTS => SENTS.findIndex(s => s.w.length >= 14 && s.w.length <= 16)",
    "sst": "SENTS => SENTS.findIndex(s => s.bad && s.w.length >= 12 && s.w.length <= 15)",
    "induced": "SENTS => SENTS.findIndex(s => s.w.length >= 10 && s.w.length <= 12)",
    "attention": "SENTS => 0",
}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shared", default="../shared")
    ap.add_argument("--out", default="work/view")
    ap.add_argument("--screenshots", help="write VIEW.png here (docs/img)")
    ap.add_argument("--attention", help="an attention dump (fairseq-tree-induce --dump-attention)")
    args = ap.parse_args(argv)
    pages = build(Path(args.shared), Path(args.out), args.attention)
    report = {}
    with Chromium(width=1280, height=820) as b:
        for view, path in pages.items():
            ready_ms, wall = measure(b, path)
            report[view] = {"bytes": os.path.getsize(path), "sentences": b.eval("window.__view.data.sentences.length"),
                            "ready_ms": round(ready_ms, 1), "open_s": round(wall, 3)}
            print(f"{view:>9}: {report[view]}", flush=True)
            if args.screenshots:
                b.eval(f"window.__view.show(({SELECT[view]})(window.__view.data.sentences))")
                b.eval("document.querySelector('#list li.selected')?.scrollIntoView({block: 'center'})")
                b.screenshot(os.path.join(args.screenshots, f"view_{view}.png"))
    print(json.dumps(report))
    return report


if __name__ == "__main__":
    sys.exit(main() and 0)
