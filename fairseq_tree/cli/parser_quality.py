"""The quality of the trees a tree2seq run was given: a parser backend of the preprocessing pipeline (or the
trivial right-branching control) run on the words of gold treebanks, scored as the literature does.

    fairseq-tree-parser-quality --parser stanza --stanza-model-dir work/stanza_en_ptb --out DIR
    fairseq-tree-parser-quality --parser lal --parser-model ckpt_lal/checkpoint_best.pt --out DIR
    fairseq-tree-parser-quality --parser induced --parser-model ckpt_sf/checkpoint_best.pt --out DIR
    fairseq-tree-parser-quality --parser right --out DIR
    ... --gold GOLD.mrg [GOLD.mrg ...] (required: e.g. WSJ section 22 and a held-out PTB file)

The backend sees exactly what the pipeline gives it: the words only (gold -NONE- elements removed; no gold POS
tags), so the scores are those of the trees behind the BLEU. ``right`` keeps the gold POS tags (as
``fairseq-tree-trivial-trees`` keeps the parser's) under right-branching ``X`` constituents.
Writes DIR/NAME.trees per gold file and prints one JSON line per file: ``f1`` (EVALB, COLLINS.prm, labelled;
null for unlabelled trees: ``induced``, ``right``), ``uf1`` and ``corpus_f1`` (unlabelled, the unsupervised
literature's rules: every parser comparable), ``sentences``, ``evalb_skipped``.
"""

import argparse
import json
import sys
from pathlib import Path

from fairseq_tree.evaluation import bracket_f1, unsupervised
from fairseq_tree.parsers import ParseError, build_parser
from fairseq_tree.safe_loading import UnsafeCheckpointError
from fairseq_tree.trees import atomic_write_text, read_parse_trees, to_brackets
from fairseq_tree.utils.help_text import ArgumentParser


def right_branching(trees):
    return [to_brackets(unsupervised.trivial_tree(t, "right")) for t in trees]


def build_backend(args):
    """The pipeline's parser backend for ``args.parser`` (None for ``right``), loaded once for every gold file."""
    if args.parser == "right":
        return None

    if args.parser == "stanza":
        return build_parser("stanza", model_dir=args.stanza_model_dir, batch_size=args.batch_size)
    return build_parser(args.parser, model=args.parser_model, data=args.parser_data, batch_size=args.batch_size)


def parse(backend, name, sentences):
    out = backend.parse_all(sentences)
    failed = [r for r in out if isinstance(r, ParseError)]
    if failed:  # a blank line is EVALB's "skip": counted in evalb_skipped, never silently dropped
        print(f"{name}: {len(failed)} sentences not parsed, first: {failed[0]}", file=sys.stderr)
    return ["" if isinstance(r, ParseError) else r for r in out]


def main(argv=None):
    ap = ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--parser", choices=["stanza", "lal", "induced", "right"], required=True)
    ap.add_argument("--parser-model", help="lal / induced: the checkpoint")
    ap.add_argument("--parser-data", help="lal / induced: its data directory (default: recorded in the checkpoint)")
    ap.add_argument("--stanza-model-dir", help="stanza: a directory written by fairseq-tree-train-stanza")
    ap.add_argument("--gold", nargs="+", required=True, metavar="MRG",
                    help="gold treebanks (.mrg), e.g. wsj22.mrg and a held-out PTB file")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    backend = build_backend(args)
    results = []
    for gold in args.gold:
        trees = list(read_parse_trees(gold))
        pred = right_branching(trees) if backend is None else parse(backend, args.parser, [t.words for t in trees])
        pred_path = out_dir / f"{Path(gold).stem}.trees"
        atomic_write_text(str(pred_path), "\n".join(pred) + "\n")
        unsup = unsupervised.score_files(gold, str(pred_path))
        labelled = args.parser in ("stanza", "lal")
        evalb = bracket_f1.score_files(gold, str(pred_path)).result() if labelled else None
        r = {"parser": args.parser, "gold": gold, "sentences": len(trees),
             "f1": evalb["f1"] if evalb else None, "evalb_skipped": evalb["skipped"] if evalb else None,
             "uf1": unsup["uf1"], "corpus_f1": unsup["corpus_f1"]}
        print(json.dumps(r))
        results.append(r)
    return results


def cli_main() -> None:
    try:
        rc = main(sys.argv[1:])
    except (ValueError, FileNotFoundError, UnsafeCheckpointError) as e:  # a parser that cannot be loaded, bad input
        sys.exit(f"fairseq-tree-parser-quality: error: {e}")
    sys.exit(rc if isinstance(rc, int) else 0)


if __name__ == "__main__":
    cli_main()
