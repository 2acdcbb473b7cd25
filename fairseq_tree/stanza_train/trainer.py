"""Train stanza's English POS tagger and constituency parser on a local treebank, fully offline.

    fairseq-tree-train-stanza TREEBANK_DIR OUTDIR [--size tiny|small|base] [--max-train N] ...

Steps (progress is logged to stderr, the trainers' full output goes to OUTDIR/logs/):

1. **Trees.** Every ``*.mrg`` in TREEBANK_DIR (or TREEBANK_DIR itself if it is a file) is read with
   ``stanza.models.constituency.tree_reader.read_treebank``: one-tree-per-line or multi-line brackets, with an
   empty outer bracket, a ``TOP``/``ROOT`` wrapper or none (a bare ``(S ...)`` gets a ``ROOT``). It prunes
   ``-NONE-``, strips function tags and turns ``-LRB-``/``-RRB-`` leaves into ``(``/``)``. Trees whose root has
   several children or a bare preterminal, or nothing left after pruning, are skipped (counted in model_info.json).
2. **Split** (deterministic). ``--dev auto`` (default): files whose name starts with ``valid``, ``dev`` or
   ``wsj22`` are the dev pool and the other files the training set; when there is no such file (or
   ``--dev slice``) the last 5 % of all trees (file order, at most 300) are held out. Then the dev set keeps its
   first ``--max-dev`` trees and the training set its first ``--max-train`` trees (preset defaults); dev trees
   with a constituent label that no training tree has are dropped first (stanza's trainer refuses them).
3. **Files.** OUTDIR/data/{train,dev}.mrg for the parser, {train,dev}.conllu for the tagger (UPOS mapped from the
   PTB tag, XPOS = PTB tag, flat heads: token 1 is the root, the others depend on it).
4. **Word vectors** from the training sentences (lowercased; plus ``--vectors-text FILE`` ... whitespace-tokenized
   text): PPMI + truncated SVD with scipy, or random vectors if scipy is missing; written as a stanza
   ``pretrain.pt`` with ``Pretrain(abs_pt_path, vec_path).load()``.
5. **Tagger**: ``stanza.models.tagger`` in a subprocess. **Parser**: ``stanza.models.constituency_parser`` in a
   subprocess with monkeypatches (the project's EVALB scorer instead of CoreNLP's Java EvalB, a no-op
   ``download_resources_json`` and ``download_method=None`` for the retagging pipeline), retagging the training
   trees with our tagger (``--retag_method xpos``).
   Both subprocesses run with ``STANZA_RESOURCES_DIR=OUTDIR`` (set before stanza is imported) and a socket guard
   that makes any internet connection fail at once, so nothing can hang on the network.
6. **Evaluation**: the finished pipeline (our tagger + parser, gold words in) parses the dev set; labeled-bracket
   P/R/F1 by the project's EVALB (COLLINS.prm, :mod:`fairseq_tree.evaluation.bracket_f1`, as fractions) and
   tagging accuracy go to model_info.json with the parse speed.

Output: OUTDIR/{pos.pt, constituency.pt, pretrain.pt, resources.json, model_info.json}, plus data/ and logs/.
Checkpoint files (``*_checkpoint.pt``) are deleted. Size presets: ``tiny`` (~20-30 s, junk trees, for tests),
``small`` (~10-12 min on 2 cores), ``base`` (stanza-like sizes; many hours on CPU, use ``--device cuda``).
"""

from __future__ import annotations

import argparse
import collections
import json
import logging
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Tuple

from fairseq_tree.evaluation.bracket_f1 import EvalbScorer, as_evalb
from fairseq_tree.parsers.stanza_parser import StanzaParser, tree_to_brackets

# data preparation (steps 1-4); re-exported for the tests and for callers of this module
from fairseq_tree.stanza_train.data import (  # noqa: F401
    DEV_NAME,
    build_vectors,
    read_text_tokens,
    read_trees,
    split_treebank,
    words_tags,
    write_conllu,
    write_mrg,
)
from fairseq_tree.trees import tree_from_brackets
from fairseq_tree.utils.help_text import ArgumentParser

logger = logging.getLogger("stanza_train")

REPO_ROOT = Path(__file__).resolve().parents[2]  # the directory holding fairseq_tree/
# internal: fairseq-tree-train-stanza --_offline-run {tagger,constituency} ARGS
OFFLINE_RUN = "--_offline-run"
RESOURCES_JSON = {"en": {"lang_name": "English"}}

PRESETS: Dict[str, dict] = {
    "tiny": dict(
        vec_dim=16, max_train=200, max_dev=50,
        tagger="--hidden_dim 32 --char_hidden_dim 32 --deep_biaff_hidden_dim 32 --composite_deep_biaff_hidden_dim 16 "
               "--word_emb_dim 16 --char_emb_dim 16 --tag_emb_dim 8 --transformed_dim 16 "
               "--batch_size 50 --max_steps 20 --eval_interval 20 --fix_eval_interval --log_step 10",
        parser="--hidden_size 32 --delta_embedding_dim 16 --tag_embedding_dim 8 --transition_embedding_dim 8 "
               "--transition_hidden_size 8 --num_lstm_layers 1 --epochs 1 --epoch_size 100"),
    "small": dict(
        vec_dim=50, max_train=None, max_dev=300,
        tagger="--hidden_dim 100 --char_hidden_dim 100 --deep_biaff_hidden_dim 100 "
               "--composite_deep_biaff_hidden_dim 50 "
               "--word_emb_dim 50 --char_emb_dim 50 --tag_emb_dim 25 --transformed_dim 50 "
               "--batch_size 50 --max_steps 400 --eval_interval 100 --fix_eval_interval --log_step 50",
        parser="--hidden_size 128 --delta_embedding_dim 50 --tag_embedding_dim 20 --transition_embedding_dim 20 "
               "--transition_hidden_size 20 --num_lstm_layers 1 --epochs 20 --epoch_size 500"),
    "base": dict(  # stanza's default model sizes, shorter schedules
        vec_dim=100, max_train=None, max_dev=None,
        tagger="--batch_size 100 --max_steps 20000 --eval_interval 200 --log_step 100",
        parser="--epochs 200 --epoch_size 0"),
}

# ================================================================================================
# offline subprocess side (socket guard + the two constituency-trainer monkeypatches)
# ================================================================================================

def install_socket_guard() -> None:
    """Make every internet connection / DNS lookup fail immediately (local AF_UNIX sockets still work)."""
    import socket

    def refuse(*args, **kwargs):
        raise OSError("network access is disabled (offline stanza training)")

    orig_connect, orig_connect_ex = socket.socket.connect, socket.socket.connect_ex

    def connect(self, address):
        if self.family in (socket.AF_INET, socket.AF_INET6):
            refuse()
        return orig_connect(self, address)

    def connect_ex(self, address):
        if self.family in (socket.AF_INET, socket.AF_INET6):
            refuse()
        return orig_connect_ex(self, address)

    socket.socket.connect, socket.socket.connect_ex = connect, connect_ex
    socket.getaddrinfo = refuse
    socket.create_connection = refuse


def bracket_scores(pairs: Iterable[Tuple[object, object]]) -> dict:
    """Labelled-bracket precision, recall and F1 (fractions) of (gold, predicted) stanza trees, and each tree's F1,
    by the project's one EVALB implementation (:mod:`fairseq_tree.evaluation.bracket_f1`, COLLINS.prm rules on the
    EVALB view of the trees' brackets), which also scores every other parser here."""
    scorer = EvalbScorer(delete_wrappers=True)  # stanza's ROOT is a wrapper, not a constituent
    for gold, pred in pairs:
        scorer.add(*(as_evalb(tree_from_brackets(tree_to_brackets(t), "join", one_word=True)) for t in (gold, pred)))
    r = scorer.result()
    tree_f1 = [2 * s.matched / (s.gold_brackets + s.pred_brackets) if s.gold_brackets + s.pred_brackets else 1.0
               for s in scorer.sentences]
    return {"precision": r["precision"] / 100, "recall": r["recall"] / 100, "f1": r["f1"] / 100,
            "tree_f1": tree_f1, "trees": len(tree_f1)}


class PyEvaluateParser:
    """Drop-in for ``stanza.server.parser_eval.EvaluateParser`` (CoreNLP/Java), only what training uses."""

    def __init__(self, *args, **kwargs):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def process(self, results):
        from types import SimpleNamespace

        def first(pred):
            pred = pred[0]
            return pred[0] if isinstance(pred, tuple) else getattr(pred, "tree", pred)  # ScoredTree(tree, score)

        s = bracket_scores((r.gold, first(r.predictions)) for r in results)
        print("PyEvaluateParser: %d trees  P=%.4f R=%.4f F1=%.4f" % (s["trees"], s["precision"], s["recall"], s["f1"]),
              flush=True)
        return SimpleNamespace(f1=s["f1"], treeF1=s["tree_f1"], HasField=lambda name: False)


def install_constituency_patches() -> None:
    import stanza.models.constituency.parser_training as parser_training
    import stanza.models.constituency.retagging as retagging

    parser_training.EvaluateParser = PyEvaluateParser
    # build_retag_pipeline() calls download_resources_json() even with a local --retag_model_path
    retagging.download_resources_json = lambda *args, **kwargs: None
    # ... and builds its Pipeline with download_method='reuse_resources', whose (empty) model download list
    # still needs a download URL in resources.json: build it exactly like our run-time pipeline instead.
    pipeline_cls = retagging.Pipeline

    def offline_pipeline(*args, **kwargs):
        kwargs["download_method"] = None
        return pipeline_cls(*args, **kwargs)

    retagging.Pipeline = offline_pipeline


def offline_run(which: str, args: List[str]) -> int:
    install_socket_guard()
    if which == "tagger":
        from stanza.models import tagger

        tagger.main(args)
    elif which == "constituency":
        install_constituency_patches()
        from stanza.models import constituency_parser

        constituency_parser.main(args)
    else:
        raise SystemExit(f"unknown trainer {which!r}")
    return 0

# ================================================================================================
# training driver
# ================================================================================================

def _subprocess_env(outdir: Path, threads: int) -> dict:
    env = dict(os.environ)
    env.update(STANZA_RESOURCES_DIR=str(outdir), OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads),
               HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TQDM_DISABLE="1", PYTHONUNBUFFERED="1")
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    return env

_NOISE = re.compile(r"it/s\]|s/it\]|\r")


def run_trainer(which: str, args: List[str], outdir: Path, log_path: Path, threads: int) -> List[str]:
    cmd = [sys.executable, "-m", "fairseq_tree.stanza_train", OFFLINE_RUN, which] + args
    logger.info("%s: %s", which, " ".join(shlex.quote(c) for c in cmd))
    lines: List[str] = []
    workdir = outdir / "work"
    workdir.mkdir(exist_ok=True)
    with open(log_path, "w", encoding="utf-8") as log:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace",
                                env=_subprocess_env(outdir, threads), cwd=str(workdir), stdin=subprocess.DEVNULL)
        assert proc.stdout is not None
        for line in proc.stdout:
            log.write(line)
            log.flush()
            lines.append(line.rstrip("\n"))
            if not _NOISE.search(line):
                logger.info("[%s] %s", which, line.rstrip()[:300])
        rc = proc.wait()
    if rc != 0:
        tail = "\n".join(lines[-25:])
        raise RuntimeError(f"stanza {which} training failed (exit {rc}); full log: {log_path}\n{tail}")
    return lines


def _last_float(lines: List[str], pattern: str, agg=max) -> Optional[float]:
    vals = [float(m.group(1)) for line in lines for m in [re.search(pattern, line)] if m]
    return agg(vals) if vals else None


def evaluate(outdir: Path, dev: list, batch_size: int, device: str) -> dict:
    """Parse the dev words with the finished pipeline; bracket F1, tag accuracy, speed."""
    from stanza.models.constituency import tree_reader

    t0 = time.perf_counter()
    parser = StanzaParser(model_dir=str(outdir), constituency_batch_size=batch_size, device=device)
    t_build = time.perf_counter() - t0
    sents = [words_tags(t)[0] for t in dev]
    t0 = time.perf_counter()
    out = []
    for i in range(0, len(sents), 256):
        out.extend(parser.parse(sents[i:i + 256]))
    t_parse = time.perf_counter() - t0
    pred = [tree_reader.read_trees(s, use_tqdm=False)[0] for s in out]
    scores = bracket_scores(zip(dev, pred))
    gold_tags = [tag for t in dev for tag in words_tags(t)[1]]
    pred_tags = [tag for t in pred for tag in words_tags(t)[1]]
    tag_acc = sum(a == b for a, b in zip(gold_tags, pred_tags)) / max(1, len(gold_tags))
    n_tok = len(gold_tags)
    return {"sentences": len(sents), "tokens": n_tok, "bracket_precision": round(scores["precision"], 4),
            "bracket_recall": round(scores["recall"], 4), "bracket_f1": round(scores["f1"], 4),
            "xpos_accuracy": round(tag_acc, 4), "pipeline_build_seconds": round(t_build, 2),
            "parse_seconds": round(t_parse, 2),
            "sentences_per_second": round(len(sents) / t_parse, 1) if t_parse > 0 else None,
            "tokens_per_second": round(n_tok / t_parse, 1) if t_parse > 0 else None,
            "torch_threads": int(__import__("torch").get_num_threads())}


def train(args: argparse.Namespace) -> dict:
    t_start = time.perf_counter()
    timing: Dict[str, float] = {}
    outdir = Path(args.outdir).expanduser().resolve()
    outdir.mkdir(parents=True, exist_ok=True)
    data, logs = outdir / "data", outdir / "logs"
    data.mkdir(exist_ok=True)
    logs.mkdir(exist_ok=True)
    # stanza resolves its default model dir at import time: point it at OUTDIR before anything imports stanza
    os.environ["STANZA_RESOURCES_DIR"] = str(outdir)
    with open(outdir / "resources.json", "w", encoding="utf-8") as f:
        json.dump(RESOURCES_JSON, f)
    preset = PRESETS[args.size]
    max_train = args.max_train if args.max_train is not None else preset["max_train"]
    max_dev = args.max_dev if args.max_dev is not None else preset["max_dev"]
    vec_dim = args.vec_dim or preset["vec_dim"]

    # 1-3: trees, split, files
    t0 = time.perf_counter()
    stats: collections.Counter = collections.Counter()
    train_trees, dev_trees, split_info = split_treebank(Path(args.treebank).expanduser(), args.dev, stats)
    n_train_all, n_dev_all = len(train_trees), len(dev_trees)
    if max_train:
        train_trees = train_trees[:max_train]
    # stanza refuses dev trees with constituent labels the training trees lack (e.g. one WHADJP in wsj22)
    from stanza.models.constituency.parse_tree import Tree

    known = set(Tree.get_unique_constituent_labels(train_trees))
    kept = [t for t in dev_trees if set(Tree.get_unique_constituent_labels([t])) <= known]
    if len(kept) < len(dev_trees):
        stats["dev_dropped_unseen_label"] = len(dev_trees) - len(kept)
        dev_trees = kept
    if max_dev:
        dev_trees = dev_trees[:max_dev]
    if not train_trees or not dev_trees:
        raise SystemExit(f"empty split: {len(train_trees)} train / {len(dev_trees)} dev trees")
    for name, trees in (("train", train_trees), ("dev", dev_trees)):
        write_mrg(trees, data / f"{name}.mrg")
        write_conllu(trees, data / f"{name}.conllu")
    logger.info("split: %d train trees (of %d), %d dev trees (of %d; %s); skipped %s", len(train_trees), n_train_all,
                len(dev_trees), n_dev_all, split_info["dev_split"], dict(stats) or "none")
    timing["data"] = time.perf_counter() - t0

    # 4: vectors + pretrain.pt
    t0 = time.perf_counter()
    from stanza.models.common.pretrain import Pretrain

    sents = [[w.lower() for w in words_tags(t)[0]] for t in train_trees]
    if args.vectors_text:
        sents += read_text_tokens(args.vectors_text, args.vectors_max_lines)
    vec_path, pt_path = data / "vectors.txt", outdir / "pretrain.pt"
    vec_method = build_vectors(sents, vec_dim, vec_path, max_vocab=args.vectors_max_vocab, seed=args.seed)
    if pt_path.exists():
        pt_path.unlink()
    pretrain = Pretrain(str(pt_path), str(vec_path))
    pretrain.load()
    n_vocab = len(pretrain.vocab)
    vec_path.unlink()
    timing["vectors"] = time.perf_counter() - t0
    logger.info("pretrain.pt: %d words x %d (%s) in %.1f s", n_vocab, vec_dim, vec_method, timing["vectors"])

    device_args = ["--cpu"] if args.device == "cpu" else []
    common = ["--mode", "train", "--lang", "en", "--shorthand", "en_local", "--seed", str(args.seed),
              "--wordvec_pretrain_file", str(pt_path)]

    # 5a: tagger
    t0 = time.perf_counter()
    tagger_args = common + ["--train_file", str(data / "train.conllu"), "--eval_file", str(data / "dev.conllu"),
                            "--output_file", str(data / "dev.pred.conllu"), "--save_dir", str(outdir),
                            "--save_name", "pos.pt"] + shlex.split(preset["tagger"]) + device_args \
        + shlex.split(args.tagger_args or "")
    tag_lines = run_trainer("tagger", tagger_args, outdir, logs / "tagger.log", args.threads)
    timing["tagger"] = time.perf_counter() - t0
    logger.info("tagger trained in %.1f s", timing["tagger"])

    # 5b: constituency parser
    t0 = time.perf_counter()
    parser_args = common + ["--train_file", str(data / "train.mrg"), "--eval_file", str(data / "dev.mrg"),
                            "--retag_model_path", str(outdir / "pos.pt"), "--retag_pretrain_path", str(pt_path),
                            "--retag_method", "xpos", "--save_dir", str(outdir), "--save_name", "constituency.pt",
                            "--no_checkpoint"] + shlex.split(preset["parser"]) + device_args \
        + shlex.split(args.parser_args or "")
    con_lines = run_trainer("constituency", parser_args, outdir, logs / "constituency.log", args.threads)
    timing["constituency"] = time.perf_counter() - t0
    logger.info("constituency parser trained in %.1f s", timing["constituency"])
    for p in outdir.glob("*checkpoint*.pt"):
        p.unlink()
    try:
        (outdir / "work").rmdir()  # the trainers' cwd; kept only if they left something there
    except OSError:
        pass
    for name in ("pos.pt", "constituency.pt"):
        if not (outdir / name).is_file():
            raise RuntimeError(f"training finished but {outdir / name} was not written; see {logs}")

    # 6: evaluation
    dev_eval = None
    if not args.no_eval:
        t0 = time.perf_counter()
        dev_eval = evaluate(outdir, dev_trees, args.eval_batch_size, args.device)
        timing["eval"] = time.perf_counter() - t0
        logger.info("dev (end to end, gold words): bracket F1 %.4f, XPOS acc %.4f, %.1f sentences/s",
                    dev_eval["bracket_f1"], dev_eval["xpos_accuracy"], dev_eval["sentences_per_second"] or 0)
    timing["total"] = time.perf_counter() - t_start

    info = {
        "stanza_version": __import__("stanza").__version__,
        "torch_version": __import__("torch").__version__,
        "size": args.size, "device": args.device, "threads": args.threads, "seed": args.seed,
        "treebank": str(Path(args.treebank).expanduser().resolve()), **split_info,
        "train_trees": len(train_trees), "dev_trees": len(dev_trees),
        "train_trees_available": n_train_all, "dev_trees_available": n_dev_all, "skipped_trees": dict(stats),
        "train_tokens": sum(len(s) for s in sents[:len(train_trees)]),
        "vectors": {"method": vec_method, "dim": vec_dim, "vocab": n_vocab,
                    "extra_text": list(args.vectors_text or [])},
        "tagger_args": tagger_args, "constituency_args": parser_args,
        "files": {name: (outdir / name).stat().st_size for name in ("pos.pt", "constituency.pt", "pretrain.pt")},
        "seconds": {k: round(v, 1) for k, v in timing.items()},
        "dev_scores": {
            "tagger_best_dev_alltags_f1": _last_float(tag_lines, r"Best dev F1 = ([0-9.]+)"),
            "constituency_best_dev_f1_during_training": _last_float(con_lines, r"PyEvaluateParser: .*F1=([0-9.]+)"),
            "end_to_end": dev_eval,
        },
        "created": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    with open(outdir / "model_info.json", "w", encoding="utf-8") as f:
        json.dump(info, f, indent=1)
    logger.info("done in %.1f s: %s", timing["total"], outdir)
    return info


def get_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog="fairseq-tree-train-stanza",
                                description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("treebank", metavar="TREEBANK_DIR", help="directory of *.mrg bracket files (or one file)")
    p.add_argument("outdir", metavar="OUTDIR", help="where pos.pt, constituency.pt, pretrain.pt, ... are written")
    p.add_argument("--size", choices=sorted(PRESETS), default="small",
                   help="tiny: ~20-30 s, for tests; small: ~10-12 min on 2 cores; base: stanza-like, hours")
    p.add_argument("--max-train", type=int, default=None, metavar="N", help="use the first N training trees")
    p.add_argument("--max-dev", type=int, default=None, metavar="N", help="use the first N dev trees")
    p.add_argument("--dev", choices=["auto", "slice"], default="auto",
                   help="auto: valid*/dev*/wsj22* files are the dev set if present; slice: always hold out the last "
                        "5%% of the trees (at most 300)")
    p.add_argument("--vec-dim", type=int, default=None, help="word vector size (preset default)")
    p.add_argument("--vectors-text", nargs="+", metavar="FILE",
                   help="extra whitespace-tokenized text for the word vectors (e.g. the translation corpus)")
    p.add_argument("--vectors-max-lines", type=int, default=500000)
    p.add_argument("--vectors-max-vocab", type=int, default=100000)
    p.add_argument("--tagger-args", default="", help="extra stanza.models.tagger arguments (override the preset)")
    p.add_argument("--parser-args", default="",
                   help="extra stanza.models.constituency_parser arguments (override the preset)")
    p.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    p.add_argument("--threads", type=int, default=int(os.environ.get("OMP_NUM_THREADS") or 1),
                   help="torch threads of the trainers (default $OMP_NUM_THREADS or 1)")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--eval-batch-size", type=int, default=64)
    p.add_argument("--no-eval", action="store_true", help="skip the end-to-end dev evaluation")
    p.add_argument("-q", "--quiet", action="store_true", help="log warnings only")
    return p


def main(argv: Optional[List[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == OFFLINE_RUN:
        return offline_run(argv[1], argv[2:])
    args = get_parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING if args.quiet else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s", datefmt="%H:%M:%S")
    train(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
