"""``fairseq-tree-report``: results of finished runs from the files fairseq wrote (no model runs here).

    fairseq-tree-report translation RUN_DIR [RUN_DIR ...] --reference raw/test.de --lang de --lowercase \\
        [--baseline BASELINE_RUN_DIR] [--patience 10]  # one JSON line per run
    fairseq-tree-report patience RUN_DIR/train.log --patience 10  # "EPOCH UPDATES" once stopped, else nothing
    fairseq-tree-report tree2seq WORK --tgts de fr --trees stanza trivial   # scripts/recipes/train_tree2seq_multi30k.sh
    fairseq-tree-report sst WORK                                            # scripts/recipes/train_sst.sh
    fairseq-tree-report curves LOG [LOG ...] --names A B --metric uf1 --png curve.png
    fairseq-tree-report anchor WORK --reference test.de --lang de                # scripts/recipes/multi30k_anchor.sh
    fairseq-tree-report induction WORK                                       # scripts/recipes/induction_wsj.sh
    fairseq-tree-report seeds --below 16.7 --at 500 --group A RUN... --group B RUN...  # failed seeds, Fisher

``translation``: a run directory holds ``train.log`` and ``test.gen`` (``fairseq-generate --remove-bpe`` on the
test set; ``valid.gen`` too when present). Reported: fairseq's BLEU of each .gen (on the tokenized text, as
fairseq prints it), sacreBLEU of the Moses-detokenized hypotheses against ``--reference`` (the raw text;
``--lowercase`` for lowercased systems), its signature, the training's updates, epochs, minutes, device and
validation losses, and with ``--baseline`` sacreBLEU's paired-bootstrap p-value against that run on the same test
set. With ``--patience`` the updates and epochs are those where one uninterrupted run stops.

``patience``: where one uninterrupted ``fairseq-train --patience P`` run stops, from the log of a run that may have
been resumed (fairseq counts afresh after a resume; a recipe stops the run there:
``scripts/recipes/multi30k_anchor.sh``). The library is :mod:`fairseq_tree.evaluation.translation_runs`.
"""

import argparse
import json
import logging
import sys
from pathlib import Path

from fairseq_tree.cli import report_anchor, report_curves, report_induction, report_seeds, report_sst, report_tree2seq
from fairseq_tree.evaluation.translation_runs import (
    RunError,
    detokenize,
    fairseq_bleu,
    generate_lines,
    paired_p,
    patience_stop,
    sacrebleu_score,
    saved_scores,
    training,
)
from fairseq_tree.utils.help_text import ArgumentParser

#: the recipes' result tables: ``fairseq-tree-report NAME --help`` lists each one's options
TABLES = {"tree2seq": report_tree2seq, "sst": report_sst, "curves": report_curves, "anchor": report_anchor,
          "induction": report_induction, "seeds": report_seeds}


def get_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog="fairseq-tree-report", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="kind", required=True)
    t = sub.add_parser("translation", help="BLEU (fairseq's and sacreBLEU) and training of translation runs")
    t.add_argument("runs", nargs="+", metavar="RUN_DIR")
    t.add_argument("--reference", required=True, help="the raw (untokenized) test references, one per line")
    t.add_argument("--lang", required=True, help="target language (Moses detokenizer)")
    t.add_argument("--lowercase", action="store_true", help="sacreBLEU -lc (for systems trained on lowercased text)")
    t.add_argument("--baseline", metavar="RUN_DIR", help="a paired bootstrap against this run's test output")
    t.add_argument("--bootstrap-samples", type=int, default=1000)
    t.add_argument("--patience", type=int, metavar="P",
                   help="the training's --patience: report updates and epochs where an uninterrupted run stops")
    s = sub.add_parser("patience", help="where one uninterrupted fairseq-train --patience run stops (resumed runs)")
    s.add_argument("log", metavar="TRAIN_LOG", help="fairseq-train's log (a resumed run's segments appended)")
    s.add_argument("--patience", type=int, required=True, metavar="P")
    s.add_argument("--maximize", action="store_true", help="as --maximize-best-checkpoint-metric")
    for name, module in TABLES.items():
        sub.add_parser(name, add_help=False, help=module.__doc__.split("\n\n")[0].replace("\n", " "))
    return p


def translation(run: Path, refs, args) -> dict:
    hyps = detokenize(generate_lines(run / "test.gen", "H"), args.lang)
    bleu, signature = sacrebleu_score(hyps, refs, args.lowercase)
    log = training(run / "train.log")
    stop = patience_stop(run / "train.log", args.patience) if args.patience else None
    out = {"run": str(run), "test_fairseq_bleu": fairseq_bleu(run / "test.gen"), "test_sacrebleu": round(bleu, 2),
           "sacrebleu_signature": signature, "updates": stop.updates if stop else log.updates,
           "epochs": stop.epoch if stop else log.epochs,
           "train_minutes": round(log.minutes, 1), "device": log.device,
           "best_valid_loss": min(log.valid_losses) if log.valid_losses else None}
    if stop:  # the validations up to the stop (a resumed run may have gone on past it)
        out["best_valid_loss"] = min(score for at, score in saved_scores(run / "train.log") if at <= stop)
    if args.patience:
        out["stopped_by_patience"] = stop is not None
    if (run / "valid.gen").is_file():
        out["valid_fairseq_bleu"] = fairseq_bleu(run / "valid.gen")
    if args.baseline:
        base = detokenize(generate_lines(Path(args.baseline) / "test.gen", "H"), args.lang)
        out["baseline"] = args.baseline
        out["paired_p"] = paired_p(base, hyps, refs, args.bootstrap_samples, args.lowercase)
    return out


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in TABLES:  # the results tables of the recipes, with their own options
        return TABLES[argv[0]].main(argv[1:]) or 0
    args = get_parser().parse_args(argv)
    try:
        if args.kind == "patience":
            stop = patience_stop(Path(args.log), args.patience, args.maximize)
            if stop:
                print(stop.epoch, stop.updates)
            return 0
        refs = Path(args.reference).read_text(encoding="utf-8").splitlines()
        for run in args.runs:
            print(json.dumps(translation(Path(run), refs, args)))
    except (RunError, OSError) as e:
        print(f"fairseq-tree-report: error: {e}", file=sys.stderr)
        return 2
    return 0


def cli_main() -> None:
    # importing fairseq set the root logger to DEBUG (its wav2vec2_classification calls logging.basicConfig), and
    # --png's matplotlib would print its font search: its logger alone, in this CLI's process
    logging.getLogger("matplotlib").setLevel(logging.WARNING)
    sys.exit(main())


if __name__ == "__main__":
    cli_main()
