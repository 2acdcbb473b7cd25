#!/usr/bin/env python
"""tree2seq vs fairseq's own transformer of identical size, on the same batches, in one run.

    python scripts/bench_tree2seq.py [--quick] [--arch tree2seq_iwslt_de_en] [--device cpu|cuda]

For each source length n (8..256; random binary trees, so m = n - 1 nodes: the encoder of tree2seq
attends over 2n - 1 positions): train-step time (forward + backward + Adam step) and tokens/s at about
``--tokens`` target tokens per batch, peak activation memory of one train step (CUDA: the allocator's
peak; CPU: peak RSS growth of a fresh process per measurement), then beam-5 decoding speed.
Ratios are tree2seq / transformer. The last line is ``key=value`` pairs (at the longest length).
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import torch  # noqa: E402


def make_data_dir(path: Path, vocab: int, labels: int) -> None:
    with open(path / "dict.src.txt", "w") as f:
        f.writelines(f"w{i} 1\n" for i in range(vocab))
    (path / "dict.tgt.txt").write_text((path / "dict.src.txt").read_text())
    with open(path / "dict.src.labels.txt", "w") as f:
        f.writelines(f"L{i} 1\n" for i in range(labels))


def build(kind: str, data: Path, arch: str, device: str):
    from fairseq import options, tasks

    import fairseq_tree  # noqa: F401

    common = [str(data), "-s", "src", "-t", "tgt", "--dropout", "0.1", "--share-all-embeddings"]
    tree_argv = common + ["--user-dir", str(REPO / "fairseq_tree"), "--task", "tree_translation", "--arch", arch]
    if kind == "tree2seq":
        argv = tree_argv
    else:  # fairseq's transformer with the tree2seq arch's sizes
        ref = options.parse_args_and_arch(options.get_training_parser(), tree_argv)
        sizes = []
        for k in ("encoder_embed_dim", "encoder_ffn_embed_dim", "encoder_attention_heads", "encoder_layers",
                  "decoder_embed_dim", "decoder_ffn_embed_dim", "decoder_attention_heads", "decoder_layers"):
            sizes += ["--" + k.replace("_", "-"), str(getattr(ref, k))]
        argv = common + ["--task", "translation", "--arch", "transformer"] + sizes
    args = options.parse_args_and_arch(options.get_training_parser(), argv)
    task = tasks.setup_task(args)
    torch.manual_seed(0)
    return task, task.build_model(args).to(device)


def make_batch(n: int, bsz: int, vocab: int, labels: int, device: str, seed: int):
    from fairseq_tree.trees import distances_to_tree

    g = torch.Generator().manual_seed(seed)
    src = torch.randint(4, vocab, (bsz, n), generator=g)
    tgt = torch.randint(4, vocab, (bsz, n), generator=g)
    prev = torch.cat([torch.full((bsz, 1), 2), tgt[:, :-1]], 1)
    spans = torch.stack([torch.tensor(distances_to_tree(torch.rand(n - 1, generator=g).tolist()), dtype=torch.long)
                         .view(-1, 2) for _ in range(bsz)]) if n > 1 else torch.zeros(bsz, 0, 2, dtype=torch.long)
    nodes = torch.randint(4, labels, (bsz, spans.size(1)), generator=g)
    net = {"src_tokens": src, "src_lengths": torch.full((bsz,), n), "prev_output_tokens": prev}
    tree = {"src_nodes": nodes, "src_spans": spans}
    to = lambda d: {k: v.to(device) for k, v in d.items()}  # noqa: E731
    return to(net), to(tree), tgt.to(device)


def train_steps(model, net, tree, tgt, steps: int, device: str) -> float:
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    model.train()
    kw = dict(net, **tree) if hasattr(model.encoder, "build_tree") else net
    times = []
    for i in range(steps + 1):
        if device == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        out, _ = model(**kw)
        loss = torch.nn.functional.cross_entropy(out.float().transpose(1, 2), tgt)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if device == "cuda":
            torch.cuda.synchronize()
        if i:  # the first step warms up
            times.append(time.perf_counter() - t0)
    times.sort()
    return times[len(times) // 2] if times else float("nan")


def peak_memory_mb(kind, data, arch, n, bsz, vocab, labels, device) -> float:
    """Peak extra memory of one train step: CUDA allocator peak, or RSS growth in a fresh process."""
    if device == "cuda":
        task, model = build(kind, data, arch, device)
        net, tree, tgt = make_batch(n, bsz, vocab, labels, device, seed=1)
        train_steps(model, net, tree, tgt, 0, device)  # allocate optimizer state first
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        train_steps(model, net, tree, tgt, 0, device)
        return (torch.cuda.max_memory_allocated() - base) / 2**20
    out = subprocess.run([sys.executable, __file__, "--_memory-child", json.dumps(
        [kind, str(data), arch, n, bsz, vocab, labels])], capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def _memory_child(spec):
    kind, data, arch, n, bsz, vocab, labels = json.loads(spec)
    task, model = build(kind, Path(data), arch, "cpu")
    net, tree, tgt = make_batch(n, bsz, vocab, labels, "cpu", seed=1)
    train_steps(model, net, tree, tgt, 0, "cpu")  # optimizer state + allocator warm
    with open("/proc/self/statm") as f:
        base = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    train_steps(model, net, tree, tgt, 0, "cpu")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(max(peak - base, 0) / 2**20)


def decode_speed(task, model, n, bsz, vocab, labels, device) -> float:
    from fairseq.dataclass.configs import GenerationConfig

    net, tree, _ = make_batch(n, bsz, vocab, labels, device, seed=2)
    gen = task.build_generator([model], GenerationConfig(beam=5, max_len_a=0, max_len_b=n, min_len=n))
    model.eval()
    inp = dict(net, **tree) if hasattr(model.encoder, "build_tree") else dict(net)
    inp.pop("prev_output_tokens")
    with torch.no_grad():
        gen.generate([model], {"net_input": inp})  # warm-up
        if device == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        gen.generate([model], {"net_input": inp})
        if device == "cuda":
            torch.cuda.synchronize()
    return bsz / (time.perf_counter() - t0)


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--_memory-child":
        return _memory_child(sys.argv[2])
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="tiny arch, lengths 8/32/64, under a minute")
    ap.add_argument("--arch", default=None, help="tree2seq architecture (default tree2seq_iwslt_de_en; quick: tiny)")
    ap.add_argument("--lengths", default=None, help="comma-separated source lengths (default 8,16,32,64,128,256)")
    ap.add_argument("--tokens", type=int, default=None, help="target tokens per batch (default 2048; quick 512)")
    ap.add_argument("--steps", type=int, default=None, help="timed train steps per length (median reported)")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = ap.parse_args()
    arch = args.arch or ("tree2seq_tiny" if args.quick else "tree2seq_iwslt_de_en")
    lengths = [int(x) for x in (args.lengths or ("8,32,64" if args.quick else "8,16,32,64,128,256")).split(",")]
    tokens = args.tokens or (512 if args.quick else 2048)
    steps = args.steps or (3 if args.quick else 5)
    vocab, labels = 8000, 80
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))

    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp)
        make_data_dir(data, vocab, labels)
        models = {k: build(k, data, arch, args.device) for k in ("tree2seq", "transformer")}
        params = {k: sum(p.numel() for p in m.parameters()) for k, (_, m) in models.items()}
        print(f"arch {arch} on {args.device} (threads {torch.get_num_threads()}); parameters: "
              f"tree2seq {params['tree2seq']:,}, transformer {params['transformer']:,}")
        print(f"{'n':>5} {'bsz':>4} | {'step ms':>17} {'ratio':>6} | {'tgt tok/s':>17} | {'peak MB':>15} {'ratio':>6}")
        rows = []
        for n in lengths:
            bsz = max(1, tokens // n)
            net, tree, tgt = make_batch(n, bsz, vocab, labels, args.device, seed=0)
            t = {k: train_steps(m, net, tree, tgt, steps, args.device) for k, (_, m) in models.items()}
            mem = {k: peak_memory_mb(k, data, arch, n, bsz, vocab, labels, args.device) for k in models}
            row = dict(n=n, bsz=bsz, time_ratio=t["tree2seq"] / t["transformer"],
                       memory_ratio=mem["tree2seq"] / max(mem["transformer"], 1e-6), t=t, mem=mem)
            rows.append(row)
            print(f"{n:5d} {bsz:4d} | {t['tree2seq'] * 1e3:8.1f} {t['transformer'] * 1e3:8.1f} "
                  f"{row['time_ratio']:6.2f} | "
                  f"{bsz * n / t['tree2seq']:8.0f} {bsz * n / t['transformer']:8.0f} | "
                  f"{mem['tree2seq']:7.1f} {mem['transformer']:7.1f} {row['memory_ratio']:6.2f}")
        dn = 32 if args.quick else 64
        dec = {k: decode_speed(task, m, dn, 16 if args.quick else 32, vocab, labels, args.device)
               for k, (task, m) in models.items()}
        print(f"beam-5 decoding, source/target length {dn}: tree2seq {dec['tree2seq']:.1f} sent/s, "
              f"transformer {dec['transformer']:.1f} sent/s")
    last = rows[-1]
    kv = dict(arch=arch, device=args.device, n=last["n"], time_ratio=round(last["time_ratio"], 3),
              memory_ratio=round(last["memory_ratio"], 3),
              mean_time_ratio=round(sum(r["time_ratio"] for r in rows) / len(rows), 3),
              decode_ratio=round(dec["transformer"] / dec["tree2seq"], 3),
              tree2seq_peak_mb=round(last["mem"]["tree2seq"], 1),
              transformer_peak_mb=round(last["mem"]["transformer"], 1))
    print(" ".join(f"{k}={v}" for k, v in kv.items()))


if __name__ == "__main__":
    main()
