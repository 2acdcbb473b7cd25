"""What ``bench_tree2seq.py`` measures besides step time, memory and decoding, each by its own mechanism: the
kernel launches of a train step (a dispatch mode: ``--count-launches``), its fused kernels compiled by triton
without a GPU (``--compile-kernels``), the step's phases (``--phases``) and torch.profiler's operators
(``--profile``); tree2seq against the positions-matched transformer."""

import statistics
import time

import torch
from alternate import device_sync
from tree2seq_step import KINDS, run_inputs, step_batch, step_loss, train_steps


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
