"""``fairseq-tree-average``: average the parameters of checkpoints (fairseq's ``scripts/average_checkpoints.py``,
which the fairseq package does not install), e.g. the last 5 of a run before ``fairseq-generate``:

    fairseq-tree-average --inputs ckpt/ --num-update-checkpoints 5 --output ckpt/checkpoint_avg5.pt
    fairseq-tree-average --inputs ckpt/ --num-epoch-checkpoints 5 --checkpoint-upper-bound 40 --output avg.pt
    fairseq-tree-average --inputs a.pt b.pt c.pt --output avg.pt

The last N update checkpoints need ``fairseq-train --save-interval-updates U --keep-interval-updates N``;
epoch checkpoints are ``checkpointE.pt``. Prints the averaged files, newest first. The library is
:mod:`fairseq_tree.inference.average`.
"""

import argparse
import sys

from fairseq_tree.cli.logs import setup_logging
from fairseq_tree.inference.average import CheckpointError, average_checkpoints, last_checkpoints, save_atomic
from fairseq_tree.safe_loading import UnsafeCheckpointError
from fairseq_tree.utils.help_text import ArgumentParser


def positive(value: str) -> int:
    n = int(value)
    if n < 1:
        raise argparse.ArgumentTypeError(f"{value}: must be at least 1")
    return n


def get_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog="fairseq-tree-average", description=(
        "Average the parameters of fairseq checkpoints (the output keeps the first input's config and state)."))
    p.add_argument("--inputs", nargs="+", required=True,
                   help="checkpoint files, or one directory with --num-update-checkpoints/--num-epoch-checkpoints")
    p.add_argument("--output", required=True, help="the averaged checkpoint (written atomically)")
    n = p.add_mutually_exclusive_group()
    n.add_argument("--num-update-checkpoints", type=positive, metavar="N",
                   help="average the last N checkpoint_E_U.pt of the directory")
    n.add_argument("--num-epoch-checkpoints", type=positive, metavar="N",
                   help="average the last N checkpointE.pt of the directory")
    p.add_argument("--checkpoint-upper-bound", type=int, metavar="U",
                   help="only checkpoints of at most this update (or epoch) number")
    return p


def main(argv=None) -> int:
    args = get_parser().parse_args(argv)
    count = args.num_update_checkpoints or args.num_epoch_checkpoints  # both >= 1 when given
    try:
        if count is not None:
            if len(args.inputs) != 1:
                raise CheckpointError("--num-*-checkpoints takes one directory as --inputs")
            by = "update" if args.num_update_checkpoints else "epoch"
            paths = last_checkpoints(args.inputs[0], count, by, args.checkpoint_upper_bound)
        else:
            if args.checkpoint_upper_bound is not None:
                raise CheckpointError("--checkpoint-upper-bound needs --num-update-checkpoints or "
                                      "--num-epoch-checkpoints")
            paths = args.inputs
        save_atomic(average_checkpoints(paths, progress="average"), args.output)
    except (CheckpointError, UnsafeCheckpointError, OSError) as e:
        print(f"fairseq-tree-average: error: {e}", file=sys.stderr)
        return 2
    print(f"averaged {len(paths)} checkpoints into {args.output}:")
    for path in paths:
        print(f"  {path}")
    return 0


def cli_main() -> None:
    setup_logging()
    sys.exit(main())


if __name__ == "__main__":
    cli_main()
