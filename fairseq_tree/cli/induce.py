"""``fairseq-tree-induce``: induce trees (and dependencies) with a ``tree_induction`` checkpoint, score them as
the unsupervised-parsing literature does, next to the trivial baselines, and draw the model's structure.

    fairseq-tree-induce --path ckpt/checkpoint_best.pt --treebank wsj22.mrg [--deps wsj22.sd.conll] \\
        --out out/wsj22 [--plot 3] [--opt min_layer=2 --opt method=greedy] [--data DIR] [--no-perplexity]
    fairseq-tree-induce --path ckpt/checkpoint_best.pt --input text.txt --out out/text [--tokenize none]

With ``--input`` (raw text, one sentence per line, tokenized as ``--tokenize`` says) there is no gold: the word
tokens (those with a letter or digit) are normalised and induced, the other tokens put back under the lowest
induced constituent that holds both neighbouring words (as ``fairseq-tree-preprocess --parser induced``), and
``OUT/trees.txt`` holds one tree over all tokens per line, ``OUT/deps.conllu`` the heads over the words.

Reads the gold treebank with :func:`fairseq_tree.evaluation.unsupervised.read_gold` (punctuation removed,
words normalised as the training text: lower-cased, digits -> ``N``; ``--keep-case``/``--keep-digits``
otherwise), feeds the words to ``model.induce`` in length-sorted batches and writes, in treebank order:

* ``OUT/trees.txt``: one bracketed induced tree per sentence over the raw (unnormalised) words, every node and
  preterminal ``X`` (so ``fairseq-tree-preprocess --parser given`` reads them back; a sentence with no word after
  punctuation removal gets an empty line); ``--format jsonl`` also ``OUT/induced.jsonl`` (words, spans, tree,
  heads per sentence);
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

from fairseq_tree.cli.logs import add_verbose_arg, setup_logging
from fairseq_tree.evaluation import plotting
from fairseq_tree.evaluation import unsupervised as U
from fairseq_tree.inference.export import resolve_folder
from fairseq_tree.inference.induce import induce_all, load
from fairseq_tree.inference.results import InducedStructure
from fairseq_tree.parsers.induced_parser import split_words, tokens_to_tree
from fairseq_tree.safe_loading import UnsafeCheckpointError
from fairseq_tree.text.tokenize import InputError, Tokenizer, check_line, decode_line
from fairseq_tree.trees import check_heads, to_brackets
from fairseq_tree.utils.devices import add_device_args
from fairseq_tree.utils.help_text import ArgumentParser
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


def _device(model) -> torch.device:
    return next(model.parameters()).device


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
        lines.append(f"{name:<10} {U.fmt(r['sentence_f1'], 6, 1)} {U.fmt(r['corpus_f1'], 7, 1)}{cells}"
                     f" {U.fmt(att.get('uas'), 6, 1)} {U.fmt(att.get('uuas'), 6, 1)}")
    for name in ("left_chain", "right_chain"):
        if name in result["baselines"]:
            att = result["baselines"][name]
            lines.append(f"{name:<10} {'':>6} {'':>7}" + " " * 7 * len(result["labels"]) +
                         f" {U.fmt(att['uas'], 6, 1)} {U.fmt(att['uuas'], 6, 1)}")
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


def read_text(path: str) -> List[str]:
    """The lines of a raw-text file; ValueError FILE:LINE for an empty or undecodable line, or an empty file."""
    lines = []
    with open(path, "rb") as f:
        for lineno, raw in enumerate(f, 1):
            try:
                lines.append(check_line(decode_line(raw.rstrip(b"\r\n"))))
            except InputError as e:
                raise ValueError(f"{path}:{lineno}: {e.message}") from None
    if not lines:
        raise ValueError(f"{path}: no sentence (an empty file)")
    return lines


def write_jsonl(path: str, structures: List[InducedStructure]) -> None:
    U.atomic_write_text(path, "".join(json.dumps(x.to_json(), ensure_ascii=False) + "\n" for x in structures))


def induce_text(args, model, task, t0: float) -> dict:
    """``--input``: raw text, no gold (see the module docstring) -> the result written to ``OUT/scores.json``."""
    tok = Tokenizer(args.tokenize, "en", ptb=True)
    lower = not (args.keep_case or getattr(task.cfg, "eval_keep_case", False))
    digits = not (args.keep_digits or getattr(task.cfg, "eval_keep_digits", False))
    split = [split_words(tok(line), lower, digits) for line in read_text(args.input)]
    words = [w for _, _, w in split]
    spans, heads, maps = induce_all(model, task, words, args.batch_size, maps_to_keep(args, words),
                                    progress="induce", **parse_opts(args.opt))
    trees = [to_brackets(tokens_to_tree(t, pos, sp)) for (t, pos, _), sp in zip(split, spans)]
    U.atomic_write_text(os.path.join(args.out, "trees.txt"), "".join(t + "\n" for t in trees))
    raw = [[t[k] for k in pos] for t, pos, _ in split]  # the word tokens as written (induced normalised)
    result = {"checkpoint": args.path, "input": args.input, "sentences": len(split),
              "words": sum(len(w) for w in words), "induce_options": parse_opts(args.opt)}
    if heads is not None:
        U.write_conllu(os.path.join(args.out, "deps.conllu"), raw, heads, [["X"] * len(w) for w in raw])
        result["heads_not_tree"] = sum(not _is_tree(h) for h in heads if h)
    if args.format == "jsonl":
        write_jsonl(os.path.join(args.out, "induced.jsonl"),
                    [InducedStructure(r, [tuple(x) for x in sp], tree, None if heads is None else heads[k])
                     for k, (r, sp, tree) in enumerate(zip(raw, spans, trees))])
    if not args.no_perplexity and any(words):
        result["perplexity"] = U.masked_word_perplexity(model, task.source_dictionary, [w for w in words if w],
                                                        device=_device(model))
    draw(args, result, maps, raw, spans)
    result["seconds"] = round(time.time() - t0, 1)
    U.atomic_write_text(os.path.join(args.out, "scores.json"), json.dumps(result, indent=1) + "\n")
    print(f"{result['sentences']} sentences ({result['words']} words) induced: {args.out}/trees.txt")
    return result


def maps_to_keep(args, sentences: List[List[str]]) -> int:
    """``keep_maps`` of :func:`induce_all` for ``--plot N`` / ``--dump-attention``: the sentences up to the N-th
    (default :data:`DUMP_SENTENCES`) of >= 2 words, the ones :func:`draw` draws."""
    shown = args.plot or (DUMP_SENTENCES if args.dump_attention else 0)
    multi = [k for k, s in enumerate(sentences) if len(s) >= 2][:shown]
    return multi[-1] + 1 if multi else 0


def draw(args, result: dict, maps: Dict[int, Dict[str, torch.Tensor]], words: List[List[str]], spans) -> None:
    """``--plot``: ``OUT/plots/sent{k}_*.png`` of the kept sentences of >= 2 ``words``; ``--dump-attention``: their
    maps as JSON lines. The files go into ``result`` (``plots``, ``attention``)."""
    if args.plot:
        plots = []
        for k in sorted(maps):
            if len(words[k]) >= 2:
                plots += plot_sentence(os.path.join(args.out, "plots"), k, words[k], spans[k], maps[k])
        if plots:
            logger.info("--plot %d: %d PNG files in %s", args.plot, len(plots), os.path.join(args.out, "plots"))
        else:
            logger.warning("--plot %d: no sentence of two words or more to draw", args.plot)
        result["plots"] = plots
    if args.dump_attention:
        dump_attention(args.dump_attention, maps, words, spans)
        result["attention"] = args.dump_attention


def dump_attention(path: str, maps: Dict[int, Dict[str, torch.Tensor]], words: List[List[str]], spans) -> None:
    """The kept sentences' maps (those of >= 2 words) as JSON lines (:func:`fairseq_tree.view.records.attention_item`:
    words, ``{name: [n, n]}`` maps, the induced tree), in treebank order."""
    lines = [json.dumps(attention_item(words[k], maps[k], U.spans_to_brackets(spans[k], words[k], "X", "X")))
             for k in sorted(maps) if len(words[k]) >= 2]
    U.atomic_write_text(path, "".join(line + "\n" for line in lines))


def main(args) -> dict:
    t0 = time.time()
    if bool(args.treebank) == bool(args.input):
        raise ValueError("give --treebank (gold trees: their words are induced and scored) or --input (raw text, "
                         "one sentence per line), not both")
    path, data = resolve_folder(args.path, None, args.data) if os.path.isdir(args.path) else (args.path, args.data)
    model, task = load(path, data, args.device)
    os.makedirs(args.out, exist_ok=True)
    if args.input:
        if not hasattr(model, "induce"):
            raise ValueError(f"{args.path}: {type(model).__name__} induces no structure")
        return induce_text(args, model, task, t0)
    gold = U.read_gold(args.treebank, args.deps, lowercase=not args.keep_case, digits=not args.keep_digits)
    if not gold:
        raise ValueError(f"{args.treebank}: no sentence (an empty file)")
    sentences = [g.words for g in gold]
    result = {"checkpoint": args.path, "treebank": args.treebank, "deps": args.deps, "sentences": len(gold),
              "induce_options": parse_opts(args.opt), "labels": list(U.PAPER_LABELS)}
    if args.no_structure or not hasattr(model, "induce"):
        if not args.no_structure:
            raise SystemExit(f"{args.path}: {type(model).__name__} induces no structure (a plain mlm_transformer?): "
                             f"add --no-structure for its perplexity only")
        result["perplexity"] = U.masked_word_perplexity(model, task.source_dictionary,
                                                        [s for s in sentences if s], device=_device(model))
        U.atomic_write_text(os.path.join(args.out, "scores.json"), json.dumps(result, indent=1) + "\n")
        print(f"masked-word perplexity (each word masked once): {result['perplexity']['perplexity']:.2f} "
              f"over {result['perplexity']['words']} words")
        return result
    spans, heads, maps = induce_all(model, task, sentences, args.batch_size, maps_to_keep(args, sentences),
                                    progress="induce", **parse_opts(args.opt))
    raw = [g.raw_words for g in gold]
    trees = [U.spans_to_brackets(s, w, "X", "X") if w else "" for s, w in zip(spans, raw)]
    U.atomic_write_text(os.path.join(args.out, "trees.txt"), "".join(t + "\n" for t in trees))
    if args.format == "jsonl":
        write_jsonl(os.path.join(args.out, "induced.jsonl"),
                    [InducedStructure(w, [tuple(x) for x in s], t, None if heads is None else heads[k])
                     for k, (w, s, t) in enumerate(zip(raw, spans, trees))])
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
                                                        [s for s in sentences if s], device=_device(model))
    draw(args, result, maps, raw, spans)
    result["seconds"] = round(time.time() - t0, 1)
    U.atomic_write_text(os.path.join(args.out, "scores.json"), json.dumps(result, indent=1) + "\n")
    print(format_table(result))
    return result


def get_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog="fairseq-tree-induce", description=__doc__.split("\n\n")[0])
    p.add_argument("--path", required=True, help="tree_induction checkpoint (constituent_transformer, structformer) "
                                                 "or a fairseq-tree-export folder")
    p.add_argument("--treebank", help="gold .mrg treebank (its words are induced and scored)")
    p.add_argument("--input", help="raw text, one sentence per line (no gold: trees and heads only)")
    p.add_argument("--tokenize", choices=["moses", "none"], default="moses",
                   help="--input's tokenizer: moses (PTB conventions, as fairseq-tree-preprocess) or whitespace")
    p.add_argument("--format", choices=["brackets", "jsonl"], default="brackets",
                   help="jsonl: also OUT/induced.jsonl, one JSON object per sentence")
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
    add_device_args(p, "the model")
    add_verbose_arg(p)
    return p


def cli_main(argv=None) -> None:
    args = get_parser().parse_args(argv)
    setup_logging(args.verbose)
    try:
        main(args)
    except (UnsafeCheckpointError, ValueError, FileNotFoundError) as e:
        sys.exit(f"fairseq-tree-induce: error: {e}")


if __name__ == "__main__":
    cli_main()
