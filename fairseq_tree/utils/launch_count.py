"""Kernel launches of a call, counted on any machine: the aten operators it dispatches (a ``TorchDispatchMode``)
plus the fused kernels it launches outside aten (Triton kernels report each launch through :func:`fused_launch`).

On a GPU whose host cannot dispatch as fast as the device runs (small models, e.g. a Transformer's train step on an
H100), the step time follows this count rather than the arithmetic; unlike a time it does not jitter, and it is
the same on a CPU. Each launch is attributed to a scope: the module whose forward ran it, or in backward the module
whose forward built the autograd node being run (its ``metadata``), so the count can be read per layer.
"""

from __future__ import annotations

import re
from collections import Counter
from contextlib import contextmanager
from typing import Callable, Dict, List, Optional

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

_SCOPE = "launch_scope"  # the key of a node's metadata holding its scope
_counters: List["LaunchCounter"] = []  # the active counters (innermost last), for fused_launch


@contextmanager
def fused_launch(name: str):
    """``with fused_launch("kernel"): kernel[grid](...)``: one launch of a fused kernel (which no aten operator
    dispatches, e.g. a Triton kernel's) for the active :class:`LaunchCounter`, if any. Aten operators dispatched
    inside are not counted: they are the launcher's own (triton's interpreter copies its tensors), not a GPU's."""
    counter = _counters[-1] if _counters else None
    if counter is None:
        yield
        return
    counter._add(name, 1, fused=True)
    counter._muted += 1
    try:
        yield
    finally:
        counter._muted -= 1


class LaunchCounter:
    """``with LaunchCounter(model) as c: step()`` counts the step's aten operators and fused-kernel launches.

    Args:
        model: the modules whose scopes are reported (None: one scope, "other").
        scope_of: module name -> scope name or None (not a scope of its own); default: ``encoder.layers.<i>`` and
            ``decoder.layers.<i>`` (fairseq's names), each its own scope.

    Attributes after the block: ``ops`` and ``fused`` (Counter: (scope, phase) -> count, phase "forward" or
    "backward"), ``names`` (Counter: (scope, phase, operator or kernel name) -> count).
    """

    def __init__(self, model: Optional[torch.nn.Module] = None,
                 scope_of: Optional[Callable[[str], Optional[str]]] = None):
        self.model = model
        self.scope_of = scope_of or layer_scope
        self.ops: Counter = Counter()
        self.fused: Counter = Counter()
        self.names: Counter = Counter()
        self._stack: List[str] = ["other"]
        self._muted = 0  # inside a fused launch: its aten operators are not counted
        self._hooks: list = []
        self._modes: list = []

    # ------------------------------------------------------------------ totals
    def total(self, scope: Optional[str] = None, phase: Optional[str] = None) -> int:
        """Launches (aten operators + fused kernels) in ``scope`` and ``phase`` (None: all)."""
        return sum(n for counter in (self.ops, self.fused) for (s, p), n in counter.items()
                   if scope in (None, s) and phase in (None, p))

    def total_fused(self) -> int:
        """Fused-kernel launches alone (all scopes and phases)."""
        return sum(self.fused.values())

    def scopes(self) -> List[str]:
        """The scopes that launched anything, in order of first launch."""
        return list(dict.fromkeys(s for s, _ in list(self.ops) + list(self.fused)))

    # ------------------------------------------------------------------ counting
    def _add(self, name: str, n: int, fused: bool = False) -> None:
        node = torch._C._current_autograd_node()
        if node is None:
            key = (self._stack[-1], "forward")
        else:  # run by the autograd engine: the scope of the forward that built the node
            key = (node.metadata.get(_SCOPE, "other"), "backward")
        (self.fused if fused else self.ops)[key] += n
        self.names[key + (name,)] += n

    def _tag(self, outputs, scope: str) -> None:
        """Stamp ``scope`` on the autograd nodes behind ``outputs`` that have none yet (those just built: older ones
        are stamped already, which stops the walk)."""
        todo = [t.grad_fn for t in tree_leaves(outputs) if isinstance(t, torch.Tensor) and t.grad_fn is not None]
        while todo:
            node = todo.pop()
            if node is None or _SCOPE in node.metadata:
                continue
            node.metadata[_SCOPE] = scope
            todo.extend(next_node for next_node, _ in node.next_functions)

    def __enter__(self) -> "LaunchCounter":
        if self.model is not None:
            for name, module in self.model.named_modules():
                scope = self.scope_of(name)
                if scope is not None:
                    self._hooks.append(module.register_forward_pre_hook(self._enter_scope(scope)))
                    self._hooks.append(module.register_forward_hook(self._leave_scope(scope)))
        self._modes = [_Tagger(self), _Dispatch(self)]
        for mode in self._modes:
            mode.__enter__()
        _counters.append(self)
        return self

    def __exit__(self, *exc) -> None:
        _counters.remove(self)
        for mode in reversed(self._modes):
            mode.__exit__(*exc)
        for hook in self._hooks:
            hook.remove()
        self._hooks, self._modes = [], []

    def _enter_scope(self, scope: str):
        def hook(module, args):
            self._tag(args, self._stack[-1])  # what the caller built for this module is the caller's
            self._stack.append(scope)
        return hook

    def _leave_scope(self, scope: str):
        def hook(module, args, output):
            self._tag(output, scope)
            self._stack.pop()
        return hook


class _Dispatch(TorchDispatchMode):
    """Counts every aten operator (below autograd: forward and backward alike)."""

    def __init__(self, counter: LaunchCounter):
        super().__init__()
        self.counter = counter

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if not self.counter._muted:
            self.counter._add(str(func.overloadpacket.__name__), 1)
        return func(*args, **(kwargs or {}))


class _Tagger(TorchFunctionMode):
    """Stamps the current scope on the autograd nodes each torch function builds (above autograd, where outputs
    carry their ``grad_fn``)."""

    def __init__(self, counter: LaunchCounter):
        super().__init__()
        self.counter = counter

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if torch._C._current_autograd_node() is None:
            self.counter._tag(out, self.counter._stack[-1])
        return out


_LAYER = re.compile(r"(?:^|\.)(encoder|decoder)\.layers\.(\d+)$")


def layer_scope(name: str) -> Optional[str]:
    """``encoder.layers.3`` -> ``"encoder layer 3"`` (fairseq's module names, wrapped or not); other modules: None."""
    m = _LAYER.search(name)
    return f"{m.group(1)} layer {m.group(2)}" if m else None


def per_layer(counter: LaunchCounter) -> Dict[str, Dict[str, int]]:
    """``{scope: {"forward": n, "backward": n, "total": n}}`` for every scope of ``counter``, plus ``"step"``."""
    rows = {s: {p: counter.total(s, p) for p in ("forward", "backward")} for s in counter.scopes()}
    rows["step"] = {p: counter.total(None, p) for p in ("forward", "backward")}
    for row in rows.values():
        row["total"] = row["forward"] + row["backward"]
    return rows
