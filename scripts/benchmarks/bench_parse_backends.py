#!/usr/bin/env python
"""Parse throughput of the preprocessing backends (stanza, lal, induced): sentences/s on real sentences, in
length-sorted batches (the default) and in input-order batches, on ``--device cpu|cuda``.

    python scripts/benchmarks/bench_parse_backends.py --stanza-model-dir work/stanza_en_ptb [--device cuda] [--quick]
        [--lal-model CKPT] [--induced-model CKPT --induced-data DIR] [--sentences N] [--batch-size B]

Sentences: the first N lines of Multi30k ``train.en`` (``--corpus multi30k``, PTB-tokenized as the pipeline
does) or of ptb_sample ``train.txt`` (``--corpus ptb``, already tokenized). Each backend is built twice
(``sort_by_length`` True / False), warmed up on 16 sentences, then parses the N sentences in one ``parse`` call
(the backend batches them: ``--batch-size`` sentences per model batch; stanza sorted = one stanza call, which
sorts by itself). Throughput does not depend on the weights, so without ``--lal-model`` / ``--induced-model``
the script trains ``--lal-arch`` / ``--induced-arch`` for one update on 300 ptb_sample trees (model sizes
as named). Reports, per backend and mode, sentences/s, the padded share of token slots, and whether both modes
gave the same trees. ``--quick``: 200 sentences, tiny architectures (under a minute on one CPU thread).

The last line is ``key=value`` pairs.
"""

import argparse
import logging
import os
import sys
import tempfile
import time
from pathlib import Path

from fairseq_tree.parsers import build_parser, check_device, length_batches

os.environ.setdefault("OMP_NUM_THREADS", "1")
REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared" / "data"


def read_sentences(corpus: str, n: int):
    """The first ``n`` sentences as token lists."""
    if corpus == "ptb":
        lines = (SHARED / "ptb_sample" / "train.txt").read_text(encoding="utf-8").splitlines()[:n]
        return [line.split() for line in lines]
    from fairseq_tree.text.tokenize import Tokenizer

    tok = Tokenizer("moses", "en", ptb=True)
    return [tok(line) for line in (SHARED / "multi30k" / "train.en").read_text(encoding="utf-8").splitlines()[:n]]


def _fairseq_train(argv):
    """fairseq-train in this process (no second import of torch and fairseq: the setup stays short)."""
    from fairseq import distributed_utils, options
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf
    from fairseq_cli import train

    args = options.parse_args_and_arch(options.get_training_parser(), input_args=[str(a) for a in argv])
    logging.getLogger().setLevel(logging.WARNING)  # fairseq_cli.train logs INFO to stdout
    distributed_utils.call_main(convert_namespace_to_omegaconf(args), train.main)


def train_one_update(kind: str, arch: str, work: Path) -> Path:
    """A ``kind`` ('lal' or 'induced') checkpoint of ``arch`` after one update on 300 ptb_sample trees."""
    ptb = SHARED / "ptb_sample"
    d = work / kind
    d.mkdir(parents=True, exist_ok=True)
    mrg = (ptb / "train.mrg").read_text(encoding="utf-8").splitlines()[:300]
    (d / "t.mrg").write_text("\n".join(mrg) + "\n", encoding="utf-8")
    common = ["--user-dir", REPO / "fairseq_tree", "--arch", arch, "--optimizer", "adam", "--lr", "1e-4",
              "--max-update", "1", "--cpu", "--save-dir", d / "ck", "--no-epoch-checkpoints",
              "--disable-validation", "--log-format", "simple"]
    if kind == "lal":
        from fairseq_tree.data import parsing_data

        blocks = [b for b in (ptb / "train.conllu").read_text(encoding="utf-8").split("\n\n") if b.strip()][:300]
        (d / "t.conllu").write_text("\n\n".join(blocks) + "\n\n", encoding="utf-8")
        parsing_data.main([str(a) for a in ("--destdir", d / "bin", "--train", d / "t.mrg", "--train-dep",
                                            d / "t.conllu", "--valid", d / "t.mrg", "--valid-dep", d / "t.conllu")])
        _fairseq_train([d / "bin", "--task", "constituency_parsing", "--criterion", "span_hinge_dependency",
                        "--batch-size", "16", "--no-pos-tags", *common])
    else:
        from fairseq import options
        from fairseq_cli import preprocess

        from fairseq_tree.data import induction_text

        induction_text.cli_main(["--out", str(d / "t.txt"), "--treebank", str(d / "t.mrg")])
        preprocess.main(options.get_preprocessing_parser().parse_args(
            ["--only-source", "--trainpref", str(d / "t.txt"), "--validpref", str(d / "t.txt"),
             "--destdir", str(d / "bin")]))
        _fairseq_train([d / "bin", "--task", "tree_induction", "--criterion", "masked_lm", "--max-tokens", "2000",
                        *common])
    return d / "ck" / "checkpoint_last.pt"


def pad_share(sentences, batch_size: int, sort: bool, whole: bool = False) -> float:
    """Padded share of the [B, max length] token slots of the batches a backend forms (``whole``: one batch)."""
    lengths = [len(s) for s in sentences]
    batches = length_batches(lengths, len(lengths) if whole else batch_size, sort)
    slots = sum(max(lengths[i] for i in b) * len(b) for b in batches)
    return 1 - sum(lengths) / slots


def bench(name: str, options: dict, sentences, repeats: int):
    """-> {mode: (sentences/s, trees)} for sorted and unsorted batching."""
    out = {}
    for mode in ("sorted", "unsorted"):
        backend = build_parser(name, sort_by_length=mode == "sorted", **options)
        backend.parse(sentences[:16])  # warm-up (lazy init, allocator)
        best, trees = None, None
        for _ in range(repeats):
            t0 = time.perf_counter()
            trees = backend.parse(sentences)
            dt = time.perf_counter() - t0
            best = dt if best is None else min(best, dt)
        out[mode] = (len(sentences) / best, trees)
        print(f"{name:8s} {mode:8s} {len(sentences) / best:9.1f} sentences/s ({best:.2f} s)", file=sys.stderr,
              flush=True)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="200 sentences, tiny architectures, under a minute")
    ap.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    ap.add_argument("--backends", default="stanza,lal,induced")
    ap.add_argument("--corpus", choices=["multi30k", "ptb"], default="multi30k")
    ap.add_argument("--sentences", type=int, default=None, help="default 1000 (--quick: 200)")
    ap.add_argument("--batch-size", type=int, default=64, help="sentences per model batch (stanza: constituency)")
    ap.add_argument("--repeats", type=int, default=1, help="timed runs per mode; the fastest counts")
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: OMP_NUM_THREADS)")
    ap.add_argument("--stanza-model-dir", default=str(REPO / "work" / "stanza_en_ptb"))
    ap.add_argument("--lal-model", help="a lal_parser checkpoint (--no-pos-tags); default: --lal-arch, 1 update")
    ap.add_argument("--lal-arch", default=None, help="default lal_parser_small (--quick: lal_parser_tiny)")
    ap.add_argument("--induced-model", help="a tree_induction checkpoint; default: --induced-arch, 1 update")
    ap.add_argument("--induced-data", help="its data-bin, if not where the checkpoint says")
    ap.add_argument("--induced-arch", default=None, help="default structformer_small (--quick: structformer_tiny)")
    args = ap.parse_args()
    try:
        check_device(args.device)
    except ValueError as e:
        ap.error(str(e))
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    n = args.sentences or (200 if args.quick else 1000)
    sentences = read_sentences(args.corpus, n)
    backends = args.backends.split(",")
    results = {"device": args.device, "corpus": args.corpus, "sentences": len(sentences),
               "mean_tokens": round(sum(map(len, sentences)) / len(sentences), 1), "batch_size": args.batch_size}
    with tempfile.TemporaryDirectory() as tmp:
        for name in backends:
            if name == "stanza":
                options = {"model_dir": args.stanza_model_dir}
            elif name == "lal":
                arch = args.lal_arch or ("lal_parser_tiny" if args.quick else "lal_parser_small")
                ckpt = args.lal_model or train_one_update("lal", arch, Path(tmp))
                options = {"model": str(ckpt)}
                results["lal_model"] = args.lal_model or arch
            elif name == "induced":
                arch = args.induced_arch or ("structformer_tiny" if args.quick else "structformer_small")
                ckpt = args.induced_model or train_one_update("induced", arch, Path(tmp))
                options = {"model": str(ckpt), "data": args.induced_data if args.induced_model else None}
                results["induced_model"] = args.induced_model or arch
            else:
                ap.error(f"unknown backend {name!r}")
            options.update(device=args.device, batch_size=args.batch_size)
            r = bench(name, options, sentences, args.repeats)
            results[f"{name}_sorted"] = round(r["sorted"][0], 1)
            results[f"{name}_unsorted"] = round(r["unsorted"][0], 1)
            results[f"{name}_speedup"] = round(r["sorted"][0] / r["unsorted"][0], 2)
            results[f"{name}_same_trees"] = r["sorted"][1] == r["unsorted"][1]
    results["pad_share_sorted"] = round(pad_share(sentences, args.batch_size, True), 3)
    results["pad_share_unsorted"] = round(pad_share(sentences, args.batch_size, False), 3)
    print(" ".join(f"{k}={v}" for k, v in results.items()))


if __name__ == "__main__":
    main()
