"""The preprocessing pipeline: raw parallel text -> parsed, subword-split, binarized ``data-bin/``.

Passes (each over shards of ``--shard-size`` lines, in ``--workers`` processes, streaming):

1. parse: validate lines, tokenize (sacremoses), parse the source (stanza, or given trees);
2. learn BPE on the training words (``--bpe-merges``) unless ``--bpe-codes`` is given;
3. bpe: split words into pieces (a split word becomes a POS-labelled subtree), length filter;
4. dictionaries from the training split (or ``--srcdict``/``--tgtdict``/``--labeldict``);
5. binarize shards, then merge them into the final datasets.

With ``--task classification`` the same passes write trees and their classes instead of target sentences
(:mod:`fairseq_tree.data.class_labels`): the label file, if any, takes the target's role (read, checked and
counted in line with the source, never BPE-split), and the targets of the sentence, of every node and of every
leaf are binarized beside the tree. The passes do not test the mode: where the modes differ they call the run's
row codec (:mod:`fairseq_tree.preprocess.codecs`).

Shard outputs live in ``DESTDIR/.work`` and are written under temporary names, so an interrupted run
resumes from the shards it completed; final files are renamed into place only when complete.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import logging
import os
import shutil
import time
from collections import Counter
from typing import Callable, Dict, List, Optional, Set

from fairseq_tree.data.binarize import build_dictionary, merge_datasets
from fairseq_tree.preprocess import sharded_layout as layout
from fairseq_tree.preprocess.codecs import RowCodec, make_codec
from fairseq_tree.preprocess.config import PreprocessConfig
from fairseq_tree.preprocess.launcher import make_executor, run_stage_jobs
from fairseq_tree.preprocess.shards import (
    PreprocessError,
    Shard,
    atomic_copy,
    atomic_write_text,
    shard_dataset_prefixes,
)
from fairseq_tree.preprocess.stages import BinarizeWorker, BpeWorker, ParseWorker, StageConfig
from fairseq_tree.preprocess.workers import Worker, run_local
from fairseq_tree.text.bpe import learn_codes
from fairseq_tree.trees.io import atomic_path, atomic_write
from fairseq_tree.utils.devices import resolve_device
from fairseq_tree.utils.progress import Progress

logger = logging.getLogger("fairseq_tree.preprocess")

SPLITS = ("train", "valid", "test")
WORK_VERSION = 1
REPORT = "preprocess.json"  # written last: its ``finished`` entry stamps the outputs as complete
#: options that change how a run works, not what it writes: a finished run is done whatever their values now
RUN_ONLY_OPTIONS = ("workers", "keep_work", "parse_batch_size", "stanza_batch_size", "stanza_download", "device",
                    "launcher", "jobs", "launcher_dir")


# --------------------------------------------------------------------------------------------------
# running a stage over shards
# --------------------------------------------------------------------------------------------------

def _run_stage(name: str, shards: List[Shard], make_worker: Callable[[], Worker], workers: int, workdir: str,
               suffix: str, launcher: Optional[tuple] = None) -> Dict[str, dict]:
    """Run the stage's worker (built by ``make_worker`` once per process) on every shard not yet done (its
    ``.json`` exists); return the shards' metas folded per split (:func:`_fold`), reading one at a time so that
    memory does not grow with the corpus. ``launcher``: ``(submitit executor, jobs)`` to run them as a job array
    (:mod:`fairseq_tree.preprocess.launcher`), else local processes (:mod:`fairseq_tree.preprocess.workers`)."""
    todo = [s for s in shards if not os.path.exists(os.path.join(workdir, s.name + suffix))]
    if len(todo) < len(shards):
        logger.info("%s: resuming, %d of %d shards already done", name, len(shards) - len(todo), len(shards))
    if todo:
        progress = Progress(name, sum(s.num_lines for s in todo))
        if launcher is not None:
            run_stage_jobs(launcher[0], name, todo, make_worker, launcher[1], lambda s: progress.update(s.num_lines))
        else:
            run_local(name, make_worker, todo, workers, lambda s: progress.update(s.num_lines))
        progress.close()
    totals: Dict[str, dict] = {}
    for s in shards:  # in shard order: skipped/filtered lists stay in line order
        with open(os.path.join(workdir, s.name + suffix), encoding="utf-8") as f:
            _fold(totals.setdefault(s.split, {}), json.load(f))
    return totals


def _fold(total: dict, meta: dict) -> dict:
    """Add a shard's meta into ``total`` in place: numbers summed, lists concatenated, dicts folded by key
    (word counts, seconds, stats)."""
    for key, value in meta.items():
        if isinstance(value, dict):
            _fold(total.setdefault(key, {}), value)
        elif isinstance(value, list):
            total.setdefault(key, []).extend(value)
        else:
            total[key] = total.get(key, 0) + value
    return total


def _fingerprint(args: PreprocessConfig, files: dict) -> str:
    keys = ["source_lang", "target_lang", "parser", "tokenize", "on_error", "unary", "max_positions",
            "num_shards", "shard_id", "dict_only", "srcdict", "tgtdict", "labeldict", "joined_dictionary",
            "bpe_codes", "bpe_merges", "only_source", "shard_size", "stanza_model_dir",
            "stanza_pos_model", "stanza_constituency_model", "stanza_pretrain", "stanza_lang", "parser_model",
            "parser_data",
            "task", "labels", "num_classes", "class_names", "binary", "node_inputs"]
    desc = {k: getattr(args, k) for k in keys}  # (named fields of the config: a fixed list, for resuming)
    desc["files"] = {split: {role: [p, os.path.getsize(p), os.path.getmtime(p)] for role, p in roles.items()}
                     for split, roles in files.items()}
    desc["version"] = WORK_VERSION
    return hashlib.sha256(json.dumps(desc, sort_keys=True, default=str).encode()).hexdigest()


def _rate(n: int, seconds: float, workers: int) -> dict:
    """Throughput of a stage: summed worker seconds, and sentences/s over ``workers`` processes."""
    wall = seconds / max(workers, 1)
    return {"sentences": n, "worker_seconds": round(seconds, 3),
            "sentences_per_s": round(n / wall, 1) if wall > 0 else None}

# --------------------------------------------------------------------------------------------------
# a finished run: its outputs stamped by preprocess.json, so that the same command again has nothing to do
# --------------------------------------------------------------------------------------------------

def output_signature(args: PreprocessConfig, files: Dict[str, Dict[str, str]]) -> str:
    """What a run's outputs are made of: every option but :data:`RUN_ONLY_OPTIONS` (and ``--slurm-*``), and the
    size and modification time of every input file and of every file an option names (dictionaries, BPE codes,
    a parser's checkpoint or model directory). Another value of any of them: the outputs are made again."""
    options = {k: v for k, v in dataclasses.asdict(args).items()
               if k not in RUN_ONLY_OPTIONS and not k.startswith("slurm_")}
    desc = {"options": options, "version": WORK_VERSION,
            "inputs": {split: {role: _file_stats(p) for role, p in roles.items()} for split, roles in files.items()},
            "option_files": {k: _file_stats(v) for k, v in options.items()
                             if k != "destdir" and isinstance(v, str) and os.path.exists(v)}}
    return hashlib.sha256(json.dumps(desc, sort_keys=True, default=str).encode()).hexdigest()


def _file_stats(path: str):
    """``[size, mtime]`` of a file; of a directory, those of the files in it by name (a model directory)."""
    if os.path.isdir(path):
        return {name: _file_stats(os.path.join(path, name)) for name in sorted(os.listdir(path))
                if os.path.isfile(os.path.join(path, name))}
    return [os.path.getsize(path), os.path.getmtime(path)] if os.path.exists(path) else None


def _outputs(destdir: str) -> Dict[str, int]:
    """Every file the run leaves in ``destdir`` (shard directories included; the work and launcher folders and
    the report not) -> its size."""
    out = {}
    for root, dirs, names in os.walk(destdir):
        dirs[:] = sorted(d for d in dirs if not (root == destdir and d.startswith(".")))
        for name in sorted(names):
            rel = os.path.relpath(os.path.join(root, name), destdir)
            if rel != REPORT:
                out[rel] = os.path.getsize(os.path.join(root, name))
    return out


def finished_report(destdir: str, signature: str, keep_work: bool = False) -> Optional[dict]:
    """The report of a finished run of ``destdir`` with this ``signature`` whose outputs are all there (same sizes),
    said so in the log; else None, and the report of an earlier run is removed (the outputs are about to
    change: an interrupted run must not look finished)."""
    path = os.path.join(destdir, REPORT)
    try:
        with open(path, encoding="utf-8") as f:
            report = json.load(f)
    except (OSError, ValueError):
        report = None
    finished = report.get("finished") if isinstance(report, dict) else None
    if not finished or finished.get("signature") != signature or _outputs(destdir) != finished.get("outputs"):
        if os.path.exists(path):
            os.remove(path)
        return None
    if not keep_work:  # what an interruption between the report and the clean-up left
        shutil.rmtree(os.path.join(destdir, ".work"), ignore_errors=True)
    logger.warning("%s is already preprocessed from the same inputs and options (%s): nothing to do. To make it "
                   "again, delete %s", destdir, path, path)
    return report


# --------------------------------------------------------------------------------------------------
# the pipeline
# --------------------------------------------------------------------------------------------------

def run(args: PreprocessConfig) -> dict:
    """The whole pipeline (see the module docstring); with ``--num-shards`` the outputs go into fairseq's
    sharded layout, with ``--shard-id`` one part of it is made, with ``--dict-only`` only the vocabularies
    (:mod:`fairseq_tree.preprocess.sharded_layout`)."""
    t_start = time.perf_counter()
    codec = make_codec(args)
    src, tgt = args.source_lang, codec.target_lang
    parts, part = args.num_shards or 1, args.shard_id
    dict_only = args.dict_only
    destdir = args.destdir
    if part is not None:
        layout.fix_vocabularies(args, destdir, src, tgt)
        destdir = layout.shard_dir(destdir, part)
    os.makedirs(destdir, exist_ok=True)
    workdir = os.path.join(destdir, ".work")

    files = input_files(args, src, codec.target_suffix, dict_only)
    if "train" not in files and not (args.srcdict and (args.tgtdict or not tgt or args.joined_dictionary)):
        raise PreprocessError("--trainpref is required unless dictionaries are given")
    # {split: {part: shards}}: train cut into the parts, valid and test whole in part 0 (where fairseq reads them)
    by_part = {split: layout.make_shards(split, roles, args.shard_size, parts if split == "train" else 1,
                                         part if split == "train" else None)
               for split, roles in files.items() if split == "train" or part in (None, 0)}
    shards = {split: [s for p in sorted(ps) for s in ps[p]] for split, ps in by_part.items()}
    files = {split: files[split] for split in shards}
    signature = output_signature(args, files)
    done = finished_report(destdir, signature, args.keep_work)
    if done is not None:
        return done

    fp = _fingerprint(args, files)
    fp_path = os.path.join(workdir, "fingerprint")
    if os.path.exists(workdir):
        old = None
        if os.path.exists(fp_path):
            with open(fp_path, encoding="utf-8") as f:  # written UTF-8 (atomic_write_text); paths may not be ASCII
                old = f.read()
        if old != fp:
            logger.info("work directory %s is from a different configuration: starting afresh", workdir)
            shutil.rmtree(workdir)
    os.makedirs(workdir, exist_ok=True)
    atomic_write_text(fp_path, fp)

    cfg = StageConfig(workdir=workdir, paths=files, src_lang=src, parser=args.parser, tokenize=args.tokenize,
                      on_error=args.on_error, unary=args.unary, max_positions=args.max_positions,
                      parser_options=parser_options(args), codec=codec, parse_batch_size=args.parse_batch_size)
    all_shards = [s for split in files for s in shards[split]]
    launcher = _launcher(args, destdir)

    # 1. parse
    logger.info("parsing %d lines in %d shards with %s (%s)", sum(s.num_lines for s in all_shards),
                len(all_shards), args.parser, f"{launcher[1]} {args.launcher} jobs" if launcher
                else f"{args.workers} workers")
    t0 = time.perf_counter()
    by_split = _run_stage("parse", all_shards, functools.partial(ParseWorker, cfg), args.workers, workdir,
                          ".parsed.json", launcher)
    wall = {"parse": time.perf_counter() - t0}

    # 2. BPE codes
    codes_path = os.path.join(destdir, "bpe.codes")
    if args.bpe_codes:
        if os.path.abspath(args.bpe_codes) != os.path.abspath(codes_path):
            atomic_copy(args.bpe_codes, codes_path)
    elif args.bpe_merges:
        if "train" not in by_split:
            raise PreprocessError("--bpe-merges needs --trainpref (BPE is learned on train only)")
        if not os.path.exists(os.path.join(workdir, "bpe.done")):
            t0 = time.perf_counter()
            words = Counter(by_split["train"].get("src_word_counts", {}))
            words.update(by_split["train"].get("tgt_word_counts", {}))
            with atomic_path(codes_path) as tmp:
                learn_codes(words, args.bpe_merges, tmp)
            atomic_write_text(os.path.join(workdir, "bpe.done"), "")
            wall["learn_bpe"] = time.perf_counter() - t0
            logger.info("learned %d BPE merges on %d word types in %.1fs", args.bpe_merges, len(words),
                        wall["learn_bpe"])
    else:
        codes_path = None

    # 3. subwords
    t0 = time.perf_counter()
    bpe_by_split = _run_stage("bpe", all_shards, functools.partial(BpeWorker, cfg, codes_path), args.workers,
                              workdir, ".bpe.json", launcher)
    wall["bpe"] = time.perf_counter() - t0

    # 4. dictionaries
    dict_paths = build_dictionaries(args, destdir, src, tgt, bpe_by_split.get("train", {}))
    codec.write_scheme(destdir)
    if dict_only:
        report = dict_only_report(args, files, by_split, bpe_by_split, dict_paths, time.perf_counter() - t_start)
    else:
        # 5. binarize and merge (into DESTDIR, or each part into its shard directory)
        t0 = time.perf_counter()
        bin_by_split = _run_stage("binarize", all_shards, functools.partial(BinarizeWorker, cfg, dict_paths),
                                  args.workers, workdir, ".bin.json", launcher)
        out_dir = (lambda p: destdir) if parts == 1 or part is not None else (lambda p: layout.shard_dir(destdir, p))
        targets = {split: [(out_dir(p), ps[p]) for p in sorted(ps)] for split, ps in by_part.items()}
        layout.copy_shared(destdir, dict_paths, sorted({d for ts in targets.values() for d, _ in ts}))
        merge_outputs(targets, workdir, src, codec, dict_paths)
        wall["binarize"] = time.perf_counter() - t0
        report = make_report(args, codec, files, by_split, bpe_by_split, bin_by_split, dict_paths, wall,
                             time.perf_counter() - t_start)
        if parts > 1:
            report["shards"] = {split: [{"dir": os.path.relpath(d, args.destdir), "first_line": ss[0].first_line,
                                         "lines": sum(s.num_lines for s in ss)} for d, ss in ts]
                                for split, ts in targets.items()}
    report["finished"] = {"signature": signature, "outputs": _outputs(destdir)}  # written last: the stamp
    atomic_write_text(os.path.join(destdir, REPORT), json.dumps(report, indent=1) + "\n")
    if not args.keep_work:
        shutil.rmtree(workdir)
        if launcher and not args.launcher_dir:  # the jobs' logs; kept when a job failed (the error names them)
            shutil.rmtree(launcher[0].folder, ignore_errors=True)
    return report


def input_files(args: PreprocessConfig, src: str, tgt_suffix: Optional[str],
                dict_only: bool) -> Dict[str, Dict[str, str]]:
    """``{split: {role: path}}`` of the given prefixes (roles src, tgt, trees); the training split alone with
    ``--dict-only``."""
    files: Dict[str, Dict[str, str]] = {}
    for split in ("train",) if dict_only else SPLITS:
        pref = {"train": args.trainpref, "valid": args.validpref, "test": args.testpref}[split]
        if not pref:
            continue
        roles = {"src": f"{pref}.{src}"}
        if tgt_suffix:
            roles["tgt"] = f"{pref}.{tgt_suffix}"
        if args.parser == "given" and args.trees_dir:
            roles["trees"] = os.path.join(args.trees_dir, f"{split}.{src}.trees")
        files[split] = roles
    if dict_only and not files:
        raise PreprocessError("--dict-only builds the vocabularies of the training split: give --trainpref")
    return files


def _launcher(args: PreprocessConfig, destdir: str) -> Optional[tuple]:
    """``(submitit executor, jobs per pass)`` for ``--launcher``, or None for local worker processes."""
    if not args.launcher:
        return None

    folder = args.launcher_dir or os.path.join(destdir, ".launcher")
    jobs = args.jobs or (args.num_shards if args.num_shards and args.shard_id is None else args.workers)
    return make_executor(args, folder), jobs


def dict_only_report(args: PreprocessConfig, files, by_split, bpe_by_split, dict_paths, total) -> dict:
    """``--dict-only``'s preprocess.json: the vocabularies and what the training split gave them."""
    from fairseq.data.dictionary import Dictionary

    pm, bm = by_split["train"], bpe_by_split["train"]
    skipped = sorted(pm.get("skipped", []) + bm.get("skipped", []), key=lambda e: e["line"])
    return {"command": {k: v for k, v in vars(args).items() if k != "func"}, "dict_only": True,
            "dictionaries": {k: {"path": os.path.basename(p), "size": len(Dictionary.load(p))}
                             for k, p in dict_paths.items()},
            "splits": {"train": {"files": files["train"], "lines": pm["lines"],
                                 "sentences": bm["kept"], "skipped": len(skipped),
                                 "skipped_lines": skipped}},
            "wall_seconds": round(total, 3)}


def parser_options(args) -> dict:
    """The picklable keyword arguments of ``build_parser(args.parser, ...)`` (``{}`` for ``given``): ``args`` is a
    :class:`PreprocessConfig` or the Namespace of a CLI with the same backend options (``fairseq-tree-classify``)."""
    device = resolve_device(args.device)
    if args.parser in ("lal", "induced"):
        return {"model": args.parser_model, "data": args.parser_data, "batch_size": args.parse_batch_size,
                "device": device}
    if args.parser != "stanza":
        return {}
    return {"pos_model": args.stanza_pos_model, "constituency_model": args.stanza_constituency_model,
            "pretrain": args.stanza_pretrain, "model_dir": args.stanza_model_dir,
            "download": args.stanza_download, "batch_size": args.stanza_batch_size, "device": device,
            "lang": args.stanza_lang}


def build_dictionaries(args: PreprocessConfig, destdir: str, src: str, tgt: Optional[str],
                       train_meta: dict) -> Dict[str, str]:
    """Write dict.{src}.txt, dict.{tgt}.txt, dict.{src}.labels.txt from the training split's folded bpe meta
    (``counts``); returns role -> path."""
    from fairseq.data.dictionary import Dictionary

    def counts(role):
        return Counter(train_meta.get("counts", {}).get(role, {}))

    def save(d: Dictionary, path: str):
        with atomic_path(path) as tmp:
            d.save(tmp)

    paths = {"src": os.path.join(destdir, f"dict.{src}.txt"),
             "labels": os.path.join(destdir, f"dict.{src}.labels.txt")}
    if tgt:
        paths["tgt"] = os.path.join(destdir, f"dict.{tgt}.txt")
    if args.joined_dictionary and tgt:
        if args.srcdict or args.tgtdict:
            joined = Dictionary.load(args.srcdict or args.tgtdict)
        else:
            joined = build_dictionary(counts("src") + counts("tgt"), nwords=args.nwordssrc,
                                      threshold=args.thresholdsrc)
        save(joined, paths["src"])
        save(joined, paths["tgt"])
    else:
        src_dict = Dictionary.load(args.srcdict) if args.srcdict else build_dictionary(
            counts("src"), nwords=args.nwordssrc, threshold=args.thresholdsrc)
        save(src_dict, paths["src"])
        if tgt:
            tgt_dict = Dictionary.load(args.tgtdict) if args.tgtdict else build_dictionary(
                counts("tgt"), nwords=args.nwordstgt, threshold=args.thresholdtgt)
            save(tgt_dict, paths["tgt"])
    label_dict = Dictionary.load(args.labeldict) if args.labeldict else build_dictionary(
        counts("labels"), padding_factor=1)
    save(label_dict, paths["labels"])
    logger.info("dictionaries: %s", ", ".join(f"{os.path.basename(p)} {len(Dictionary.load(p))}"
                                              for p in dict.fromkeys(paths.values())))
    return paths


def merge_outputs(targets: Dict[str, List[tuple]], workdir: str, src: str, codec: RowCodec,
                  dict_paths: Dict[str, str]) -> None:
    """Concatenate the work shards' datasets (those of the codec, :meth:`RowCodec.output_prefixes`) and trees:
    ``targets[split]`` lists ``(out_dir, shards)``, one pair per output directory (DESTDIR, or each shard
    directory of the sharded layout)."""
    from fairseq.data.dictionary import Dictionary

    dtypes = codec.dataset_dtypes({k: Dictionary.load(p) for k, p in dict_paths.items()})
    for split, pairs in targets.items():
        for out_dir, split_shards in pairs:
            outs = codec.output_prefixes(out_dir, split, src)
            progress = Progress(f"merge {split}", len(outs) + 1, unit="file", every=5.0)
            for key, out in outs.items():
                merge_datasets([shard_dataset_prefixes(workdir, s)[key] for s in split_shards], out,
                               dtypes[key])
                progress.update(1)
            trees_out = os.path.join(out_dir, f"{split}.{src}.trees")
            with atomic_write(trees_out) as fout:
                for s in split_shards:  # the raw tree field (the 2nd) of every row, streamed; "" where skipped
                    skipped = skipped_lines(workdir, s)
                    with open(os.path.join(workdir, s.name + ".parsed.tsv"), encoding="utf-8") as f:
                        for line in f:
                            lineno, tree = line.split("\t", 2)[:2]
                            fout.write(("" if int(lineno) in skipped else tree) + "\n")
            progress.update(1)
            progress.close()


def skipped_lines(workdir: str, shard: Shard) -> Set[int]:
    """The numbers of a shard's lines that its parse or bpe stage skipped (``--on-error skip``; the ``skipped``
    lists of their metas): their lines of ``{split}.SRC.trees`` are empty, as for every skipped line (a too long
    sentence has a tree, but no dataset holds it)."""
    lines: Set[int] = set()
    for suffix in (".parsed.json", ".bpe.json"):
        with open(os.path.join(workdir, shard.name + suffix), encoding="utf-8") as f:
            lines.update(e["line"] for e in json.load(f).get("skipped", []))
    return lines


def make_report(args: PreprocessConfig, codec: RowCodec, files, parse_by_split, bpe_by_split, bin_by_split, dict_paths,
                wall, total) -> dict:
    """preprocess.json from the folded metas of each stage (split -> meta, :func:`_run_stage`); the codec adds
    its mode's entries of each split (:meth:`RowCodec.split_report`)."""
    from fairseq.data.dictionary import Dictionary

    report = {"command": dataclasses.asdict(args), "splits": {},
              "dictionaries": {k: {"path": os.path.basename(p), "size": len(Dictionary.load(p))}
                               for k, p in dict_paths.items()}}
    report["command"] = {k: v for k, v in report["command"].items() if k != "func"}
    seconds = Counter()
    n_parse = n_bpe = n_bin = 0
    for split, roles in files.items():
        pm, bm, xm = parse_by_split[split], bpe_by_split[split], bin_by_split[split]
        skipped = sorted(pm.get("skipped", []) + bm.get("skipped", []), key=lambda e: e["line"])
        filtered = pm.get("filtered", [])
        stats = Counter(xm.get("stats", {}))
        lines = pm["lines"]
        report["splits"][split] = {
            "files": roles, "lines": lines, "sentences": stats["sentences"],
            "skipped": len(skipped), "skipped_by_reason": dict(Counter(e["reason"] for e in skipped)),
            **{k: stats[k] for k in ("source_tokens", "nodes", "source_unk", "label_unk")},
            **codec.split_report(roles, stats, xm, filtered),
            "skipped_lines": skipped,
        }
        assert stats["sentences"] + len(skipped) + len(filtered) == lines, \
            "every input line is either kept or reported"
        for m in (pm, bm, xm):
            seconds.update(m.get("seconds", {}))
        n_parse += lines
        n_bpe += pm["kept"]
        n_bin += stats["sentences"]
    w = args.workers
    report["throughput"] = {
        "tokenize": _rate(n_parse, seconds["tokenize"], w),
        "parse": _rate(n_parse, seconds["parse"], w),
        "bpe": _rate(n_bpe, seconds["bpe"], w),
        "binarize": _rate(n_bin, seconds["binarize"], w),
        "wall_seconds": {k: round(v, 3) for k, v in wall.items()},
    }
    report["wall_seconds"] = round(total, 3)
    for name, r in report["throughput"].items():
        if name != "wall_seconds":
            logger.info("%-9s %8d sentences  %10s sentences/s", name, r["sentences"], r["sentences_per_s"])
    for split, r in report["splits"].items():
        logger.info("%s: %d lines -> %d sentences, %d skipped %s", split, r["lines"], r["sentences"],
                    r["skipped"], r["skipped_by_reason"] or "")
    return report
