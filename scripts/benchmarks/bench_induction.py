#!/usr/bin/env python
"""Unsupervised-parsing MLMs vs the plain ``mlm_transformer`` (fairseq's TransformerEncoderLayer) of identical
size, on the same masked batches, in one run.

    python scripts/benchmarks/bench_induction.py [--quick] [--size small|base|tiny] [--device cpu|cuda]

For each sentence length n (8..128 words, ``<s> w.. </s>``, 15% of words masked): train-step time (forward +
masked-LM loss + backward + Adam step, median of ``--steps``) at about ``--tokens`` tokens per batch (the
models alternated step by step: ``alternate.py``), and peak
activation memory of one train step (the most tensor bytes alive at once: CUDA's allocator, CPU's profiler).
Pairs: ``constituent_transformer{size}`` and ``structformer{size}``, each against ``mlm_transformer`` with its
layers, d, heads, FFN and activation (``mlm_for_*``); dropout 0.1 everywhere. Ratios are model / baseline.
The last line is ``key=value`` pairs at the longest length (``constituent_time_ratio=``,
``structformer_time_ratio=``, ``structformer_memory_ratio=``, ``constituent_memory_ratio=``, ...; ``*_paired_ratio=``:
the median of the per-round ratios, :func:`alternate.paired_ratio`).
"""

import argparse
import logging
import os
import sys
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch

from fairseq_tree.utils.step_memory import peak_mb

sys.path.insert(0, str(Path(__file__).resolve().parent))
from alternate import alternate, paired_ratio, train_step  # noqa: E402

REPO = Path(__file__).resolve().parents[2]

VOCAB = 10000
PAIRS = {"constituent": ("constituent_transformer", "mlm_for_constituent_transformer"),
         "structformer": ("structformer", "mlm_for_structformer")}
SIZE_ARGS = ("encoder_embed_dim", "encoder_layers", "encoder_attention_heads", "encoder_ffn_embed_dim",
             "activation_fn", "activation_dropout", "encoder_learned_pos", "max_positions")


def dictionary():
    from fairseq.data import Dictionary

    d = Dictionary()
    for i in range(VOCAB):
        d.add_symbol(f"w{i}")
    d.add_symbol("<mask>")
    return d


def build(name: str, size: str, device: str):
    """``constituent_transformer``/``structformer`` of the size's arch, or ``mlm_for_X``: mlm_transformer with X's
    sizes (layers, d, heads, FFN, activation) copied from X's arch, so each pair differs only in structure."""
    import importlib

    import fairseq_tree  # noqa: F401  (registers the models)
    from fairseq_tree.models import mlm_transformer

    suffix = "" if size == "base" else f"_{size}"
    drop = dict(dropout=0.1, attention_dropout=0.1)
    if name.startswith("mlm_for_"):
        ref = build(name[len("mlm_for_"):], size, "cpu")
        sizes = {k: getattr(ref.args, k) for k in SIZE_ARGS if hasattr(ref.args, k)}
        torch.manual_seed(0)
        return mlm_transformer.build_standalone(dictionary(), "mlm_transformer", **sizes, **drop).to(device)
    module = importlib.import_module(f"fairseq_tree.models.{name}")
    torch.manual_seed(0)
    return module.build_standalone(dictionary(), name + suffix, **drop).to(device)


def make_batch(n: int, bsz: int, device: str, seed: int):
    """src [bsz, n+2] (``<s> w.. </s>``, equal lengths: timing, not padding, is measured), masked positions,
    targets."""
    d = dictionary()
    g = torch.Generator().manual_seed(seed)
    words = torch.randint(d.nspecial, VOCAB, (bsz, n), generator=g)
    src = torch.cat([torch.full((bsz, 1), d.bos()), words, torch.full((bsz, 1), d.eos())], 1)
    masked = torch.zeros_like(src, dtype=torch.bool)
    masked[:, 1:-1] = torch.rand(bsz, n, generator=g) < 0.15
    masked[:, 1] = True  # at least one per sentence
    target = src[masked]
    src = src.masked_fill(masked, d.index("<mask>"))
    lengths = torch.full((bsz,), n + 2)
    return src.to(device), lengths.to(device), masked.to(device), target.to(device)


def make_step(model, batch):
    """One train step (forward, masked-LM loss, backward, Adam) as a function, for :func:`alternate.alternate`."""
    src, lengths, masked, target = batch

    def loss():
        logits, _ = model(src, lengths, masked_tokens=masked)
        return torch.nn.functional.cross_entropy(logits.float(), target)
    return train_step(model, loss)


def train_steps(model, batch, steps: int, device: str) -> float:
    """Median seconds of ``steps`` train steps of one model after a warm-up step (the memory children; timings
    alternate the models)."""
    return alternate({"m": make_step(model, batch)}, steps, device)["m"]["median"]


def peak_memory_mb(name, size, n, bsz, device) -> float:
    """Peak extra memory of one train step after a warm-up step (optimizer state allocated): the tensors alive
    at once beyond those before it (CUDA allocator / CPU profiler, ``fairseq_tree/utils/step_memory.py``)."""
    model = build(name, size, device)
    batch = make_batch(n, bsz, device, seed=1)
    step = lambda: train_steps(model, batch, 0, device)  # noqa: E731
    return peak_mb(step, device, warmup=step)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="tiny archs, lengths 8/32/64, under a minute")
    ap.add_argument("--size", choices=["tiny", "small", "base"], default=None, help="arch size (default small)")
    ap.add_argument("--lengths", default=None, help="comma-separated sentence lengths (default 8,16,32,64,128)")
    ap.add_argument("--tokens", type=int, default=None, help="tokens per batch (default 4096; quick 1024)")
    ap.add_argument("--steps", type=int, default=None, help="timed train steps per length (median reported)")
    ap.add_argument("--raw", action="store_true", help="print every timed step")
    ap.add_argument("--no-memory", action="store_true", help="skip the memory measurements")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = ap.parse_args()
    # importing fairseq sets the root logger to DEBUG: inductor's file locks and fairseq's INFO lines would bury
    # the tables
    logging.getLogger().setLevel(logging.WARNING)
    size = args.size or ("tiny" if args.quick else "small")
    lengths = [int(x) for x in (args.lengths or ("8,32,64" if args.quick else "8,16,32,64,128")).split(",")]
    tokens = args.tokens or (1024 if args.quick else 4096)
    steps = args.steps or (3 if args.quick else 5)
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    names = sorted({n for pair in PAIRS.values() for n in pair})
    models = {k: build(k, size, args.device) for k in names}
    params = {k: sum(p.numel() for p in m.parameters()) for k, m in models.items()}
    print(f"size {size} on {args.device} (threads {torch.get_num_threads()}); parameters: "
          + ", ".join(f"{k} {v:,}" for k, v in params.items()))
    print(f"{'n':>4} {'bsz':>4} | " + " | ".join(f"{k:>12} ms {'ratio':>6} {'MB':>7} {'ratio':>6}" for k in PAIRS))
    rows = []
    for n in lengths:
        bsz = max(1, tokens // (n + 2))
        batch = make_batch(n, bsz, args.device, seed=0)
        timed = alternate({k: make_step(m, batch) for k, m in models.items()}, steps, args.device)
        t = {k: r["median"] for k, r in timed.items()}
        if args.raw:
            print(f"  n = {n} step times (ms, alternated): " + "; ".join(
                f"{k} " + " ".join(f"{x * 1e3:.1f}" for x in r["times"]) for k, r in timed.items()))
        skip = args.no_memory or (args.quick and n != lengths[-1])  # quick: memory at the longest length only
        mem = {k: (float("nan") if skip else peak_memory_mb(k, size, n, bsz, args.device)) for k in names}
        row = dict(n=n, bsz=bsz, t=t, mem=mem)
        cells = []
        for key, (model, base) in PAIRS.items():
            row[f"{key}_time_ratio"] = t[model] / t[base]
            row[f"{key}_paired_ratio"] = paired_ratio(timed, model, base)
            row[f"{key}_memory_ratio"] = mem[model] / max(mem[base], 1e-6)
            cells.append(f"{t[model] * 1e3:8.1f} ms {row[f'{key}_time_ratio']:6.2f} {mem[model]:7.1f} "
                         f"{row[f'{key}_memory_ratio']:6.2f}")
        print(f"{n:4d} {bsz:4d} | " + " | ".join(cells) + "   baselines: " +
              ", ".join(f"{b} {t[b] * 1e3:.1f} ms {mem[b]:.1f} MB" for _, b in PAIRS.values()))
        rows.append(row)
    last = rows[-1]
    kv = dict(size=size, device=args.device, n=last["n"])
    for key in PAIRS:
        kv[f"{key}_time_ratio"] = round(last[f"{key}_time_ratio"], 3)
        kv[f"{key}_paired_ratio"] = round(last[f"{key}_paired_ratio"], 3)
        kv[f"{key}_memory_ratio"] = round(last[f"{key}_memory_ratio"], 3)
        kv[f"{key}_mean_time_ratio"] = round(sum(r[f"{key}_time_ratio"] for r in rows) / len(rows), 3)
    print(" ".join(f"{k}={v}" for k, v in kv.items()))


if __name__ == "__main__":
    main()
