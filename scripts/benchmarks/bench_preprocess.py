#!/usr/bin/env python
"""Throughput of fairseq-tree-preprocess per stage, and of parsing; wall time and peak memory at corpus scale.

    python scripts/benchmarks/bench_preprocess.py [--quick] [--scale] [--data ../shared/data/multi30k] \\
        [--stanza-model-dir DIR]

1. The pipeline minus parsing: Multi30k en-de train pairs, the source as given trees (random binary trees
   over the PTB-tokenized words, built by StructFormer's distance splitting, so m = n - 1 like a binarized
   parse), BPE with 8000 merges learned beforehand, ``--workers 2``. Reports sentences/s per stage from
   the run's preprocess.json, the BPE + binarization rate (target: >= 50,000 sentences/s on 2 cores: worker
   seconds of both stages over 2 workers), and the wall time against ``fairseq-preprocess`` binarizing the same
   BPE'd text in the same run.
2. Parsing: the stanza backend (``--stanza-model-dir``) on the first sentences, 1 process.
3. ``--scale``: the whole pipeline (``--parser given --bpe-codes --joined-dictionary --workers 2``) on the
   Multi30k train pairs repeated to 100,000 and to 1,000,000 lines (the source: ``--trees``, by default the
   demo's stanza trees of Multi30k train, else the random trees of 1.; the target: German). Reports the wall
   time and the peak RSS of the driver and of the largest worker for both sizes (target: 1M lines in under 3
   minutes on 2 cores, peak RSS the same at both sizes), sampled from /proc every 0.1 s.

The last line is ``key=value`` pairs.
"""

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

from fairseq_tree.text.tokenize import Tokenizer
from fairseq_tree.trees import Tree, distances_to_tree, to_brackets

REPO = Path(__file__).resolve().parents[2]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="5,000 pairs, 50 parsed sentences (under a minute)")
    ap.add_argument("--data", default=str(REPO.parent / "shared" / "data" / "multi30k"))
    ap.add_argument("--pairs", type=int, default=None, help="number of training pairs (default: all, or 5000)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--stanza-model-dir", default=None)
    ap.add_argument("--parse-sentences", type=int, default=None)
    ap.add_argument("--scale", action="store_true", help="also the 100k- and 1M-line runs (about 5 minutes)")
    ap.add_argument("--scale-sizes", default="100000,1000000", help="line counts of the --scale runs")
    ap.add_argument("--trees", default=str(REPO / "work" / "data-bin" / "multi30k.en-de" / "train.en.trees"),
                    help="given trees of Multi30k train for --scale (one per line)")
    args = ap.parse_args()
    n_pairs = args.pairs or (5000 if args.quick else None)
    bindir = Path(sys.executable).parent

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        en = Path(args.data, "train.en").read_text(encoding="utf-8").splitlines()[:n_pairs]
        de = Path(args.data, "train.de").read_text(encoding="utf-8").splitlines()[:n_pairs]
        tok = Tokenizer("moses", "en", ptb=True)
        rng = random.Random(0)
        sentences = [tok(line) for line in en]
        with open(tmp / "train.en", "w", encoding="utf-8") as f:
            for words in sentences:
                spans = distances_to_tree([rng.random() for _ in range(len(words) - 1)])
                f.write(to_brackets(Tree(words, ["NN"] * len(words), ["X"] * len(spans), spans)) + "\n")
        (tmp / "train.de").write_text("\n".join(de) + "\n", encoding="utf-8")
        common = ["-s", "en", "-t", "de", "--trainpref", str(tmp / "train"), "--parser", "given",
                  "--workers", str(args.workers), "--joined-dictionary"]
        # BPE codes first (learning them is a one-off, not part of the throughput)
        subprocess.run([str(bindir / "fairseq-tree-preprocess"), *common, "--bpe-merges", "8000",
                        "--destdir", str(tmp / "codes")], check=True, capture_output=True)
        t0 = time.perf_counter()
        subprocess.run([str(bindir / "fairseq-tree-preprocess"), *common,
                        "--bpe-codes", str(tmp / "codes" / "bpe.codes"),
                        "--shard-size", str(max(1000, len(en) // (4 * args.workers))), "--destdir", str(tmp / "bin")],
                       check=True, capture_output=True)
        ours_wall = time.perf_counter() - t0
        report = json.loads((tmp / "bin" / "preprocess.json").read_text())
        tp = report["throughput"]
        n = tp["binarize"]["sentences"]
        bpe_bin = n / ((tp["bpe"]["worker_seconds"] + tp["binarize"]["worker_seconds"]) / args.workers)

        # fairseq-preprocess on the same subword text (leaves as the source), same workers
        from fairseq_tree.text.bpe import Segmenter

        seg = Segmenter(str(tmp / "codes" / "bpe.codes"))
        tgt_tok = Tokenizer("moses", "de")
        (tmp / "fs").mkdir()
        (tmp / "fs" / "train.en").write_text("\n".join(" ".join(seg.segment_tokens(w)) for w in sentences) + "\n")
        (tmp / "fs" / "train.de").write_text("\n".join(" ".join(seg.segment_tokens(tgt_tok(x))) for x in de) + "\n")
        t0 = time.perf_counter()
        subprocess.run([str(bindir / "fairseq-preprocess"), "-s", "en", "-t", "de",
                        "--trainpref", str(tmp / "fs" / "train"),
                        "--destdir", str(tmp / "fsbin"), "--workers", str(args.workers), "--joined-dictionary"],
                       check=True, capture_output=True)
        fairseq_wall = time.perf_counter() - t0
        scale = run_scale(args, tmp, bindir) if args.scale else []

    print(f"pairs: {n}, workers: {args.workers}")
    for stage in ("tokenize", "parse", "bpe", "binarize"):
        label = "parse (read given trees)" if stage == "parse" else stage
        print(f"  {label:26s} {tp[stage]['sentences_per_s']:>10} sentences/s")
    print(f"  {'bpe + binarize':26s} {bpe_bin:10.1f} sentences/s  (target >= 50000)")
    print(f"  wall: fairseq-tree-preprocess {ours_wall:.1f} s (tokenize + trees + BPE + binarize), "
          f"fairseq-preprocess on pre-split text {fairseq_wall:.1f} s")

    parse_rate = None
    if args.stanza_model_dir:
        from fairseq_tree.parsers.stanza_parser import StanzaParser

        k = args.parse_sentences or (50 if args.quick else 1000)
        parser = StanzaParser(model_dir=args.stanza_model_dir)
        parser.parse(sentences[:8])  # warm-up
        t0 = time.perf_counter()
        parser.parse(sentences[:k])
        parse_rate = k / (time.perf_counter() - t0)
        print(f"  stanza parse (1 process)   {parse_rate:10.1f} sentences/s on {k} sentences")

    kv = {
        "pairs": n, "workers": args.workers,
        "tokenize_sents_per_s": tp["tokenize"]["sentences_per_s"],
        "read_trees_sents_per_s": tp["parse"]["sentences_per_s"],
        "bpe_sents_per_s": tp["bpe"]["sentences_per_s"],
        "binarize_sents_per_s": tp["binarize"]["sentences_per_s"],
        "bpe_binarize_sents_per_s": round(bpe_bin, 1),
        "wall_s": round(ours_wall, 2), "fairseq_preprocess_wall_s": round(fairseq_wall, 2),
        "wall_ratio": round(ours_wall / fairseq_wall, 3),
    }
    if parse_rate is not None:
        kv["stanza_parse_sents_per_s"] = round(parse_rate, 1)
    for r in scale:
        tag = _size_tag(r["lines"])
        print(f"  scale {r['lines']:>9,} lines: wall {r['wall_s']:.1f} s, peak RSS driver {r['driver_mb']:.0f} MB, "
              f"largest worker {r['worker_mb']:.0f} MB, all processes at once {r['total_mb']:.0f} MB "
              f"(stages: {r['stage_wall']})")
        kv.update({f"wall_s_{tag}": round(r["wall_s"], 1), f"rss_mb_{tag}": round(r["driver_mb"], 1),
                   f"rss_worker_mb_{tag}": round(r["worker_mb"], 1), f"rss_total_mb_{tag}": round(r["total_mb"], 1)})
    print(" ".join(f"{k}={v}" for k, v in kv.items()))


def _size_tag(n: int) -> str:
    return f"{n // 1000000}m" if n % 1000000 == 0 else f"{n // 1000}k" if n % 1000 == 0 else str(n)


def run_scale(args, tmp: Path, bindir: Path) -> list:
    """The whole pipeline on Multi30k train repeated to each of --scale-sizes lines: wall time, peak RSS."""
    trees_path = Path(args.trees) if Path(args.trees).is_file() else tmp / "train.en"
    print(f"scale runs: source trees from {trees_path}", flush=True)
    trees = trees_path.read_text(encoding="utf-8").splitlines()
    de = Path(args.data, "train.de").read_text(encoding="utf-8").splitlines()[:len(trees)]
    out = []
    for n in (int(x) for x in args.scale_sizes.split(",")):
        d = tmp / f"scale{n}"
        d.mkdir()
        for name, lines in (("train.en", trees), ("train.de", de)):
            with open(d / name, "w", encoding="utf-8") as f:
                for i in range(n):
                    f.write(lines[i % len(lines)] + "\n")
        cmd = [str(bindir / "fairseq-tree-preprocess"), "-s", "en", "-t", "de", "--trainpref", str(d / "train"),
               "--parser", "given", "--bpe-codes", str(tmp / "codes" / "bpe.codes"), "--joined-dictionary",
               "--workers", str(args.workers), "--destdir", str(d / "bin")]
        t0 = time.perf_counter()
        peaks = _run_sampling_rss(cmd, d / "log.txt")
        wall = time.perf_counter() - t0
        report = json.loads((d / "bin" / "preprocess.json").read_text())
        if report["splits"]["train"]["sentences"] != n:
            raise RuntimeError(f"{n} lines but {report['splits']['train']['sentences']} sentences, see {d / 'log.txt'}")
        out.append({"lines": n, "wall_s": wall, **peaks,
                    "stage_wall": {k: round(v) for k, v in report["throughput"]["wall_seconds"].items()}})
        shutil.rmtree(d)
    return out


def _rss_mb(pid: int, field: str = "VmRSS") -> float:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _children(pid: int) -> list:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def _run_sampling_rss(cmd: list, log: Path) -> dict:
    """Run ``cmd``; peak RSS (MB) of it (the driver: VmHWM), of its largest child (a worker) and of all of
    them at once (summed VmRSS), sampled every 0.1 s."""
    with open(log, "w") as f:
        proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT)
        driver = worker = total = 0.0
        while proc.poll() is None:
            kids = _children(proc.pid)
            driver = max(driver, _rss_mb(proc.pid, "VmHWM"))
            worker = max([worker] + [_rss_mb(k, "VmHWM") for k in kids])
            total = max(total, _rss_mb(proc.pid) + sum(_rss_mb(k) for k in kids))
            time.sleep(0.1)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}), see {log}:\n{log.read_text()[-3000:]}")
    return {"driver_mb": driver, "worker_mb": worker, "total_mb": total}


if __name__ == "__main__":
    main()
