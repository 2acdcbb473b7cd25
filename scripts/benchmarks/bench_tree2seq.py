#!/usr/bin/env python
"""tree2seq vs fairseq's own transformer, on the same batches, in one run.

    python scripts/benchmarks/bench_tree2seq.py [--quick] [--arch tree2seq_iwslt_de_en] [--device cpu|cuda] [--fp16]
                                     [--trees ptb,random] [--tokens 2048] [--width 32]

Two baselines, both fairseq's ``transformer`` with the tree2seq arch's sizes:

* **same-size** (``tf``): the same source leaves and targets; the tree's nodes are simply absent;
* **positions-matched** (``pm``): a source of n + m tokens per sentence (as many encoder positions as
  tree2seq's leaves + nodes), same targets: what is left of the ratio against it is the tree machinery's own
  cost (accumulation, hierarchical embeddings, structure, masks), not the longer encoder sequence.

Trees: ``random`` binary trees (m = n - 1, the worst case), or ``ptb``: real parse trees, the PTB sample's
(``../shared/data/ptb_sample/train.mrg``, or ``--ptb FILE``) with BPE subtrees (subword-nmt, 2,000 merges
learned on its words), random trees that fit joined under a ``ROOT`` up to n leaves (0.9 n to n; m is about
0.6 n, the demo's data-bin has 0.7 n). For each tree kind and source length n (8..256): train-step time
(forward + backward + Adam step, median of ``--steps``, the models alternated step by step:
``alternate.py``) at about ``--tokens`` target tokens per batch, peak
memory of one train step (the most tensor bytes alive at once: CUDA's allocator, CPU's profiler), then beam-5
decoding speed, and the aten operators one train step dispatches (at the longest length: on a GPU that waits for
the host, step time follows that count). Ratios are tree2seq / baseline. The last line is ``key=value`` pairs at
the longest length of the first tree kind: ``time_ratio``/``memory_ratio`` (same-size),
``time_ratio_pm``/``memory_ratio_pm`` (positions-matched), ``decode_ratio``/``decode_ratio_pm``,
``ops_ratio``/``ops_ratio_pm``, and means over lengths.
"""

import argparse
import contextlib
import logging
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch

from fairseq_tree.modules.tree_compile import BACKENDS, SCOPES
from fairseq_tree.modules.tree_kernels import KERNELS
from fairseq_tree.utils.step_memory import peak_mb

sys.path.insert(0, str(Path(__file__).resolve().parent))
from alternate import alternate, paired_ratio  # noqa: E402
from tree2seq_probes import (  # noqa: E402
    compile_kernels,
    count_launches,
    count_only,
    launch_table,
    phase_table,
    phase_times,
    profile_step,
)
from tree2seq_step import (  # noqa: E402
    CLOCKS,
    KINDS,
    REPO,
    Compiled,
    autocast,
    batch_from_spec,
    build,
    learn_ptb_pool,
    make_data_dir,
    make_step,
    run_inputs,
    step_batch,
    train_steps,
)


def peak_memory_mb(run: str, batch, device: str, amp: str, models) -> float:
    """Peak extra memory of one train step after a warm-up step (optimizer state allocated): the tensors alive
    at once beyond those before it (CUDA allocator / CPU profiler, ``fairseq_tree/utils/step_memory.py``)."""
    _, model = models[KINDS[run]]
    net, tree = run_inputs(run, batch)
    step = lambda: train_steps(model, net, tree, batch[3], 0, device, amp)  # noqa: E731
    return peak_mb(step, device, warmup=step)


def decode_speed(task, model, batch, device, amp: str, tree_side: bool) -> float:
    """Beam-5 sentences/s on ``batch``'s sources, exactly n target tokens each."""
    from fairseq.dataclass.configs import GenerationConfig

    net, tree = batch
    model = model.model if isinstance(model, Compiled) else model  # beam search runs eager
    n = net["prev_output_tokens"].size(1)
    gen = task.build_generator([model], GenerationConfig(beam=5, max_len_a=0, max_len_b=n, min_len=n))
    model.eval()
    inp = dict(net, **tree) if tree_side else dict(net)
    inp.pop("prev_output_tokens")
    with torch.no_grad(), autocast(device, amp):
        gen.generate([model], {"net_input": inp})  # warm-up
        if device == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        gen.generate([model], {"net_input": inp})
        if device == "cuda":
            torch.cuda.synchronize()
    return net["src_tokens"].size(0) / (time.perf_counter() - t0)


def tree_compiler(models):
    """tree2seq's LayerCompiler (``--tree-compile``), or None."""
    model = models["tree2seq"][1]
    return getattr(getattr(model, "model", model).encoder, "compiler", None)


def bench_trees(kind, models, data, arch, lengths, tokens, steps, vocab, labels, device, amp, codes, ptb, quick,
                no_memory=False, raw=False, no_decode=False, clock=time.perf_counter):
    """One tree kind: a table per length and the decoding line; returns the rows and decoding speeds."""
    print(f"\n== {kind} trees ({'m = n - 1' if kind == 'random' else 'PTB sample + BPE subtrees'})")
    print(f"{'n':>5} {'m/n':>5} {'bsz':>4} | {'step ms: tree':>13} {'tf':>7} {'pm':>7} {'/tf':>5} {'/pm':>5} | "
          f"{'peak MB: tree':>13} {'tf':>7} {'pm':>7} {'/tf':>5} {'/pm':>5}")
    rows = []
    warm = batch_from_spec([str(data), arch, lengths[0], max(1, tokens // lengths[0]), vocab, labels, 9,
                            str(codes) if kind == "ptb" else None, str(ptb)], device)
    # first calls pay for lazy initialisation (and compilation): not part of any median, reported apart
    first = alternate({run: make_step(models[KINDS[run]][1], *run_inputs(run, warm), warm[3], device, amp)
                       for run in KINDS}, 2, device)
    print("first step (s, lazy initialisation and compilation): "
          + ", ".join(f"{run} {r['first']:.2f}" for run, r in first.items()))
    for n in lengths:
        bsz = max(1, tokens // n)
        batch = step_batch(data, arch, n, tokens, vocab, labels, codes, ptb, kind, device)
        m_over_n = batch[1]["src_spans"].size(1) and float(
            (batch[1]["src_nodes"] != 1).sum() / (batch[0]["src_tokens"] != 1).sum())
        timed = alternate({run: make_step(models[KINDS[run]][1], *run_inputs(run, batch), batch[3], device, amp)
                           for run in KINDS}, steps, device, clock=clock)
        t = {run: r["median"] for run, r in timed.items()}
        if raw:
            print(f"  n = {n} step times (ms, alternated): " + "; ".join(
                f"{run} " + " ".join(f"{x * 1e3:.1f}" for x in r["times"]) for run, r in timed.items()))
            print(f"  n = {n} paired ratios (median of per-round ratios): "
                  f"/tf {paired_ratio(timed, 'tree2seq', 'tf'):.3f} /pm {paired_ratio(timed, 'tree2seq', 'pm'):.3f}")
        mem = {run: (float("nan") if no_memory else peak_memory_mb(run, batch, device, amp, models)) for run in KINDS}
        row = dict(n=n, bsz=bsz, m_over_n=m_over_n, t=t, mem=mem,
                   time_ratio=t["tree2seq"] / t["tf"], time_ratio_pm=t["tree2seq"] / t["pm"],
                   memory_ratio=mem["tree2seq"] / max(mem["tf"], 1e-6),
                   memory_ratio_pm=mem["tree2seq"] / max(mem["pm"], 1e-6))
        rows.append(row)
        print(f"{n:5d} {m_over_n:5.2f} {bsz:4d} | {t['tree2seq'] * 1e3:13.1f} {t['tf'] * 1e3:7.1f} "
              f"{t['pm'] * 1e3:7.1f} {row['time_ratio']:5.2f} {row['time_ratio_pm']:5.2f} | "
              f"{mem['tree2seq']:13.1f} {mem['tf']:7.1f} {mem['pm']:7.1f} {row['memory_ratio']:5.2f} "
              f"{row['memory_ratio_pm']:5.2f}")
    counters = {run: count_launches(run, batch, device, amp, models) for run in KINDS}
    ops = {run: c.total() for run, c in counters.items()}
    compiler = tree_compiler(models)
    if compiler is not None:
        print(f"--tree-compile: {compiler.graphs} graphs compiled so far, {compiler.seconds:.1f} s in inductor "
              "(forward graphs; backward compiled at the first backward, inside the first step)")
    launch_table({"tree2seq": counters["tree2seq"], "pm": counters["pm"]}, n)
    print(f"launches per train step (forward + backward), n = {n}: tree2seq {ops['tree2seq']:,}, "
          f"same-size {ops['tf']:,}, positions-matched {ops['pm']:,}")
    rows[-1].update(ops_ratio=ops["tree2seq"] / ops["tf"], ops_ratio_pm=ops["tree2seq"] / ops["pm"])
    if no_decode:
        return rows, {run: float("nan") for run in KINDS}
    dn = 32 if quick else 64
    spec = [str(data), arch, dn, 16 if quick else 32, vocab, labels, 2, str(codes) if kind == "ptb" else None,
            str(ptb)]
    batch = batch_from_spec(spec, device)
    dec = {run: decode_speed(*models[KINDS[run]], run_inputs(run, batch), device, amp, run == "tree2seq")
           for run in KINDS}
    print(f"beam-5 decoding, n = {dn}: tree2seq {dec['tree2seq']:.1f} sent/s, same-size {dec['tf']:.1f}, "
          f"positions-matched {dec['pm']:.1f}")
    return rows, dec


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="tiny arch, lengths 8/32/64, a minute or two")
    ap.add_argument("--arch", default=None, help="tree2seq architecture (default tree2seq_iwslt_de_en; quick: tiny)")
    ap.add_argument("--lengths", default=None, help="comma-separated source lengths (default 8,16,32,64,128,256)")
    ap.add_argument("--tokens", type=int, default=None, help="target tokens per batch (default 2048; quick 512)")
    ap.add_argument("--steps", type=int, default=None, help="timed train steps per length (median reported)")
    ap.add_argument("--trees", default="ptb,random", help="tree kinds, in order: ptb (real), random (m = n - 1)")
    ap.add_argument("--ptb", default=str(REPO.parent / "shared" / "data" / "ptb_sample" / "train.mrg"),
                    help="treebank for --trees ptb")
    ap.add_argument("--amp", choices=["fp32", "fp16", "bf16", "cpu-bf16"], default="fp32",
                    help="autocast on CUDA; cpu-bf16: the CPU's bf16 autocast (for --count-launches on the CPU)")
    ap.add_argument("--tree-kernels", choices=KERNELS, default="eager",
                    help="tree2seq's --tree-kernels: the tree work of each layer by eager operators or fused kernels")
    ap.add_argument("--count-launches", action="store_true",
                    help="only count the kernel launches of a train step at the longest length (aten operators plus "
                         "fused-kernel launches; no timing, memory or decoding): per layer, per step, tree2seq against "
                         "the positions-matched transformer. On the CPU, --tree-kernels fused runs its kernels in "
                         "triton's interpreter (TRITON_INTERPRET=1): the launches they make on a GPU")
    ap.add_argument("--compile-kernels", type=lambda s: [int(c) for c in s.split(",")], default=None,
                    metavar="CCS", help="only compile tree2seq's fused kernels of a train step for these NVIDIA "
                                       "compute capabilities (e.g. 80,90: A100, H100/H200) with triton's real "
                                       "compiler, on any machine (no GPU), and print ptxas's registers / shared / "
                                       "spills per kernel")
    ap.add_argument("--compile-amps", type=lambda s: s.split(","), default=["fp32", "bf16", "fp16"],
                    help="with --compile-kernels: the precisions (comma-separated fp32, bf16, fp16)")
    ap.add_argument("--host-only", type=int, default=None, metavar="CC",
                    help="with --tree-kernels fused on the CPU: the kernels are compiled for compute capability CC and "
                         "never run (their outputs unwritten), so tree2seq's step times the host's work alone, "
                         "triton's launch binding included: with --width 32 a stand-in for a host-bound GPU step "
                         "(no memory or decoding rows)")
    ap.add_argument("--clock", choices=sorted(CLOCKS), default="wall",
                    help="the step timer: wall (perf_counter), or cpu (the CPU seconds of this thread, on --device "
                         "cpu: a busy box's other jobs do not stretch them)")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--compile", action="store_true",
                    help="train steps of both models through torch.compile(dynamic=True) (decoding and the CPU "
                         "memory children stay eager); the first step per shape pays the compilation")
    ap.add_argument("--tree-compile", action="store_true",
                    help="tree2seq with --tree-compile (its layers compiled, shapes bucketed); the transformer eager "
                         "unless --compile")
    ap.add_argument("--tree-compile-scope", choices=SCOPES, default="stack",
                    help="with --tree-compile: each layer loop one graph (stack) or each layer its own call")
    ap.add_argument("--tree-compile-backend", choices=BACKENDS, default="inductor",
                    help="with --tree-compile: inductor, cudagraphs (the traced graphs replayed as CUDA graphs) or "
                         "aot_eager (the traced graphs run as they are)")
    ap.add_argument("--no-memory", action="store_true", help="skip the peak-memory measurements")
    ap.add_argument("--no-decode", action="store_true", help="skip the beam-search measurement")
    ap.add_argument("--raw", action="store_true", help="print every timed step")
    ap.add_argument("--width", type=int, default=None,
                    help="embedding width D (FFN 2D) of both models, the arch's layers and heads kept: with D = 32 and "
                         "short batches the arithmetic is negligible and the step is bound by the host, as a GPU step "
                         "of these sizes is (e.g. --width 32 --lengths 16 --tokens 32 --steps 80)")
    ap.add_argument("--phases", action="store_true",
                    help="also time each phase of the train step (forward, backward, optimizer; and tree2seq's tree "
                         "build) at the longest length, tree2seq against the positions-matched transformer")
    ap.add_argument("--profile", action="store_true",
                    help="also print torch.profiler's table of one tree2seq train step at the longest length, and the "
                         "operators whose time grows most against the positions-matched transformer's step")
    args = ap.parse_args()
    # importing fairseq sets the root logger to DEBUG: inductor's file locks and fairseq's INFO lines would bury
    # the tables
    logging.getLogger().setLevel(logging.WARNING)
    arch = args.arch or ("tree2seq_tiny" if args.quick else "tree2seq_iwslt_de_en")
    lengths = [int(x) for x in (args.lengths or ("8,32,64" if args.quick else "8,16,32,64,128,256")).split(",")]
    tokens = args.tokens or (512 if args.quick else 2048)
    steps = args.steps or (5 if args.quick else 7)
    vocab, labels = 8000, 80
    kinds = args.trees.split(",")
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))

    if args.count_launches and args.device == "cpu" and args.tree_kernels != "eager":
        os.environ["TRITON_INTERPRET"] = "1"  # read when the kernels are first imported, below
    if args.clock == "cpu" and args.device != "cpu":
        ap.error("--clock cpu times the host's thread: it does not see a GPU's time (use --clock wall)")
    host_only = contextlib.nullcontext()
    if args.host_only:
        if args.device != "cpu" or args.tree_kernels != "fused":
            ap.error("--host-only times the CPU's host work of --tree-kernels fused: --device cpu --tree-kernels fused")
        from fairseq_tree.modules.tree_kernels import compile_only

        args.no_memory = args.no_decode = True
        torch.set_flush_denormal(True)  # the unwritten outputs hold garbage: no slow denormal arithmetic after them
        host_only = compile_only(args.host_only)
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp)
        make_data_dir(data, vocab, labels)
        codes = learn_ptb_pool(Path(args.ptb), data) if "ptb" in kinds else None
        if args.compile_kernels:
            models = {"tree2seq": build("tree2seq", data, arch, "cpu", args.width, False, args.tree_compile_scope,
                                        "fused")}
            compile_kernels(models, data, arch, lengths[-1], tokens, vocab, labels, args, codes, kinds[0])
            return
        models = {k: build(k, data, arch, args.device, args.width, args.tree_compile, args.tree_compile_scope,
                           args.tree_kernels, args.tree_compile_backend)
                  for k in ("tree2seq", "transformer")}
        if args.count_launches:
            count_only(models, data, arch, lengths[-1], tokens, vocab, labels, args, codes, kinds[0])
            return
        params = {k: sum(p.numel() for p in m.parameters()) for k, (_, m) in models.items()}
        if args.compile:
            models = {k: (task, Compiled(m)) for k, (task, m) in models.items()}
        at_width = f" at width {args.width}" if args.width else ""
        print(f"arch {arch}{at_width} on {args.device} ({args.amp}, threads {torch.get_num_threads()}"
              f"{', torch.compile' if args.compile else ''}{', --tree-compile' if args.tree_compile else ''}); "
              "parameters: "
              f"tree2seq {params['tree2seq']:,}, transformer {params['transformer']:,}; {tokens} target tokens")
        with host_only:
            results = {k: bench_trees(k, models, data, arch, lengths, tokens, steps, vocab, labels, args.device,
                                      args.amp, codes, args.ptb, args.quick, args.no_memory, args.raw, args.no_decode,
                                      CLOCKS[args.clock])
                       for k in kinds}
            if args.phases:
                n = lengths[-1]
                phases = phase_times(models, step_batch(data, arch, n, tokens, vocab, labels, codes, args.ptb,
                                                        kinds[0], args.device),
                                     steps, args.device, args.amp, CLOCKS[args.clock])
                phase_table(phases, n)
            if args.profile:
                profile_step(models, data, arch, lengths[-1], tokens, vocab, labels, args.device, args.amp, codes,
                             args.ptb, kinds[0])
    rows, dec = results[kinds[0]]
    last = rows[-1]
    mean = lambda key: round(sum(r[key] for r in rows) / len(rows), 3)  # noqa: E731
    compiler = tree_compiler(models)
    kv = dict(arch=arch, width=args.width or "arch", device=args.device, amp=args.amp, compile=int(args.compile),
              tree_compile=int(args.tree_compile), scope=args.tree_compile_scope if args.tree_compile else "-",
              backend=args.tree_compile_backend if args.tree_compile else "-",
              graphs=compiler.graphs if compiler else 0, compile_s=round(compiler.seconds, 1) if compiler else 0,
              trees=kinds[0], n=last["n"],
              time_ratio=round(last["time_ratio"], 3), memory_ratio=round(last["memory_ratio"], 3),
              time_ratio_pm=round(last["time_ratio_pm"], 3), memory_ratio_pm=round(last["memory_ratio_pm"], 3),
              mean_time_ratio=mean("time_ratio"), mean_time_ratio_pm=mean("time_ratio_pm"),
              decode_ratio=round(dec["tf"] / dec["tree2seq"], 3), decode_ratio_pm=round(dec["pm"] / dec["tree2seq"], 3),
              ops_ratio=round(last["ops_ratio"], 3), ops_ratio_pm=round(last["ops_ratio_pm"], 3),
              tree2seq_peak_mb=round(last["mem"]["tree2seq"], 1))
    print(" ".join(f"{k}={v}" for k, v in kv.items()))


if __name__ == "__main__":
    main()
