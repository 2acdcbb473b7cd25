#!/usr/bin/env python
"""Throughput of fairseq-tree-preprocess per stage, and of parsing.

    python scripts/bench_preprocess.py [--quick] [--data ../shared/data/multi30k] [--stanza-model-dir DIR]

1. The pipeline minus parsing: Multi30k en-de train pairs, the source as given trees (random binary trees
   over the PTB-tokenized words, built by StructFormer's distance splitting, so m = n - 1 like a binarized
   parse), BPE with 8000 merges learned beforehand, ``--workers 2``. Reports sentences/s per stage from
   the run's preprocess.json, the BPE + binarization rate (target: >= 20,000 sentences/s on 2 cores),
   and the wall time against ``fairseq-preprocess`` binarizing the same BPE'd text in the same run.
2. Parsing: the stanza backend (``--stanza-model-dir``) on the first sentences, 1 process.

The last line is ``key=value`` pairs.
"""

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from fairseq_tree.trees import Tree, distances_to_tree, to_brackets  # noqa: E402
from preprocess.text import Tokenizer  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="5,000 pairs, 50 parsed sentences (under a minute)")
    ap.add_argument("--data", default=str(REPO.parent / "shared" / "data" / "multi30k"))
    ap.add_argument("--pairs", type=int, default=None, help="number of training pairs (default: all, or 5000)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--stanza-model-dir", default=None)
    ap.add_argument("--parse-sentences", type=int, default=None)
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
        subprocess.run([str(bindir / "fairseq-tree-preprocess"), *common, "--bpe-codes", str(tmp / "codes" / "bpe.codes"),
                        "--shard-size", str(max(1000, len(en) // (4 * args.workers))), "--destdir", str(tmp / "bin")],
                       check=True, capture_output=True)
        ours_wall = time.perf_counter() - t0
        report = json.loads((tmp / "bin" / "preprocess.json").read_text())
        tp = report["throughput"]
        n = tp["binarize"]["sentences"]
        bpe_bin = n / ((tp["bpe"]["worker_seconds"] + tp["binarize"]["worker_seconds"]) / args.workers)

        # fairseq-preprocess on the same subword text (leaves as the source), same workers
        from preprocess.bpe import Segmenter

        seg = Segmenter(str(tmp / "codes" / "bpe.codes"))
        tgt_tok = Tokenizer("moses", "de")
        (tmp / "fs").mkdir()
        (tmp / "fs" / "train.en").write_text("\n".join(" ".join(seg.segment_tokens(w)) for w in sentences) + "\n")
        (tmp / "fs" / "train.de").write_text("\n".join(" ".join(seg.segment_tokens(tgt_tok(x))) for x in de) + "\n")
        t0 = time.perf_counter()
        subprocess.run([str(bindir / "fairseq-preprocess"), "-s", "en", "-t", "de", "--trainpref", str(tmp / "fs" / "train"),
                        "--destdir", str(tmp / "fsbin"), "--workers", str(args.workers), "--joined-dictionary"],
                       check=True, capture_output=True)
        fairseq_wall = time.perf_counter() - t0

    print(f"pairs: {n}, workers: {args.workers}")
    for stage in ("tokenize", "parse", "bpe", "binarize"):
        label = "parse (read given trees)" if stage == "parse" else stage
        print(f"  {label:26s} {tp[stage]['sentences_per_s']:>10} sentences/s")
    print(f"  {'bpe + binarize':26s} {bpe_bin:10.1f} sentences/s  (target >= 20000)")
    print(f"  wall: fairseq-tree-preprocess {ours_wall:.1f} s (tokenize + trees + BPE + binarize), "
          f"fairseq-preprocess on pre-split text {fairseq_wall:.1f} s")

    parse_rate = None
    if args.stanza_model_dir:
        from preprocess.parsers.stanza_parser import StanzaParser

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
    print(" ".join(f"{k}={v}" for k, v in kv.items()))


if __name__ == "__main__":
    main()
