"""``fairseq-tree-export``: a checkpoint as a portable model folder, loadable from any working directory with
nothing else (library: :mod:`fairseq_tree.inference.export`).

    fairseq-tree-export ckpt/checkpoint_best.pt models/tree2seq [--parser models/lal] [--scores scores.json]
    python -c "from fairseq_tree.models.tree2seq_transformer import Tree2SeqModel as M; \\
               print(M.from_pretrained('models/tree2seq').translate('(ROOT (S (NP (NNS Dogs)) (VP (VBP run))))'))"

Writes ``OUT/model.pt`` (without the optimizer state unless ``--keep-optimizer``), the dictionaries, ``bpe.codes``
and ``classification.json`` of the model's data directory, ``OUT/parser/`` (``--parser``: the parser a tree2seq
model or classifier reads raw text with: a lal_parser or tree-induction checkpoint, exported in turn, or a stanza
model directory) and ``OUT/model_card.json`` (task, arch, parameters, updates, training data and flags, files,
``--scores``). Every hub's ``from_pretrained(OUT)`` and the CLIs' ``--path OUT`` load it.
"""

import argparse
import json
import sys

from fairseq_tree.cli.logs import setup_logging
from fairseq_tree.inference.export import export
from fairseq_tree.safe_loading import UnsafeCheckpointError
from fairseq_tree.utils.help_text import ArgumentParser


def get_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog="fairseq-tree-export", description=__doc__.split("\n\n")[0])
    p.add_argument("checkpoint", help="a checkpoint of any fairseq-tree task")
    p.add_argument("out", help="the folder to write (created; files in it are replaced)")
    p.add_argument("--data", metavar="DIR", help="the data-bin with the dictionaries, when not where the checkpoint "
                                                 "says")
    p.add_argument("--parser", metavar="CKPT_OR_DIR",
                   help="the raw-text parser to bundle: a lal_parser / tree-induction checkpoint or a stanza model "
                        "directory")
    p.add_argument("--scores", metavar="JSON", help="a JSON file of scores to record in the model card")
    p.add_argument("--keep-optimizer", action="store_true", help="keep the optimizer state (to resume training)")
    return p


def main(argv=None) -> dict:
    args = get_parser().parse_args(argv)
    scores = None
    if args.scores:
        with open(args.scores, encoding="utf-8") as f:
            scores = json.load(f)
    card = export(args.checkpoint, args.out, data=args.data, keep_optimizer=args.keep_optimizer,
                  parser=args.parser, scores=scores)
    print(f"{args.out}: {card['task']} / {card['arch']}, {card['parameters']:,} parameters; files: "
          f"{', '.join(card['files'])}{' + parser/' if 'parser' in card else ''}")
    return card


def cli_main(argv=None) -> None:
    setup_logging()
    try:
        main(argv)
    except (UnsafeCheckpointError, ValueError, FileNotFoundError, json.JSONDecodeError) as e:
        sys.exit(f"fairseq-tree-export: error: {e}")


if __name__ == "__main__":
    cli_main()
