"""``fairseq-tree-classify``: classify sentences with a ``tree_classification`` checkpoint.

    fairseq-tree-classify --path ckpt/checkpoint_best.pt --input sst/dev.txt [--binary] [--attention-share]
    fairseq-tree-classify --path CKPT --input text.txt --labels text.label --parser stanza --stanza-model-dir DIR

``--input``: SST-format trees (a class on every node: their gold labels are scored), bracketed trees, or raw
text (tokenized and parsed on the fly with the preprocessing backends, ``--parser``); ``--input-format auto``
tells them apart by the first line. ``--labels FILE``: gold classes of bracketed or raw input, one per line.
Writes one predicted class per input line (``--output FILE``, default stdout) and, when the input has gold
labels (or with ``--attention-share``), prints as its last line one JSON object: ``sentences``, ``accuracy``
(roots), ``labelled_units``, ``phrase_accuracy`` (every labelled node and leaf), ``no_class`` (sentences
with no class in the view, e.g. neutral ones with ``--binary``), and with ``--attention-share`` the paper's
Table 4 analysis (also printed as a table on stderr). ``--format jsonl`` writes one JSON object per line instead
of the class name (``label`` and ``probabilities`` of every class). The model (and the raw-text parser) run on
the GPU when there is one (``--cpu`` / ``--device`` to choose). Library: :mod:`fairseq_tree.inference.classify`.
"""

import argparse
import json
import logging
import sys
from typing import Iterable, List, Tuple

from fairseq_tree.cli.preprocess import add_backend_args
from fairseq_tree.inference.classify import Classifier, examples_from_texts
from fairseq_tree.inference.classify import InputError as ExampleError
from fairseq_tree.inference.results import Classification
from fairseq_tree.parsers import ParseError
from fairseq_tree.parsers.raw_text import RawTextParser
from fairseq_tree.preprocess.pipeline import parser_options
from fairseq_tree.safe_loading import UnsafeCheckpointError
from fairseq_tree.text.tokenize import InputError, check_line, decode_line  # a bad line of text
from fairseq_tree.utils.devices import add_device_args
from fairseq_tree.utils.help_text import ArgumentParser

logger = logging.getLogger("fairseq_tree.classify")


def get_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog="fairseq-tree-classify",
                                description="Classify sentences (trees or raw text) with a tree_classification "
                                            "checkpoint; score them against gold labels.")
    p.add_argument("--path", required=True, metavar="CKPT", help="checkpoint")
    p.add_argument("--input", required=True, metavar="FILE", help="one sentence per line")
    p.add_argument("--input-format", choices=["auto", "sst", "brackets", "raw"], default="auto",
                   help="sst: class-labelled trees (their labels are the gold); brackets: syntactic trees; raw: "
                        "text, parsed with --parser; auto: sst or brackets if the first line starts with '(', "
                        "else raw")
    p.add_argument("--labels", metavar="FILE", help="gold classes of brackets/raw input, one per line")
    p.add_argument("--binary", action="store_true",
                   help="score in the SST-2 view (0-1 negative, 3-4 positive, neutral not scored); a 5-class "
                        "model's probabilities are summed accordingly")
    p.add_argument("--output", metavar="FILE", help="predicted classes, one per input line (default: stdout)")
    p.add_argument("--attention-share", action="store_true",
                   help="Table 4 of Nguyen et al. 2020: per layer and overall, the %% of the attention mass of "
                        "root, node and leaf queries on nodes (the rest on leaves)")
    p.add_argument("--data", metavar="DIR", help="data directory (default: the one recorded in the checkpoint)")
    p.add_argument("--format", choices=["labels", "jsonl"], default="labels",
                   help="labels: one class name per line; jsonl: one JSON object per line (label, probabilities)")
    add_device_args(p, "the classifier and the raw-text parser (--parser)")
    p.add_argument("--max-tokens", type=int, default=4096, metavar="N", help="leaves + nodes per batch")
    p.add_argument("--batch-size", type=int, default=256, metavar="N", help="sentences per batch")
    g = p.add_argument_group("raw text")
    g.add_argument("--parser", choices=["stanza", "lal", "induced"], default="stanza", help="parser backend")
    g.add_argument("--tokenize", choices=["moses", "none"], default="moses",
                   help="as fairseq-tree-preprocess: moses (PTB conventions) or whitespace")
    g.add_argument("--parse-batch-size", type=int, default=256, metavar="N", help="sentences per parser call")
    add_backend_args(p, device=False)  # --device above serves the parser too
    return p


def read_lines(path: str) -> Iterable[Tuple[int, str]]:
    """(line number, stripped text) of every line; an empty or undecodable line is a ``ValueError`` FILE:LINE."""

    with open(path, "rb") as f:
        for lineno, raw in enumerate(f, 1):
            try:
                yield lineno, check_line(decode_line(raw.rstrip(b"\r\n")))
            except InputError as e:
                raise ValueError(f"{path}:{lineno}: {e.message}") from None


def _gold_labels(path: str, scheme, count: int, input_path: str) -> List[str]:
    labels = []
    for lineno, text in read_lines(path):
        try:
            labels.append(scheme.check_label(text))
        except ValueError as e:
            raise ValueError(f"{path}:{lineno}: {e}") from None
    if len(labels) != count:
        short, n, other, m = (path, len(labels), input_path, count) if len(labels) < count else \
            (input_path, count, path, len(labels))
        raise ValueError(f"{short}:{n + 1}: file ends after {n} lines, but {other} has {m} lines "
                         "(labels and input must be parallel)")
    return labels


def _parse_raw(path: str, lines, args) -> List[str]:
    """Tokenize and parse raw lines with the preprocessing backends -> bracketed trees; errors FILE:LINE."""

    parse = RawTextParser(args.parser, args.tokenize, "en", **parser_options(args))
    try:
        return parse([text for _, text in lines], args.parse_batch_size)
    except ParseError as e:
        raise ValueError(f"{path}:{lines[e.index][0]}: parser failed: {e.message}") from None


def read_examples(clf, args, scheme):
    """The examples of ``args.input`` (see the module docstring); ``ValueError`` FILE:LINE on bad input."""

    lines = list(read_lines(args.input))
    if not lines:
        raise ValueError(f"{args.input}: empty file")
    labels = _gold_labels(args.labels, scheme, len(lines), args.input) if args.labels else None
    try:
        examples, fmt = examples_from_texts(clf, [t for _, t in lines], scheme, args.input_format,
                                            lambda texts: _parse_raw(args.input, lines, args), labels)
    except ExampleError as e:
        raise ValueError(f"{args.input}:{lines[e.index][0]}: {e.message}") from None
    logger.info("%s: %d sentences (%s)", args.input, len(examples), fmt)
    return examples


def format_attention(share: dict) -> str:
    rows = [f"attention mass on nodes, % (the rest on leaves); nodes are {share['key_nodes_pct']}% of the keys",
            "layer     " + "".join(f"{g + ' queries':>15}" for g in share["overall"])]
    for k, layer in enumerate(share["layers"], 1):
        rows.append(f"{k:<10}" + "".join(f"{v:>15.2f}" for v in layer.values()))
    rows.append(f"{'overall':<10}" + "".join(f"{v:>15.2f}" for v in share["overall"].values()))
    return "\n".join(rows)


def main(argv=None) -> dict:
    args = get_parser().parse_args(argv)
    clf = Classifier(args.path, data=args.data, device=args.device, max_tokens=args.max_tokens,
                     batch_size=args.batch_size)
    scheme = clf.scheme(args.binary)
    examples = read_examples(clf, args, scheme)
    probs, scores = clf.predict(examples, binary=args.binary, progress="classify")
    preds = probs.argmax(-1).tolist()
    names = scheme.classes
    if args.format == "jsonl":
        text = "".join(json.dumps(Classification(names[int(p.argmax())], dict(zip(names, p.tolist()))).to_json())
                       + "\n" for p in probs)
    else:
        text = "".join(names[p] + "\n" for p in preds)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    if args.attention_share:
        scores["attention_share"] = clf.attention_share(examples)
        print(format_attention(scores["attention_share"]), file=sys.stderr)
    if scores:
        print(json.dumps(scores))
    return scores


def cli_main() -> int:
    logging.basicConfig(format="%(asctime)s | %(levelname)s | %(name)s | %(message)s", level=logging.INFO,
                        stream=sys.stderr)
    try:
        main()
    except (ValueError, FileNotFoundError, UnsafeCheckpointError) as e:  # (a missing model or data directory)
        print(f"fairseq-tree-classify: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(cli_main())
