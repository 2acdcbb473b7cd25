"""``fairseq-tree-induce``: induce trees (and dependencies) with a ``tree_induction`` checkpoint, score them as
the unsupervised-parsing literature does, next to the trivial baselines, and draw the model's structure.

    fairseq-tree-induce --path ckpt/checkpoint_best.pt --treebank wsj22.mrg [--deps wsj22.sd.conll] \\
        --out out/wsj22 [--plot 3] [--opt min_layer=2 --opt method=greedy] [--data DIR] [--no-perplexity]

Reads the gold treebank with :func:`fairseq_tree.evaluation.unsupervised.read_gold` (punctuation removed,
words normalised as the training text: lower-cased, digits -> ``N``; ``--keep-case``/``--keep-digits``
otherwise), feeds the words to ``model.induce`` in length-sorted batches and writes, in treebank order:

* ``OUT/trees.txt``: one bracketed induced tree per sentence over the raw (unnormalised) words
  (a sentence with no word after punctuation removal gets an empty line);
* ``OUT/deps.conllu``: induced heads (models that induce dependencies, e.g. ``structformer``), as induced:
  StructFormer's eq. 17 heads are per-word argmaxes and may contain cycles (counted in ``heads_not_tree``);
  ``--opt method=joint`` (Algorithm 3) always gives a tree;
* ``OUT/scores.json`` and a table on stdout: UF1 (sentence-level mean and corpus-level), recall per gold
  label, UAS / UUAS with ``--deps``, masked-word perplexity (Wang et al.: every word masked once) and the
  left / right / balanced / random baselines on the same sentences with the same scorer;
* with ``--plot N``: ``OUT/plots/sent{k}_*.png`` for the first N sentences of >= 2 words: the constituent
  prior per layer (constituent attention), the dependency distribution (StructFormer), the induced tree;
* with ``--dump-attention FILE``: the same maps of the same sentences (the first ``--plot N``, default 10, of
  >= 2 words) as JSON lines, words, maps and induced tree, for ``fairseq-tree-view --attention FILE``.

``--opt KEY=VALUE`` is passed to ``model.induce`` (e.g. ``method=greedy``, ``min_layer=2``, ``threshold=0.7``
for ``constituent_transformer``; ``method=joint`` for ``structformer``); values are parsed as Python literals.
Library: :mod:`fairseq_tree.inference.induce`.
"""

import argparse
import ast
import json
import logging
import os
import sys
import time
from typing import Dict, List

import torch

from fairseq_tree.evaluation import plotting
from fairseq_tree.evaluation import unsupervised as U
from fairseq_tree.inference.induce import induce_all, load
from fairseq_tree.safe_loading import UnsafeCheckpointError
from fairseq_tree.trees import check_heads
from fairseq_tree.view.records import attention_item

logger = logging.getLogger("fairseq_tree.induce")

#: --dump-attention without --plot: the maps of this many sentences
DUMP_SENTENCES = 10


def parse_opts(items: List[str]) -> Dict[str, object]:
    out = {}
    for item in items or []:
        if "=" not in item:
            raise SystemExit(f"--opt {item!r}: expected KEY=VALUE")
        key, value = item.split("=", 1)
        try:
            out[key] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            out[key] = value  # a bare string such as method=greedy
    return out


def _is_tree(heads) -> bool:
    try:
        check_heads(heads)
        return True
    except ValueError:
        return False


def format_table(result: dict) -> str:
    rows = [("model", result["model"])] + [(name, b) for name, b in result["baselines"].items()
                                           if "sentence_f1" in b]
    lines = [f"{'':<10} {'UF1':>6} {'corpus':>7}" + "".join(f" {lab:>6}" for lab in result["labels"]) +
             f" {'UAS':>6} {'UUAS':>6}"]
    for name, r in rows:
        rec = r.get("label_recall", {})
        att = r.get("attachment", {})
        cells = "".join(f" {rec[lab]['recall']:6.1f}" if lab in rec else f" {'':>6}" for lab in result["labels"])
        lines.append(f"{name:<10} {r['sentence_f1']:6.1f} {r['corpus_f1']:7.1f}{cells}"
                     f" {att.get('uas', float('nan')):6.1f} {att.get('uuas', float('nan')):6.1f}")
    for name in ("left_chain", "right_chain"):
        if name in result["baselines"]:
            att = result["baselines"][name]
            lines.append(f"{name:<10} {'':>6} {'':>7}" + " " * 7 * len(result["labels"]) +
                         f" {att['uas']:6.1f} {att['uuas']:6.1f}")
    if result.get("perplexity"):
        lines.append(f"masked-word perplexity (each word masked once): {result['perplexity']['perplexity']:.2f} "
                     f"over {result['perplexity']['words']} words")
    return "\n".join(lines)


def plot_sentence(out_dir: str, k: int, words: List[str], spans, maps: Dict[str, torch.Tensor]) -> List[str]:
    os.makedirs(out_dir, exist_ok=True)
    written = []
    priors = {name: m for name, m in maps.items() if name.startswith("prior_layer")}
    if priors:
        path = os.path.join(out_dir, f"sent{k + 1}_prior.png")
        plotting.plot_prior_layers(priors, words, path)
        written.append(path)
    if "dependency" in maps:
        path = os.path.join(out_dir, f"sent{k + 1}_dependency.png")
        plotting.plot_dependency(maps["dependency"], words, path)
        written.append(path)
    path = os.path.join(out_dir, f"sent{k + 1}_tree.png")
    plotting.plot_tree(spans, words, path)
    written.append(path)
    return written


def dump_attention(path: str, maps: Dict[int, Dict[str, torch.Tensor]], words: List[List[str]], spans) -> None:
    """The kept sentences' maps (those of >= 2 words) as JSON lines (:func:`fairseq_tree.view.records.attention_item`:
    words, ``{name: [n, n]}`` maps, the induced tree), in treebank order."""
    lines = [json.dumps(attention_item(words[k], maps[k], U.spans_to_brackets(spans[k], words[k])))
             for k in sorted(maps) if len(words[k]) >= 2]
    U.atomic_write_text(path, "".join(line + "\n" for line in lines))


def main(args) -> dict:
    t0 = time.time()
    gold = U.read_gold(args.treebank, args.deps, lowercase=not args.keep_case, digits=not args.keep_digits)
    model, task = load(args.path, args.data, args.device)
    sentences = [g.words for g in gold]
    result = {"checkpoint": args.path, "treebank": args.treebank, "deps": args.deps, "sentences": len(gold),
              "induce_options": parse_opts(args.opt), "labels": list(U.PAPER_LABELS)}
    os.makedirs(args.out, exist_ok=True)
    if args.no_structure or not hasattr(model, "induce"):
        if not args.no_structure:
            raise SystemExit(f"{args.path}: {type(model).__name__} induces no structure (a plain mlm_transformer?): "
                             f"add --no-structure for its perplexity only")
        result["perplexity"] = U.masked_word_perplexity(model, task.source_dictionary,
                                                        [s for s in sentences if s], device=args.device)
        U.atomic_write_text(os.path.join(args.out, "scores.json"), json.dumps(result, indent=1) + "\n")
        print(f"masked-word perplexity (each word masked once): {result['perplexity']['perplexity']:.2f} "
              f"over {result['perplexity']['words']} words")
        return result
    shown = args.plot or (DUMP_SENTENCES if args.dump_attention else 0)
    if not shown:
        keep = 0
    else:  # maps of the first N sentences with >= 2 words
        multi = [k for k, s in enumerate(sentences) if len(s) >= 2][:shown]
        keep = multi[-1] + 1 if multi else 0
    spans, heads, maps = induce_all(model, task, sentences, args.batch_size, keep, args.device,
                                    **parse_opts(args.opt))
    raw = [g.raw_words for g in gold]
    U.atomic_write_text(os.path.join(args.out, "trees.txt"),
                    "".join((U.spans_to_brackets(s, w) if w else "") + "\n" for s, w in zip(spans, raw)))
    if heads is not None:
        U.write_conllu(os.path.join(args.out, "deps.conllu"), raw, heads, [g.tags for g in gold])
        # eq. 17 heads are per-word argmaxes: they need not form a tree (Algorithm 3, method=joint, always does)
        result["heads_not_tree"] = sum(not _is_tree(h) for h in heads if h)
        if result["heads_not_tree"]:
            logger.warning("%d of %d sentences: induced heads do not form a tree (cycle or no root); deps.conllu "
                           "keeps them as induced (scored so)", result["heads_not_tree"], len(heads))
    scores = U.evaluate(gold, spans, heads if heads is not None and args.deps else None)
    model_row = dict(scores["uf1"], label_recall=scores["label_recall"])
    if "attachment" in scores:
        model_row["attachment"] = scores["attachment"]
    result.update(model=model_row, baselines=U.baseline_scores(gold))
    if not args.no_perplexity:
        result["perplexity"] = U.masked_word_perplexity(model, task.source_dictionary,
                                                        [s for s in sentences if s], device=args.device)
    if args.plot:
        plots = []
        for k in sorted(maps):
            if len(sentences[k]) >= 2:
                plots += plot_sentence(os.path.join(args.out, "plots"), k, raw[k], spans[k], maps[k])
        result["plots"] = plots
    if args.dump_attention:
        dump_attention(args.dump_attention, maps, raw, spans)
        result["attention"] = args.dump_attention
    result["seconds"] = round(time.time() - t0, 1)
    U.atomic_write_text(os.path.join(args.out, "scores.json"), json.dumps(result, indent=1) + "\n")
    print(format_table(result))
    return result


def get_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="fairseq-tree-induce", description=__doc__.split("\n\n")[0])
    p.add_argument("--path", required=True, help="tree_induction checkpoint (constituent_transformer, structformer)")
    p.add_argument("--treebank", required=True, help="gold .mrg treebank (its words are parsed)")
    p.add_argument("--deps", help="gold dependencies (.conllu / .conll) of the same sentences: UAS / UUAS")
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--data", help="training data directory (dict.txt), if not where the checkpoint says")
    p.add_argument("--plot", type=int, default=0, metavar="N", help="draw the first N sentences (PNG)")
    p.add_argument("--dump-attention", metavar="FILE",
                   help=f"write the maps of the first --plot N (default {DUMP_SENTENCES}) sentences as JSON lines "
                        f"(fairseq-tree-view --attention FILE)")
    p.add_argument("--opt", action="append", default=[], metavar="KEY=VALUE", help="option of model.induce")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--keep-case", action="store_true", help="as the training text's normalisation")
    p.add_argument("--keep-digits", action="store_true", help="as the training text's normalisation")
    p.add_argument("--no-perplexity", action="store_true", help="skip the masked-word perplexity")
    p.add_argument("--no-structure", action="store_true",
                   help="perplexity only (the plain mlm_transformer baseline, which induces nothing)")
    p.add_argument("--device", default="cpu")
    return p


def cli_main(argv=None) -> None:
    logging.basicConfig(format="%(asctime)s | %(levelname)s | %(name)s | %(message)s", level=logging.INFO,
                        stream=sys.stderr)
    try:
        main(get_parser().parse_args(argv))
    except UnsafeCheckpointError as e:
        sys.exit(f"fairseq-tree-induce: error: {e}")


if __name__ == "__main__":
    cli_main()
