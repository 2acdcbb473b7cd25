"""The tree work of a layer's values in a few fused kernels (``--tree-kernels fused``): ``[L W_V; N']``, the leaf
values and the hierarchically accumulated node values with the pair-embedding term (eqs. 5-10, 15-16, 23), as one
Triton launch forward and three backward (:mod:`tree_kernels_triton`), behind a ``torch.autograd.Function``.

Why: on a GPU the tree2seq step is bound by the host's operator dispatch, and the eager accumulation dispatches
about 30 operators forward and 50 backward per layer (launches counted by ``fairseq_tree.utils.launch_count``).
The eager path (:meth:`HierarchicalAccumulation.accumulate`) stays the reference and the fallback: on the CPU, in
float64, inside ``--tree-compile``'s graphs, and where triton is not installed.

``--tree-kernels``: ``eager`` (the default until GPU rows show the fused path faster), ``fused`` (on CUDA tensors;
an error there without triton), ``auto`` (fused on CUDA where triton is installed). CPU tensors take the eager path
unless ``TRITON_INTERPRET=1`` (triton's interpreter runs the kernels on them: the parity tests).
"""

from __future__ import annotations

import contextlib
import importlib
import os
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, List, Optional

import torch
from torch import Tensor

from fairseq_tree.modules import tree_kernels_triton
from fairseq_tree.modules.tree_structure import ReorderedTree, TreeStructure
from fairseq_tree.utils.launch_count import fused_launch
from fairseq_tree.utils.precision import autocast_off

KERNELS = ("eager", "fused", "auto")
#: block sizes: positions and pairs (BR), channels (BC), the reduction dimension of each product (BK; 16 is the
#: smallest a tl.dot takes), leaves of the weights' gradient (BW: each of its programs recomputes the nodes'
#: R = g v^T products, so fewer, larger blocks)
BR, BC, BK, BW = 16, 128, 16, 64

def triton_available() -> bool:
    """Whether the ``triton`` package imports (without importing it: that costs about a second)."""
    return importlib.util.find_spec("triton") is not None


def interpreting() -> bool:
    """``TRITON_INTERPRET=1``: triton runs kernels on CPU tensors (read when the kernels are jitted)."""
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def kernels_module():
    """:mod:`tree_kernels_triton`, its kernels jitted on first use; a clear error if triton is missing."""
    if not tree_kernels_triton.jitted:
        if not triton_available():
            raise RuntimeError("--tree-kernels fused needs the triton package (pip install triton, or the "
                               "fairseq-tree[kernels] extra); --tree-kernels eager runs without it")
        tree_kernels_triton.jit_kernels()
    return tree_kernels_triton


def use_fused(kernels: str, x: Tensor) -> bool:
    """Whether a layer whose input is ``x`` takes the fused path under ``--tree-kernels kernels``: on CUDA tensors
    (or any under ``TRITON_INTERPRET=1`` or inside :func:`compile_only`) with ``fused`` (an error later if triton is
    missing) or ``auto`` (where triton is installed). CPU tensors take the eager path otherwise (the kernels are GPU
    kernels: a checkpoint trained with ``fused`` decodes on any CPU), and so do compiled graphs (``--tree-compile``
    traces the eager path) and float64 (the kernels compute in fp32)."""
    if kernels not in KERNELS:
        raise ValueError(f"--tree-kernels must be one of {KERNELS}, got {kernels!r}")
    compiling = _compiling is not None
    if kernels == "eager" or x.dtype == torch.float64 or not (x.is_cuda or interpreting() or compiling):
        return False
    if torch.compiler.is_compiling():
        return False
    return kernels == "fused" or triton_available()


def fused_values(v: Tensor, w: Tensor, tree: TreeStructure, count_leaf_in_mean: bool,
                 tables: Optional[tuple] = None, vertical: str = "vertical_path") -> Tensor:
    """``[L W_V; N']`` [L, B, C] (time first) by the fused kernels.

    Args:
        v: [L, B, C], the value projection of ``[leaves; nodes]`` (L = N + M), any float dtype (the result has it).
        w: [L, B, Hw] leaf weights (Hw = 1, or H with C = H * dh); the first N rows are the leaves'.
        tree: the batch structure.
        count_leaf_in_mean: the mean's variant (:meth:`TreeStructure.mean_weights`).
        tables: (E_v [Kv, dv], E_h [Kh, dh - dv]) for the hierarchical embeddings, or None (-HierEmb).
        vertical: the pairs' vertical index, ``vertical_path`` (paper) or ``vertical_depth`` (code).
    """
    L, B, C = v.shape
    if L != tree.num_leaves + tree.num_nodes:
        raise ValueError(f"values have {L} positions; the tree has N + M = {tree.num_leaves} + {tree.num_nodes}")
    if C % w.size(-1):
        raise ValueError(f"{C} channels do not split into {w.size(-1)} weight groups")
    if isinstance(tree, ReorderedTree):  # beam search's encoder side: its cache is the reordered structure's
        tree = tree.materialize()
    ops = fused_operands(tree, count_leaf_in_mean, tables, vertical)
    ev, eh = tables if tables is not None else (None, None)
    with autocast_off(v):
        return TreeValues.apply(v, w, ev, eh, ops)


def fused_operands(tree: TreeStructure, count_leaf_in_mean: bool, tables: Optional[tuple], vertical: str) -> dict:
    """The batch's tensors the kernels read, in fp32, contiguous, built once per batch (the tree's cache)."""
    def build():
        f32 = torch.float32
        ops = dict(real=tree.real_positions(f32)[..., 0], norm=tree.mean_weights(count_leaf_in_mean, f32).contiguous(),
                   A=tree.A.to(f32).contiguous(), D=tree.D.to(f32).contiguous())
        if tables is not None:
            ops.update(pw=tree.pair_weights(count_leaf_in_mean, f32).contiguous(), pleaf=tree.pair_leaf.contiguous(),
                       iv=tree.pair_bucket(vertical, tables[0].size(0)).contiguous(),
                       ih=tree.pair_bucket("horizontal", tables[1].size(0)).contiguous())
        return ops
    sizes = None if tables is None else (tables[0].size(0), tables[1].size(0))
    return tree._cached(("fused", count_leaf_in_mean, vertical, sizes), build)


def _grid(B: int, Hw: int, rows: int, Cw: int) -> tuple:
    return (B * Hw, cdiv(rows, BR), cdiv(Cw, BC))


def cdiv(a: int, b: int) -> int:
    """ceil(a / b), at least 1 (a grid dimension)."""
    return max(1, -(-a // b))


def _launch(name: str, grid: tuple, *args, **meta) -> None:
    """One launch of the kernel ``name`` of :mod:`tree_kernels_triton`, counted by an active LaunchCounter; inside
    :func:`compile_only`, its compilation for that GPU instead (nothing runs)."""
    with fused_launch(name):
        kernel = getattr(kernels_module(), name)
        if _compiling is not None:
            # warmup: triton's own binder specialises on these very arguments (dtypes, alignment, ints equal to 1),
            # as the launch would; it compiles and returns the kernel without launching it
            t0 = time.perf_counter()
            built = kernel.warmup(*args, grid=grid, **meta)
            _compiling.append(CompiledKernel(name, built, time.perf_counter() - t0))
        else:
            kernel[grid](*args, **meta)


_compiling: Optional[List["CompiledKernel"]] = None  # the open compile_only block's record of its builds


@dataclass
class CompiledKernel:
    """One kernel as triton's real compiler built it for a GPU (:func:`compile_only`)."""
    name: str
    kernel: object  # triton's CompiledKernel: .asm (ttir ... ptx, cubin), .metadata, .src.signature
    seconds: float  # the build's (about 0 where triton's in-memory or on-disk cache held it)

    @property
    def signature(self) -> dict:
        return dict(self.kernel.src.signature)

    def resources(self) -> dict:
        """ptxas's resource usage of the cubin: REG (registers a thread), SHARED (bytes a block), LOCAL (bytes a
        thread of local memory: register spills), STACK; read by the cuobjdump that triton ships."""
        from triton import knobs  # deferred: only where triton is installed

        with tempfile.TemporaryDirectory() as tmp:
            cubin = Path(tmp) / "kernel.cubin"
            cubin.write_bytes(self.kernel.asm["cubin"])
            out = subprocess.run([knobs.nvidia.cuobjdump.path, "--dump-resource-usage", str(cubin)],
                                 capture_output=True, text=True, check=True).stdout
        line = next(ln for ln in out.splitlines() if "REG:" in ln)
        return {k: int(v) for k, v in (kv.split(":") for kv in line.split()) if k in ("REG", "STACK", "SHARED",
                                                                                      "LOCAL")}


class _CompileOnlyDriver:
    """triton's active driver, stood in: the current device is a GPU of ``target``; there is no stream to launch on
    (kernels are only compiled: :func:`compile_only`)."""

    def __init__(self, target):
        self.target = target

    def get_current_device(self) -> str:
        return f"sm_{self.target.arch} (compile only)"  # triton's per-device caches: one per target, none shared

    def get_current_stream(self, device=None) -> int:
        return 0  # warmup reads a stream and launches nothing on it

    def get_current_target(self):
        return self.target


@contextlib.contextmanager
def compile_only(arch: int) -> Iterator[List[CompiledKernel]]:
    """``with compile_only(90) as built: <the fused path's forward and backward on CPU tensors>``: each launch is
    compiled by triton's real compiler (its MLIR passes, LLVM and ptxas) for NVIDIA ``sm_<arch>`` and recorded in
    ``built``, and nothing runs: the kernels are checked for a card before a GPU is lent (the interpreter accepts
    programs the compiler rejects). The outputs the kernels would write are left unwritten. Needs triton, jitted for
    a GPU (not under ``TRITON_INTERPRET=1``), in a process that launches no kernel meanwhile."""
    global _compiling
    if interpreting():
        raise RuntimeError("compile_only compiles for a GPU: unset TRITON_INTERPRET (it is read as the kernels "
                           "are jitted)")
    if _compiling is not None:
        raise RuntimeError("compile_only blocks do not nest (triton has one active driver)")
    kernels_module()  # jitted now, and without triton the error that names its install
    from triton.backends.compiler import GPUTarget
    from triton.runtime import driver

    before = driver._active  # noqa: SLF001  (set_active has no getter; reset_active would build a CUDA driver)
    driver.set_active(_CompileOnlyDriver(GPUTarget("cuda", arch, 32)))
    _compiling = built = []
    try:
        yield built
    finally:
        _compiling = None
        driver._active = before  # noqa: SLF001


class TreeValues(torch.autograd.Function):
    """``(v [L, B, C], w [L, B, Hw], E_v, E_h, ops) -> [L, B, C]``: the leaves' values, then the nodes' accumulated
    values (see :func:`fused_values`). Saves v, w and the tables (the eager path keeps S [B, M, L] per layer
    besides); the backward recomputes S block by block."""

    @staticmethod
    def forward(ctx, v, w, ev, eh, ops):
        L, B, C = v.shape
        w = w.contiguous()  # the kernels index its last dimension with stride 1
        Hw = w.size(-1)
        Cw = C // Hw
        M = ops["D"].size(1)
        N = L - M
        hier = ev is not None
        Np = ops["pw"].size(-1) if hier else 0
        dh = ev.size(1) + eh.size(1) if hier else 1
        dv = ev.size(1) if hier else 0
        ev, eh = (ev.contiguous(), eh.contiguous()) if hier else (None, None)
        out = torch.empty(L, B, C, dtype=v.dtype, device=v.device)
        real = ops["real"]
        _launch("tree_values_fwd", _grid(B, Hw, L, Cw),
                v, w, real, ops["norm"], ops["A"], ops["D"], ops.get("pw", v), ops.get("pleaf", v), ops.get("iv", v),
                ops.get("ih", v), ev if hier else v, eh if hier else v, out, N, M, Np, Hw, Cw, dh, dv,
                v.stride(0), v.stride(1), v.stride(2), w.stride(0), w.stride(1), real.stride(0), real.stride(1),
                out.stride(0), out.stride(1), HIER=hier, BR=BR, BC=BC, BK=BK)
        ctx.save_for_backward(v, w, ev, eh)
        ctx.ops, ctx.sizes = ops, (N, M, Np, Hw, Cw, dh, dv)
        return out

    @staticmethod
    def backward(ctx, g):
        v, w, ev, eh = ctx.saved_tensors
        ops = ctx.ops
        N, M, Np, Hw, Cw, dh, dv = ctx.sizes
        L, B, C = v.shape
        real = ops["real"]
        gv = torch.empty(L, B, C, dtype=v.dtype, device=v.device)
        _launch("tree_values_bwd_v", _grid(B, Hw, L, Cw),
                g, w, real, ops["norm"], ops["A"], ops["D"], gv, N, M, Hw, Cw,
                g.stride(0), g.stride(1), g.stride(2), w.stride(0), w.stride(1), real.stride(0), real.stride(1),
                gv.stride(0), gv.stride(1), BR=BR, BC=BC, BK=BK)
        gw = torch.zeros(L, B, Hw, dtype=torch.float32, device=w.device)
        _launch("tree_values_bwd_w", (B * Hw, cdiv(N, BW)),
                g, v, real, ops["norm"], ops["A"], ops["D"], gw, N, M, Hw, Cw,
                g.stride(0), g.stride(1), g.stride(2), v.stride(0), v.stride(1), v.stride(2),
                real.stride(0), real.stride(1), gw.stride(0), gw.stride(1), BR=BW, BC=BC, BK=BK)
        gev = geh = None
        if ev is not None:
            gev = torch.zeros(ev.shape, dtype=torch.float32, device=ev.device)
            geh = torch.zeros(eh.shape, dtype=torch.float32, device=eh.device)
            if Np:
                _launch("tree_values_bwd_pairs", (B * Hw, cdiv(Np, BR)),
                        g, w, real, ops["pw"], ops["pleaf"], ops["iv"], ops["ih"], ev, eh, gw, gev, geh,
                        N, M, Np, Hw, Cw, dh, dv, g.stride(0), g.stride(1), g.stride(2), w.stride(0), w.stride(1),
                        real.stride(0), real.stride(1), BP=BR, BC=BC, BK=BK)
            gev, geh = gev.to(ev.dtype), geh.to(eh.dtype)
        return gv, gw.to(w.dtype), gev, geh, None
