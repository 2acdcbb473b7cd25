"""``fairseq-tree-preprocess``: parse, BPE and binarize a parallel (or monolingual) corpus of source trees,
or (``--task classification``) a corpus of trees with classes.

Flags follow ``fairseq-preprocess`` where they overlap. See the README for the files it writes.
"""

from __future__ import annotations

import argparse
import logging
import os
import shlex
import sys

from fairseq_tree.data.class_labels import ClassScheme
from fairseq_tree.preprocess.config import PreprocessConfig
from fairseq_tree.preprocess.launcher import add_launcher_args
from fairseq_tree.preprocess.pipeline import run
from fairseq_tree.preprocess.shards import PreprocessError
from fairseq_tree.safe_loading import UnsafeCheckpointError
from fairseq_tree.utils.devices import add_device_args
from fairseq_tree.utils.help_text import ArgumentParser


def add_backend_args(p: argparse.ArgumentParser, device: bool = True) -> None:
    """Options of the parser backends (``--parser-model``, ``--parser-data``, ``--device``, stanza's models); shared
    with ``fairseq-tree-classify``, which parses raw text on the fly
    (:func:`fairseq_tree.preprocess.pipeline.parser_options`)
    and passes ``device=False``: its own ``--device`` (same checks) serves the classifier and the parser."""

    g = p.add_argument_group("parser backends")
    if device:
        add_device_args(g, "the parser (stanza, lal, induced): its model and batches; CUDA where torch sees none "
                           "is an error before any work starts")
    g.add_argument("--parser-model", metavar="CKPT",
                   help="with --parser lal: a lal_parser checkpoint (trained with --no-pos-tags); with --parser "
                        "induced: a tree_induction checkpoint")
    g.add_argument("--parser-data", metavar="DIR",
                   help="with --parser lal|induced: the data-bin the checkpoint was trained on (its dictionaries); "
                        "default: the directory recorded in the checkpoint")

    g = p.add_argument_group("stanza")
    g.add_argument("--stanza-model-dir", metavar="DIR",
                   help="a directory written by fairseq-tree-train-stanza (pos.pt, constituency.pt, "
                        "pretrain.pt)")
    g.add_argument("--stanza-pos-model", metavar="FILE")
    g.add_argument("--stanza-constituency-model", metavar="FILE")
    g.add_argument("--stanza-pretrain", metavar="FILE", help="word vectors (pretrain.pt) of both models")
    g.add_argument("--stanza-lang", default="en", metavar="LANG",
                   help="the language stanza parses (its models and resources; default: en)")
    g.add_argument("--stanza-download", action="store_true",
                   help="allow downloading stanza's models of --stanza-lang (needs a network)")
    g.add_argument("--stanza-batch-size", type=int, default=64, metavar="N",
                   help="sentences per stanza constituency batch")


def get_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(
        prog="fairseq-tree-preprocess",
        description="Tokenize, parse, BPE-split and binarize a corpus into a data-bin directory of source "
                    "trees (leaves, node labels, spans) and target sentences, or (--task classification) trees "
                    "and the classes of their sentences, nodes and leaves.")
    g = p.add_argument_group("data (as fairseq-preprocess)")
    g.add_argument("--task", choices=["translation", "classification"], default="translation",
                   help="translation: source trees and target sentences (tree_translation); classification: trees "
                        "and their classes (tree_classification, see the classification options)")
    g.add_argument("-s", "--source-lang", required=True, metavar="SRC",
                   help="suffix of the source files (FP.SRC); for SST's train.txt/dev.txt: -s txt")
    g.add_argument("-t", "--target-lang", metavar="TGT",
                   help="suffix of the target files (FP.TGT); with --task classification --labels file: of the "
                        "label files (default: label)")
    g.add_argument("--trainpref", metavar="FP", help="train file prefix: FP.SRC, FP.TGT")
    g.add_argument("--validpref", metavar="FP")
    g.add_argument("--testpref", metavar="FP")
    g.add_argument("--destdir", default="data-bin", metavar="DIR")
    g.add_argument("--only-source", action="store_true", help="monolingual: binarize source trees only")
    g.add_argument("--workers", type=int, default=1, metavar="N", help="worker processes")
    g.add_argument("--joined-dictionary", action="store_true", help="one dictionary for source and target")
    g.add_argument("--srcdict", metavar="FP")
    g.add_argument("--tgtdict", metavar="FP")
    g.add_argument("--labeldict", metavar="FP", help="reuse a node-label dictionary")
    g.add_argument("--nwordssrc", type=int, default=-1, metavar="N")
    g.add_argument("--nwordstgt", type=int, default=-1, metavar="N")
    g.add_argument("--thresholdsrc", type=int, default=0, metavar="N")
    g.add_argument("--thresholdtgt", type=int, default=0, metavar="N")

    g = p.add_argument_group("tokenization, parsing, subwords")
    g.add_argument("--tokenize", choices=["moses", "none"], default="moses",
                   help="moses: sacremoses (PTB conventions on the source side); none: split on whitespace")
    g.add_argument("--parser", choices=["stanza", "lal", "induced", "given"], default=None,
                   help="stanza: stanza's constituency parser; lal: our Label Attention Layer parser "
                        "(--parser-model); induced: unsupervised trees of a tree_induction checkpoint "
                        "(constituent_transformer, structformer; --parser-model); given: trees are read, one "
                        "bracketed tree per line, from SRC files or --trees-dir. Default: stanza (given with "
                        "--labels nodes)")
    g.add_argument("--trees-dir", metavar="DIR",
                   help="with --parser given: read DIR/{split}.SRC.trees (e.g. a previous run's destdir) and "
                        "check their leaves against the tokenized SRC text")
    g.add_argument("--unary", choices=["lowest", "highest", "join"], default="lowest",
                   help="which label a collapsed unary chain keeps")
    g.add_argument("--bpe-codes", metavar="FILE", help="subword-nmt codes to apply")
    g.add_argument("--bpe-merges", type=int, metavar="N", help="learn N BPE merges on the training split")
    g.add_argument("--max-positions", type=int, default=1024, metavar="N",
                   help="longest source (leaves + nodes) and target (tokens + EOS)")
    g.add_argument("--on-error", choices=["fail", "skip"], default="fail",
                   help="fail: stop at the first bad line, naming file and line; skip: drop the pair on both "
                        "sides and list it with its reason in preprocess.json")
    g.add_argument("--parse-batch-size", type=int, default=256, metavar="N", help="sentences per parser call")
    g.add_argument("--shard-size", type=int, default=2000, metavar="N",
                   help="lines per shard (the unit of parallel work and of resuming)")
    g.add_argument("--keep-work", action="store_true", help="keep DESTDIR/.work (per-shard intermediates)")

    g = p.add_argument_group("sharded output (fairseq's DESTDIR/shard0:DESTDIR/shard1:... layout)")
    g.add_argument("--num-shards", type=int, default=None, metavar="K",
                   help="cut the training split into K parts of consecutive lines, written to DESTDIR/shard0 .. "
                        "shard{K-1} (valid and test go whole into shard0); every shard directory holds the same "
                        "dictionaries and codes. Without --shard-id: one command does all (see --launcher)")
    g.add_argument("--shard-id", type=int, default=None, metavar="I",
                   help="make only DESTDIR/shardI, independently of the other shards (one task of a job array), "
                        "with the dictionaries and codes of a first --dict-only run into DESTDIR, or those given "
                        "by --srcdict/--tgtdict/--labeldict/--bpe-codes")
    g.add_argument("--dict-only", action="store_true",
                   help="the first pass of --shard-id runs: parse and BPE the training split, learn the codes "
                        "(--bpe-merges) and write the dictionaries into DESTDIR; no datasets")

    g = p.add_argument_group("classification (--task classification)")
    g.add_argument("--labels", choices=["nodes", "file"], default=None,
                   help="nodes: the SRC files hold class-labelled trees, a class on every node, preterminals "
                        "included (SST format; the root's class is the sentence's): targets for the sentence, every "
                        "node and every word; file: FP.TGT (-t, default label) holds one class per line, the "
                        "sentence's, beside the text (or trees) of FP.SRC, parsed by --parser")
    g.add_argument("--num-classes", type=int, default=5, metavar="N", help="labels are 0 .. N-1 (default 5: SST)")
    g.add_argument("--class-names", metavar="A,B,..", help="labels are these names instead (class i = name i)")
    g.add_argument("--binary", action="store_true",
                   help="the SST-2 view of 5 classes: 0-1 negative, 3-4 positive; sentences whose root is 2 "
                        "(neutral) are dropped (counted in preprocess.json), neutral nodes and words get no target")
    g.add_argument("--node-inputs", choices=["symbol", "syntax"], default="symbol",
                   help="what the model reads on a node (never its class): symbol: one nonterminal symbol X; "
                        "syntax: the parser's constituent labels (POS tags on BPE nodes), --labels file only")

    add_backend_args(p)

    add_launcher_args(p)
    return p


def check_shard_args(args, parser: argparse.ArgumentParser) -> None:
    """--num-shards / --shard-id / --dict-only / --launcher combinations."""
    if args.num_shards is not None and args.num_shards < 1:
        parser.error("--num-shards must be positive")
    if args.shard_id is not None:
        if args.num_shards is None:
            parser.error("--shard-id goes with --num-shards")
        if not 0 <= args.shard_id < args.num_shards:
            parser.error(f"--shard-id must be in 0 .. {args.num_shards - 1}")
    if args.dict_only and args.num_shards is not None:
        parser.error("--dict-only is the first pass before the --shard-id runs: give it without --num-shards")
    if args.jobs is not None and args.jobs < 1:
        parser.error("--jobs must be positive")


def check_task_args(args, parser: argparse.ArgumentParser) -> None:
    """Resolve the defaults that depend on --task / --labels; refuse flags that do not fit."""
    classification = args.task == "classification"
    given = [f for f in ("labels", "binary", "class_names") if getattr(args, f)]
    if not classification and (given or args.node_inputs != "symbol"):
        parser.error("--labels, --binary, --class-names and --node-inputs go with --task classification")
    if classification:
        if args.only_source:
            parser.error("--task classification has no --only-source (its targets are the classes)")
        args.labels = args.labels or "file"
        if args.labels == "nodes":
            if args.parser not in (None, "given"):
                parser.error("--labels nodes reads the trees from the SRC files: --parser given (the default)")
            if args.target_lang:
                parser.error("--labels nodes reads the classes from the trees: no -t")
            if args.node_inputs == "syntax":
                parser.error("--node-inputs syntax needs syntactic trees: class-labelled trees (--labels nodes) "
                             "have none")
            args.parser = "given"
        else:
            args.target_lang = args.target_lang or "label"
        try:
            ClassScheme.make(args.num_classes, args.class_names, args.binary)
        except ValueError as e:
            parser.error(str(e))
    args.parser = args.parser or "stanza"


def cli_main(argv=None) -> int:
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    logging.basicConfig(format="%(asctime)s | %(levelname)s | %(name)s | %(message)s",
                        level=logging.INFO, stream=sys.stderr)
    args = get_parser().parse_args(argv)
    check_task_args(args, get_parser())
    check_shard_args(args, get_parser())
    if args.bpe_codes and args.bpe_merges:
        get_parser().error("give --bpe-codes or --bpe-merges, not both")
    if args.parser in ("lal", "induced") and not args.parser_model:
        get_parser().error(f"--parser {args.parser} needs --parser-model CKPT")
    if args.parser_model and args.parser not in ("lal", "induced"):
        get_parser().error("--parser-model only goes with --parser lal or induced")
    if args.trees_dir and args.parser != "given":
        get_parser().error("--trees-dir only goes with --parser given")
    if args.workers < 1 or args.shard_size < 1:
        get_parser().error("--workers and --shard-size must be positive")

    try:
        run(PreprocessConfig.from_args(args))
    except (PreprocessError, UnsafeCheckpointError) as e:
        logging.getLogger("fairseq_tree.preprocess").error("%s", e)
        print(f"fairseq-tree-preprocess: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # Ctrl-C: the worker processes ignore it (the run stops them), so this one line
        print(interrupted(sys.argv[1:] if argv is None else argv), file=sys.stderr)
        return 130
    return 0


def interrupted(argv) -> str:
    """The line Ctrl-C prints: the shards done are kept (``DESTDIR/.work``), the same command resumes."""
    command = shlex.join(["fairseq-tree-preprocess", *map(str, argv)])
    return f"fairseq-tree-preprocess: interrupted; the shards done are kept, and the same command resumes: {command}"


if __name__ == "__main__":
    sys.exit(cli_main())
