"""The weights a fairseq-train run starts from, saved as a checkpoint (issue 49: is an inverted StructFormer run
decided by its init draw or by its training draws?).

fairseq-train seeds torch with --seed, sets up the task and builds the model: those are the initial weights. Every
later draw (batch order: seed + epoch; masks: seed, epoch, index; dropout: seed + update number) is re-seeded from
--seed. This script takes the same training flags, does the same three steps and saves the model through fairseq's
Trainer, so that

    python scripts/diagnostics/init_checkpoint.py --out init_s3.pt -- DATA --task ... --seed 3
    fairseq-train DATA --task ... --seed 1 --finetune-from-model init_s3.pt
    # or from a recipe's run (its flags.txt), with another seed:
    python scripts/diagnostics/init_checkpoint.py --out init_s3.pt --flags RUN/flags.txt --seed 3

trains seed 3's initial weights on seed 1's batches, masks and dropout (with --seed 3 it is seed 3's run, update
for update: tests/integration/test_tree_induction.py). With the induction recipe: EXTRA="--finetune-from-model
init_s3.pt" (fairseq reads it only when the run directory has no checkpoint_last.pt, so resumes are unchanged).
"""

import argparse
import os
import sys
from pathlib import Path

import numpy as np
from fairseq import options, tasks, utils
from fairseq.dataclass.utils import convert_namespace_to_omegaconf
from fairseq.trainer import Trainer


def save_initial_weights(train_flags, out):
    """train_flags: fairseq-train's argument list (data directory first) -> writes the checkpoint `out`."""
    parser = options.get_training_parser()
    cfg = convert_namespace_to_omegaconf(options.parse_args_and_arch(parser, input_args=train_flags))
    np.random.seed(cfg.common.seed)  # fairseq_cli/train.py's order: seed, task, model, criterion
    utils.set_torch_seed(cfg.common.seed)
    task = tasks.setup_task(cfg.task)
    model = task.build_model(cfg.model)
    criterion = task.build_criterion(cfg.criterion)
    trainer = Trainer(cfg, task, model, criterion)
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    trainer.consolidate_optimizer()  # as checkpoint_utils.save_checkpoint does first
    trainer.save_checkpoint(out, {})


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    cut = argv.index("--") if "--" in argv else len(argv)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="the checkpoint to write")
    parser.add_argument("--flags", help="a file of fairseq-train flags (a recipe's flags.txt) before those after --")
    parser.add_argument("--seed", type=int, help="the seed whose initial weights to save (in place of the flags')")
    args = parser.parse_args(argv[:cut])
    flags = (Path(args.flags).read_text(encoding="utf-8").split() if args.flags else []) + argv[cut + 1 :]
    if not flags:
        parser.error("no training flags: give --flags FILE or -- FAIRSEQ_TRAIN_FLAGS (data directory first)")
    if "--user-dir" not in flags:  # the recipes pass it outside flags.txt
        flags += ["--user-dir", str(Path(__file__).resolve().parents[2] / "fairseq_tree")]
    if args.seed is not None:
        flags += ["--seed", str(args.seed)]  # argparse keeps the last
    save_initial_weights(flags, args.out)
    print(args.out)


if __name__ == "__main__":
    main()
