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
import functools
import logging
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch

from fairseq_tree.modules.tree_compile import BACKENDS, SCOPES
from fairseq_tree.modules.tree_kernels import KERNELS
from fairseq_tree.utils.step_memory import peak_mb

sys.path.insert(0, str(Path(__file__).resolve().parent))
from alternate import alternate, device_sync, paired_ratio, train_step  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def make_data_dir(path: Path, vocab: int, labels: int) -> None:
    with open(path / "dict.src.txt", "w") as f:
        f.writelines(f"w{i} 1\n" for i in range(vocab))
    (path / "dict.tgt.txt").write_text((path / "dict.src.txt").read_text())
    with open(path / "dict.src.labels.txt", "w") as f:
        f.writelines(f"L{i} 1\n" for i in range(labels))


def build(kind: str, data: Path, arch: str, device: str, width: Optional[int] = None, tree_compile: bool = False,
          scope: str = "stack", kernels: str = "eager", backend: str = "inductor"):
    """-> (task, model): tree2seq of ``arch`` (with ``--tree-compile --tree-compile-scope scope
    --tree-compile-backend backend`` if asked, and ``--tree-kernels kernels``), or fairseq's transformer of its
    sizes; ``width`` overrides the embedding width (FFN 2 x width), keeping the arch's layers and heads."""
    from fairseq import options, tasks

    import fairseq_tree  # noqa: F401

    common = [str(data), "-s", "src", "-t", "tgt", "--dropout", "0.1", "--share-all-embeddings"]
    if width:
        for side in ("encoder", "decoder"):
            common += [f"--{side}-embed-dim", str(width), f"--{side}-ffn-embed-dim", str(2 * width)]
    tree_argv = common + ["--user-dir", str(REPO / "fairseq_tree"), "--task", "tree_translation", "--arch", arch]
    if kind == "tree2seq":
        argv = tree_argv + (["--tree-compile", "--tree-compile-scope", scope, "--tree-compile-backend", backend]
                            if tree_compile else [])
        argv += ["--tree-kernels", kernels]
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


def learn_ptb_pool(ptb: Path, work: Path) -> Path:
    """BPE codes (2,000 merges) learned on the PTB sample's words, saved in ``work``; returns their path."""
    import io

    from subword_nmt.learn_bpe import learn_bpe

    from fairseq_tree.trees import read_treebank

    codes = work / "ptb.codes"
    if not codes.exists():
        words = "\n".join(" ".join(t.words) for _, t in read_treebank(str(ptb)))
        out = io.StringIO()
        learn_bpe(io.StringIO(words), out, 2000)
        codes.write_text(out.getvalue())
    return codes


@functools.lru_cache(maxsize=None)
def ptb_pool(ptb: Path, codes: Path) -> list:
    """The PTB sample's trees with BPE subtrees: a list of (n, spans [m, 2] long). Built once per run: kept in
    this process and saved beside ``codes`` for the memory-measuring child processes."""
    from fairseq_tree.text.bpe import Segmenter
    from fairseq_tree.trees import expand_subwords, read_treebank

    saved = codes.with_suffix(".pool.pt")
    if saved.exists():
        return torch.load(saved)
    segment = Segmenter(str(codes))
    pool = []
    for _, t in read_treebank(str(ptb)):
        t = expand_subwords(t, segment)
        pool.append((len(t.words), torch.tensor(t.spans, dtype=torch.long).view(-1, 2)))
    torch.save(pool, saved)
    return pool


def joined_tree(pool: list, n: int, g: torch.Generator):
    """Random pool trees of at most n leaves joined under one ROOT while they fit in n leaves (stopping at 0.9 n,
    or after 64 draws) -> (leaves, spans [m, 2]). The shortest pool tree stands in when none fits."""
    fits = [t for t in pool if t[0] <= n] or [min(pool, key=lambda t: t[0])]
    parts, total = [], 0
    for _ in range(64):
        length, spans = fits[int(torch.randint(len(fits), (1,), generator=g))]
        if parts and total + length > n:
            continue
        parts.append(spans + total)
        total += length
        if total >= 0.9 * n:
            break
    if len(parts) > 1:
        parts.append(torch.tensor([[0, total]]))
    return total, torch.cat(parts)


def make_batch(n: int, bsz: int, vocab: int, labels: int, device: str, seed: int, pool=None):
    """-> (net, tree, pm, tgt): fairseq's net_input for tree2seq and the same-size transformer (src [B, N],
    right-padded; prev_output_tokens [B, n]), the tree side (src_nodes [B, M], src_spans [B, M, 2]), the
    positions-matched transformer's net_input (src [B, max(n_b + m_b)]) and targets [B, n]."""
    from fairseq_tree.trees import distances_to_tree

    g = torch.Generator().manual_seed(seed)
    pad = 1
    if pool is None:  # random binary trees over exactly n leaves
        trees = [(n, torch.tensor(distances_to_tree(torch.rand(n - 1, generator=g).tolist()), dtype=torch.long)
                  .view(-1, 2)) for _ in range(bsz)] if n > 1 else [(n, torch.zeros(0, 2, dtype=torch.long))] * bsz
    else:
        trees = [joined_tree(pool, n, g) for _ in range(bsz)]
    N, M = max(t[0] for t in trees), max(len(t[1]) for t in trees)
    P = max(t[0] + len(t[1]) for t in trees)
    src = torch.full((bsz, N), pad)
    spans = torch.zeros(bsz, M, 2, dtype=torch.long)
    nodes = torch.full((bsz, M), pad)
    pm = torch.full((bsz, P), pad)
    for b, (length, sp) in enumerate(trees):
        src[b, :length] = torch.randint(4, vocab, (length,), generator=g)
        spans[b, :len(sp)] = sp
        nodes[b, :len(sp)] = torch.randint(4, labels, (len(sp),), generator=g)
        pm[b, :length + len(sp)] = torch.randint(4, vocab, (length + len(sp),), generator=g)
    lengths = torch.tensor([t[0] for t in trees])
    tgt = torch.randint(4, vocab, (bsz, n), generator=g)
    prev = torch.cat([torch.full((bsz, 1), 2), tgt[:, :-1]], 1)
    to = lambda d: {k: v.to(device) for k, v in d.items()}  # noqa: E731
    net = {"src_tokens": src, "src_lengths": lengths, "prev_output_tokens": prev}
    pm_net = {"src_tokens": pm, "src_lengths": torch.tensor([t[0] + len(t[1]) for t in trees]),
              "prev_output_tokens": prev}
    return to(net), to({"src_nodes": nodes, "src_spans": spans}), to(pm_net), tgt.to(device)


CLOCKS = {"wall": time.perf_counter, "cpu": time.thread_time}


def autocast(device: str, amp: str):
    """Mixed precision for ``--amp fp16|bf16`` on CUDA (structure computations stay fp32 inside the model); on the
    CPU, ``cpu-bf16`` (the launch counts' stand-in for a GPU's autocast: its casts are launches too)."""
    if amp in ("cpu-bf16", "cpu-fp16"):
        return torch.autocast("cpu", dtype=torch.bfloat16 if amp == "cpu-bf16" else torch.float16)
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(amp)
    return torch.autocast("cuda", dtype=dtype, enabled=dtype is not None and device == "cuda")


class Compiled(torch.nn.Module):
    """``model`` whose forward (the train step) runs through ``torch.compile(dynamic=True)``; beam search takes
    ``.model``, the eager one (same parameters)."""

    def __init__(self, model):
        super().__init__()
        self.model = model
        self.compiled = torch.compile(model, dynamic=True)

    def forward(self, **kw):
        return self.compiled(**kw)


def step_loss(model, net, tree, tgt, device: str, amp: str) -> torch.Tensor:
    """The train step's forward and loss (cross-entropy in fp32). ``tree``: the tree side for tree2seq (None for a
    transformer)."""
    with autocast(device, amp):
        out, _ = model(**(dict(net, **tree) if tree is not None else net))
    return torch.nn.functional.cross_entropy(out.float().transpose(1, 2), tgt)


def make_step(model, net, tree, tgt, device: str, amp: str = "fp32"):
    """One train step (forward, loss, backward, Adam) as a function, for :func:`alternate.alternate`. ``tree``: the
    tree side for tree2seq (None for a transformer)."""
    return train_step(model, lambda: step_loss(model, net, tree, tgt, device, amp))


def train_steps(model, net, tree, tgt, steps: int, device: str, amp: str = "fp32") -> float:
    """Median seconds of ``steps`` train steps of one model after one warm-up step (the memory children and the
    profiler; timings alternate the models: :func:`alternate.alternate`)."""
    return alternate({"m": make_step(model, net, tree, tgt, device, amp)}, steps, device)["m"]["median"]


KINDS = {"tree2seq": "tree2seq", "tf": "transformer", "pm": "transformer"}  # run -> model


def run_inputs(run: str, batch):
    """The (net_input, tree side) a run trains on: tree2seq the tree, tf the leaves, pm n + m tokens."""
    net, tree, pm, _ = batch
    return {"tree2seq": (net, tree), "tf": (net, None), "pm": (pm, None)}[run]


def peak_memory_mb(run: str, batch, device: str, amp: str, models) -> float:
    """Peak extra memory of one train step after a warm-up step (optimizer state allocated): the tensors alive
    at once beyond those before it (CUDA allocator / CPU profiler, ``fairseq_tree/utils/step_memory.py``)."""
    _, model = models[KINDS[run]]
    net, tree = run_inputs(run, batch)
    step = lambda: train_steps(model, net, tree, batch[3], 0, device, amp)  # noqa: E731
    return peak_mb(step, device, warmup=step)


def count_launches(run: str, batch, device: str, amp: str, models):
    """The kernel launches of one train step's forward and backward (no optimizer step), by layer: aten operators
    plus fused-kernel launches (``fairseq_tree/utils/launch_count.py``). Where the GPU waits for the host (small
    models, as on the H100 at these sizes), step time follows this count rather than the arithmetic; unlike time it
    does not jitter, and it is the same on any machine. The step runs once before (lazy initialisation), and the
    gradients are cleared as a train step's are (accumulating into existing ones would add operators)."""
    from fairseq_tree.utils.launch_count import LaunchCounter

    _, model = models[KINDS[run]]
    model = getattr(model, "model", model)
    model.train()
    for counting in (False, True):
        model.zero_grad(set_to_none=True)
        with LaunchCounter(model if counting else None) as counter:
            step_loss(model, *run_inputs(run, batch), batch[3], device, amp).backward()
    model.zero_grad(set_to_none=True)
    return counter


def launch_table(counters: dict, n: int) -> None:
    """Print the launches per layer and per step of tree2seq against the positions-matched transformer."""
    from fairseq_tree.utils.launch_count import per_layer

    rows = {run: per_layer(c) for run, c in counters.items()}
    fused = counters["tree2seq"].total_fused()
    print(f"kernel launches per train step (aten operators + fused-kernel launches, forward + backward), n = {n}; "
          f"tree2seq's fused launches: {fused}")
    print(f"{'scope':<18} | {'tree2seq fwd':>12} {'bwd':>5} {'total':>6} | {'pos.-matched fwd':>16} {'bwd':>5} "
          f"{'total':>6} | {'ratio':>5}")
    for scope in list(dict.fromkeys(list(rows["tree2seq"]) + list(rows["pm"]))):
        a, b = rows["tree2seq"].get(scope), rows["pm"].get(scope)
        cell = lambda r: f"{r['forward']:>5} {r['backward']:>5} {r['total']:>6}" if r else f"{'-':>5} {'-':>5} {'-':>6}"  # noqa: E731
        ratio = f"{a['total'] / b['total']:5.2f}" if a and b and b["total"] else f"{'-':>5}"
        print(f"{scope:<18} | {'':>6} {cell(a)} | {'':>10} {cell(b)} | {ratio}")


def batch_from_spec(spec: list, device: str):
    """spec = [data, arch, n, bsz, vocab, labels, seed, ptb codes or None, ptb file] -> make_batch(...)."""
    _, _, n, bsz, vocab, labels, seed, codes, ptb = spec
    pool = ptb_pool(Path(ptb), Path(codes)) if codes else None
    return make_batch(n, bsz, vocab, labels, device, seed, pool)


def step_batch(data, arch, n: int, tokens: int, vocab: int, labels: int, codes, ptb, kind: str, device: str):
    """The batch of one measured train step at source length n (seed 0, ``tokens // n`` sentences): the launch
    count's, the profile's and the kernels' compilation's."""
    return batch_from_spec([str(data), arch, n, max(1, tokens // n), vocab, labels, 0,
                            str(codes) if kind == "ptb" else None, str(ptb)], device)


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
        spec = [str(data), arch, n, bsz, vocab, labels, 0, str(codes) if kind == "ptb" else None, str(ptb)]
        batch = batch_from_spec(spec, device)
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


def phase_times(models, batch, steps: int, device: str, amp: str, clock=time.perf_counter) -> dict:
    """``--phases``: the median milliseconds of each phase of a train step (forward with the loss, backward, Adam),
    tree2seq and the positions-matched transformer alternated step by step, and of tree2seq's tree build alone
    (its encoder's ``build_tree``, inside its forward). Where the host bounds the step, this says which phase holds
    the difference. -> {run: {phase: ms}}."""
    sync = device_sync(device)
    times = {run: {"forward": [], "backward": [], "optimizer": []} for run in ("tree2seq", "pm")}
    opts = {run: torch.optim.Adam(models[KINDS[run]][1].parameters(), lr=1e-4) for run in times}
    for r in range(steps + 1):
        for run in (("tree2seq", "pm") if r % 2 else ("pm", "tree2seq")):
            model, opt = models[KINDS[run]][1], opts[run]
            model.train()
            sync()
            t0 = clock()
            loss = step_loss(model, *run_inputs(run, batch), batch[3], device, amp)
            sync()
            t1 = clock()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            sync()
            t2 = clock()
            opt.step()
            sync()
            t3 = clock()
            if r:  # the first round: lazy initialisation, the optimizer's state
                for phase, dt in zip(times[run], (t1 - t0, t2 - t1, t3 - t2)):
                    times[run][phase].append(dt * 1e3)
    out = {run: {phase: statistics.median(v) for phase, v in ph.items()} for run, ph in times.items()}
    encoder = models["tree2seq"][1].encoder
    net = batch[0]
    tree = batch[1]
    builds = []
    for _ in range(steps):
        sync()
        t0 = clock()
        encoder.build_tree(net["src_tokens"], tree["src_nodes"], tree["src_spans"])
        sync()
        builds.append((clock() - t0) * 1e3)
    out["tree2seq"]["tree build"] = statistics.median(builds)
    return out


def phase_table(phases: dict, n: int) -> None:
    """Print :func:`phase_times`'s milliseconds, tree2seq against the positions-matched transformer."""
    a, b = phases["tree2seq"], phases["pm"]
    total = {run: sum(v for k, v in ph.items() if k != "tree build") for run, ph in phases.items()}
    print(f"train step by phase, n = {n} (median ms; the tree build is inside tree2seq's forward)")
    print(f"{'phase':<12} {'tree2seq':>9} {'pos.-matched':>13} {'difference':>11} {'share of it':>12}")
    gap = total["tree2seq"] - total["pm"]
    for phase in ("forward", "tree build", "backward", "optimizer"):
        x, y = a[phase], b.get(phase, 0.0)
        print(f"{phase:<12} {x:9.2f} {y:13.2f} {x - y:+11.2f} {(x - y) / gap if gap else float('nan'):12.0%}")
    print(f"{'step':<12} {total['tree2seq']:9.2f} {total['pm']:13.2f} {gap:+11.2f} "
          f"{total['tree2seq'] / total['pm']:11.2f}x")


def count_only(models, data, arch, n, tokens, vocab, labels, args, codes, kind) -> None:
    """``--count-launches``: the launch table of one train step at source length n, and a ``key=value`` line."""
    batch = step_batch(data, arch, n, tokens, vocab, labels, codes, args.ptb, kind, args.device)
    counters = {run: count_launches(run, batch, args.device, args.amp, models) for run in ("tree2seq", "pm")}
    print(f"arch {arch} on {args.device} ({args.amp}), {kind} trees, --tree-kernels {args.tree_kernels}")
    launch_table(counters, n)
    ops = {run: c.total() for run, c in counters.items()}
    layers = [s for s in counters["tree2seq"].scopes() if "layer" in s]
    print(" ".join(f"{k}={v}" for k, v in dict(
        arch=arch, device=args.device, amp=args.amp, tree_kernels=args.tree_kernels, trees=kind, n=n,
        launches=ops["tree2seq"], launches_pm=ops["pm"], fused=counters["tree2seq"].total_fused(),
        launch_ratio_pm=round(ops["tree2seq"] / ops["pm"], 3),
        layer_launch_ratio_pm=round(sum(counters["tree2seq"].total(s) for s in layers)
                                    / max(1, sum(counters["pm"].total(s) for s in layers)), 3)).items()))


def compile_kernels(models, data, arch, n, tokens, vocab, labels, args, codes, kind) -> None:
    """``--compile-kernels``: one tree2seq train step's fused kernels compiled by triton's real compiler (no GPU:
    :func:`fairseq_tree.modules.tree_kernels.compile_only`) for each card and precision, with the arguments that
    step passes (their dtypes and alignments); a row per kernel with ptxas's resource usage (registers a thread,
    shared memory a block, local memory a thread: spills; the build's seconds, about 0 where triton's cache held
    it), and a ``key=value`` line. The CPU's autocast stands in for a GPU's (the kernels see the same dtypes)."""
    from fairseq_tree.modules.tree_kernels import compile_only

    batch = step_batch(data, arch, n, tokens, vocab, labels, codes, args.ptb, kind, "cpu")
    _, model = models["tree2seq"]
    model.train()
    amps = {"fp32": "fp32", "bf16": "cpu-bf16", "fp16": "cpu-fp16"}
    print(f"arch {arch}: --tree-kernels fused compiled for sm_{{{','.join(map(str, args.compile_kernels))}}}, "
          f"{kind} trees, n = {n}")
    print(f"{'card':<6} {'amp':<5} {'kernel':<22} {'REG':>4} {'SHARED':>7} {'LOCAL':>6} {'compile s':>9}  v/g dtype")
    total, spills, worst = 0, 0, 0
    for cc in args.compile_kernels:
        for amp in args.compile_amps:
            model.zero_grad(set_to_none=True)
            with compile_only(cc) as built:
                step_loss(model, *run_inputs("tree2seq", batch), batch[3], "cpu", amps[amp]).backward()
            seen = {}
            for k in built:  # a kernel per specialisation; the layers after the first reuse it
                seen.setdefault((k.name, tuple(sorted(k.signature.items()))), k)
            for k in seen.values():
                r = k.resources()
                total, spills, worst = total + 1, spills + (r["LOCAL"] > 0), max(worst, r["REG"])
                print(f"sm_{cc:<3} {amp:<5} {k.name:<22} {r['REG']:>4} {r['SHARED']:>7} {r['LOCAL']:>6} "
                      f"{k.seconds:>9.1f}  {k.signature[next(iter(k.signature))]}")
    print(" ".join(f"{k}={v}" for k, v in dict(
        arch=arch, cards=",".join(f"sm_{c}" for c in args.compile_kernels), amps=",".join(args.compile_amps),
        kernels_compiled=total, kernels_spilling=spills, max_registers=worst).items()))


def profile_step(models, data, arch, n, tokens, vocab, labels, device, amp, codes, ptb, kind) -> None:
    """torch.profiler's operators of one tree2seq train step and of one positions-matched transformer step on
    the same batch: tree2seq's top 20 by self time, then the 15 operators whose self time grows most from the
    positions-matched step to tree2seq's (what holds ``time_ratio_pm`` above 1)."""
    from torch.profiler import ProfilerActivity, profile

    batch = step_batch(data, arch, n, tokens, vocab, labels, codes, ptb, kind, device)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    # torch >= 2.4 names the GPU column self_device_time_total (self_cuda_time_total before)
    key = "self_device_time_total" if device == "cuda" else "self_cpu_time_total"
    tables = {}
    for run in ("tree2seq", "pm"):
        model = models[KINDS[run]][1]
        train_steps(model, *run_inputs(run, batch), batch[3], 1, device, amp)
        with profile(activities=activities) as prof:
            train_steps(model, *run_inputs(run, batch), batch[3], 0, device, amp)
        tables[run] = prof.key_averages()
    print(f"\n== torch.profiler, one tree2seq train step, {kind} trees, n = {n}")
    print(tables["tree2seq"].table(sort_by=key, row_limit=20))
    ops = {run: {e.key: (getattr(e, key) / 1e3, e.count) for e in t} for run, t in tables.items()}
    total = {run: sum(ms for ms, _ in o.values()) for run, o in ops.items()}
    grown = sorted(set(ops["tree2seq"]) | set(ops["pm"]),
                   key=lambda k: ops["pm"].get(k, (0, 0))[0] - ops["tree2seq"].get(k, (0, 0))[0])
    print(f"\n== self time (ms, calls) by operator: tree2seq {total['tree2seq']:.1f} ms vs positions-matched "
          f"{total['pm']:.1f} ms, the 15 that grow most")
    print(f"{'operator':<60} {'tree2seq':>16} {'pos.-matched':>16} {'difference':>11}")
    for k in grown[:15]:
        (a, ca), (b, cb) = ops["tree2seq"].get(k, (0.0, 0)), ops["pm"].get(k, (0.0, 0))
        print(f"{k[:60]:<60} {a:9.2f} ({ca:4d}) {b:9.2f} ({cb:4d}) {a - b:+11.2f}")


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
