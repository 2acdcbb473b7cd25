"""``fairseq-tree-parse``: parse sentences with a trained ``lal_parser`` checkpoint, write brackets + CoNLL-U,
score against gold, and draw label-to-word attention heat maps.

    fairseq-tree-parse --path ckpt/checkpoint_best.pt --input wsj22.mrg \\
        --gold wsj22.mrg --gold-dep wsj22.sd.conll --output out/wsj22 [--plot] [--plot-sentence 3]

``--input``: ``.mrg``/``.trees`` (bracketed: words and POS tags are taken from it), ``.conllu``/``.conll``
(words and XPOS tags), anything else one tokenized sentence per line (words only: use a model trained
``--no-pos-tags``, which predicts its own tags; a tag-input model refuses it unless ``--unknown-tags``). Writes
``OUTPUT.trees`` (one-line PTB brackets; POS tags = the input's, or predicted) and ``OUTPUT.conllu``
(predicted heads and relations), prints a JSON line of scores with ``--gold`` (``OUTPUT.trees`` scored against
the gold file exactly as ``fairseq-tree-score --gold GOLD --pred OUTPUT.trees`` does: EVALB with COLLINS.prm,
:mod:`fairseq_tree.evaluation.bracket_f1`; ``skipped`` counts the sentences EVALB would not score) and
``--gold-dep`` (UAS/LAS without punctuation of ``OUTPUT.conllu``; ``--gold`` alone gives no dependency scores),
and with ``--plot`` saves ``OUTPUT.attention.png``: the Label Attention Layer's attention of every head (rows,
named by its label when heads are tied to labels) over the words. ``--dump-attention FILE`` writes the same
attention of the first ``--dump-sentences N`` (default 10) sentences as JSON lines, with each sentence's parse,
for ``fairseq-tree-view --attention FILE``.

``--format jsonl`` also writes ``OUTPUT.jsonl``: one JSON object per sentence (words, tags, tree, heads,
relations). The model runs on the GPU when there is one (``--cpu`` / ``--device`` to choose); a progress line
reports the rate and ETA. ``--path`` takes a checkpoint or a ``fairseq-tree-export`` folder.
Dictionaries are read from the training data directory recorded in the checkpoint, or ``--data DIR``.
Library: :mod:`fairseq_tree.inference.parse` (:class:`~fairseq_tree.inference.parse.LALParser`).
"""

import json
import logging
import os
import sys
import time
from typing import Sequence

from fairseq_tree.cli.logs import add_verbose_arg, setup_logging
from fairseq_tree.evaluation.bracket_f1 import score_dependency_files, score_files
from fairseq_tree.evaluation.plotting import figure, save
from fairseq_tree.inference.export import resolve_folder
from fairseq_tree.inference.parse import LALParser
from fairseq_tree.safe_loading import UnsafeCheckpointError
from fairseq_tree.trees import Tree, TreeFormatError, atomic_write_text, read_conllu, read_parse_trees
from fairseq_tree.trees import write_conllu as write_conllu_file
from fairseq_tree.utils.devices import add_device_args
from fairseq_tree.utils.help_text import ArgumentParser
from fairseq_tree.view.records import attention_item

logger = logging.getLogger("fairseq_tree.parse")


def read_input(path: str):
    """-> (sentences, tags or None, gold trees or None); ValueError for a file with no sentence."""
    if path.endswith((".mrg", ".trees")):
        trees = list(read_parse_trees(path))
        out = [t.words for t in trees], [t.tags for t in trees], trees
    elif path.endswith((".conllu", ".conll")):
        deps = list(read_conllu(path))
        out = [d.words for d in deps], [d.tags for d in deps], None
    else:
        with open(path, encoding="utf-8") as f:
            out = [line.split() for line in f if line.strip()], None, None
    if not out[0]:
        raise ValueError(f"{path}: no sentence to parse (an empty file?)")
    return out


def checkpoint_and_data(path: str, data):
    """``--path`` a checkpoint, or a model folder (a fairseq-tree-export folder: its model.pt and dictionaries)."""
    return resolve_folder(path, None, data) if os.path.isdir(path) else (path, data)


def write_conllu(parses: Sequence[Tree], path: str) -> None:
    write_conllu_file(path, [p.words for p in parses], [p.heads for p in parses], [p.tags for p in parses],
                      relations=[p.relations for p in parses], blank_after_last=True)


def plot_attention(words: Sequence[str], attention, head_names: Sequence[str], path: str) -> None:
    """attention [H, n + 2] (over BOS, words, EOS; rows ``head_names``) as a heat map in ``path``."""
    att = attention.numpy()  # [H, n + 2]
    cols = ["<s>"] + list(words) + ["</s>"]
    fig, ax = figure(figsize=(max(4, 0.45 * len(cols) + 2), max(3, 0.28 * len(head_names) + 1.5)))
    im = ax.imshow(att, aspect="auto", cmap="viridis")
    ax.set_xticks(range(len(cols)), cols, rotation=90, fontsize=8)
    ax.set_yticks(range(len(head_names)), head_names, fontsize=7)
    ax.set_title("Label Attention Layer: label-to-word attention")
    fig.colorbar(im, ax=ax)
    save(fig, path, dpi=120)


def get_parser():
    p = ArgumentParser(description="Parse with a lal_parser checkpoint (fairseq-tree-parse).")
    p.add_argument("--path", required=True, help="checkpoint, or a fairseq-tree-export folder")
    p.add_argument("--input", required=True, help=".mrg/.trees, .conllu/.conll, or one tokenized sentence per line")
    p.add_argument("--output", help="output prefix (default: INPUT.lal)")
    p.add_argument("--gold", help="gold .mrg for bracket scores")
    p.add_argument("--gold-dep", help="gold CoNLL-U/CoNLL-X for UAS/LAS")
    p.add_argument("--data", help="data directory with the dictionaries (default: the one in the checkpoint)")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--plot", action="store_true", help="save OUTPUT.attention.png for --plot-sentence")
    p.add_argument("--plot-sentence", type=int, default=0, help="0-based sentence index to plot")
    p.add_argument("--dump-attention", metavar="FILE",
                   help="write the label attention of the first --dump-sentences sentences as JSON lines "
                        "(fairseq-tree-view --attention FILE)")
    p.add_argument("--dump-sentences", type=int, default=10, metavar="N", help="sentences for --dump-attention")
    p.add_argument("--no-input-tags", action="store_true", help="ignore the input's POS tags")
    p.add_argument("--unknown-tags", action="store_true",
                   help="parse untagged input with a model that reads POS tags, every tag unknown (its F1 falls "
                        "far below the model's; a model trained --no-pos-tags predicts its own tags instead)")
    p.add_argument("--format", choices=["brackets", "jsonl"], default="brackets",
                   help="jsonl: also OUTPUT.jsonl, one JSON object per sentence")
    add_device_args(p, "the parser")
    add_verbose_arg(p)
    return p


def main(argv=None):
    args = get_parser().parse_args(argv)
    setup_logging(args.verbose)
    sentences, tags, _ = read_input(args.input)
    path, data = checkpoint_and_data(args.path, args.data)
    parser = LALParser(path, data=data, batch_size=args.batch_size, device=args.device,
                       unknown_tags=args.unknown_tags)
    if args.no_input_tags:
        tags = None
    parser.check_tags(tags)
    t0 = time.perf_counter()
    parses = parser.parse(sentences, tags, progress="parse")
    elapsed = time.perf_counter() - t0
    out = args.output or args.input + ".lal"
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out + ".trees", "w", encoding="utf-8") as f:
        for p in parses:
            f.write(p.to_brackets(one_word=True) + "\n")
    write_conllu(parses, out + ".conllu")
    if args.format == "jsonl":
        with open(out + ".jsonl", "w", encoding="utf-8") as f:
            f.writelines(json.dumps(p.to_json(), ensure_ascii=False) + "\n" for p in parses)
    scores = {"sentences": len(parses), "parse_sents_per_s": round(len(parses) / max(elapsed, 1e-9), 1)}
    try:  # the written files, scored as fairseq-tree-score scores them
        if args.gold:
            scores.update(score_files(args.gold, out + ".trees").result())
        if args.gold_dep:
            scores.update(score_dependency_files(args.gold_dep, out + ".conllu"))
    except TreeFormatError as e:
        sys.exit(f"fairseq-tree-parse: {e}")
    if args.plot:
        k = min(args.plot_sentence, len(parses) - 1)
        attention = parser.attention([sentences[k]], None if tags is None else [tags[k]])[0]
        plot_attention(sentences[k], attention, parser.head_names, out + ".attention.png")
        scores["plot"] = out + ".attention.png"
    if args.dump_attention:
        dump_attention(args.dump_attention, parser, sentences[: args.dump_sentences],
                       None if tags is None else tags[: args.dump_sentences], parses)
        scores["attention"] = args.dump_attention
    print(json.dumps(scores))
    return scores


def dump_attention(path: str, parser, sentences, tags, parses) -> None:
    """The label-to-word attention [H, n + 2] of ``sentences`` as JSON lines (``view.records.attention_item``: rows
    the heads, columns BOS, the words, EOS; the sentence's parse as its tree)."""
    lines = []
    for words, att, tree in zip(sentences, parser.attention(sentences, tags), parses):
        item = attention_item(words, {"label attention": att}, tree.to_brackets(one_word=True),
                              rows=parser.head_names, cols=["<s>"] + list(words) + ["</s>"])
        lines.append(json.dumps(item) + "\n")
    atomic_write_text(path, "".join(lines))


def cli_main(argv=None):
    try:
        main(argv)
    except (UnsafeCheckpointError, ValueError, FileNotFoundError) as e:
        sys.exit(f"fairseq-tree-parse: error: {e}")


if __name__ == "__main__":
    cli_main()
