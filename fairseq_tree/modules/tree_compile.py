"""``--tree-compile``: tree2seq's train step with its encoder and decoder layers through ``torch.compile``.

What is compiled (``--tree-compile-scope``), in training only (validation, beam search and attention dumps run the
eager layers: same parameters):

* ``stack`` (default): the encoder's layer loop (:meth:`~fairseq_tree.models.tree2seq_transformer.Tree2SeqEncoder.
  forward_stack`: every layer's tree self-attention with the accumulation, the pair embeddings and the masks, and
  its FFN) and the decoder's features (fairseq's own ``TransformerDecoderBase.extract_features_scriptable``:
  embeddings, every layer with its tree cross-attention, the final norm) as one graph each: two compiled calls a
  step. On a host-bound step each call costs its guards and runtime wrappers (about 0.1-0.5 ms on the CPU
  stand-in), so twelve calls a step cost the stand-in about 0.2x of the Transformer's step;
* ``layer``: the forward of one encoder layer and of one decoder layer (fairseq's ``TransformerDecoderLayerBase.
  forward`` with the tree cross-attention); the layers of a stack share one graph (torch inlines the modules: their
  weights are graph inputs). About half the compile time of ``stack``, twelve calls a step. Layers wrapped by
  ``--checkpoint-activations`` (or FSDP) are compiled this way under either scope.

Inductor fuses the many small operators a layer dispatches eagerly, which is what bounds a small model's step on a
GPU (host dispatch) and on the CPU stand-in (``bench_tree2seq.py --width 32``).

Shapes are bucketed so that a new batch does not mean a new graph: before the model runs, the leaves N, the nodes
M, the target length T and the (node, leaf) pair count Np are padded up to a multiple of ``multiple``
(:func:`round_up`; padding is invisible by construction, see :class:`~fairseq_tree.modules.tree_structure.
TreeStructure`, so the results at real positions are the eager ones); the graphs are compiled with symbolic sizes
(``dynamic=True``), which keeps the count of graphs bounded by the code's branches (training or not, a padding
mask or not, batch size 1 or more) instead of by the batches' shapes. Every tensor that depends on the batch only
(masks as additive biases, the accumulation operands, the pair weights and embedding rows) is built once per batch
before the layers run (:meth:`TreeMultiheadAttention.prepare`), outside the graphs, as in the eager path. Python
floats are compiled as constants (dynamo's ``specialize_float``): as symbols, torch 2.13 traced each graph twice
(its scalar-to-tensor pass restarts the analysis), a quarter of the compile time.

The compiled callables and their counters live on a :class:`LayerCompiler` per model (never global):
``graphs`` (graphs compiled, forward and backward counted once: the recompile count), ``seconds`` (time spent
in inductor) and ``calls`` (calls of compiled functions). A deep copy or a pickle of the model gets a fresh, empty
compiler.
"""

from __future__ import annotations

import functools
import time
from typing import Callable, Optional, Tuple, Union

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.fx.experimental import _config as fx_config

from fairseq_tree.modules.tree_structure import round_up

#: the default bucket: N, M, T and Np are padded up to multiples of it
DEFAULT_MULTIPLE = 8
#: graphs per compiled function before torch falls back to eager (torch's default, 8, is per code object)
RECOMPILE_LIMIT = 256
#: --tree-compile-scope's choices: the layer loops as one graph each, or every layer as its own call
SCOPES = ("stack", "layer")
#: --tree-compile-backend's choices: what turns a traced graph (forward and backward, AOTAutograd's) into code
BACKENDS = ("inductor", "cudagraphs", "aot_eager")


def pad_to(x: Tensor, dim: int, size: int, value) -> Tensor:
    """``x`` padded with ``value`` at the end of ``dim`` up to ``size`` (``x`` itself when already that size)."""
    extra = size - x.size(dim)
    if extra <= 0:
        return x
    pad = [0, 0] * (x.dim() - 1 - dim % x.dim()) + [0, extra]
    return F.pad(x, pad, value=value)


#: Inductor settings for these graphs only (compile_fx applies them to the forward and the backward compile):
#: torch 2.11's coalescing analysis of GPU tilings fails an assertion on the tree layers' symbolic sizes
#: (``get_pw_red_splits``, H200, 2026-11-26); the CPU's C++ code never runs it.
INDUCTOR_PATCHES = {"triton.coalesce_tiling_analysis": False}


class LayerCompiler:
    """The compiled layer forwards of one model, and their counters.

    Args:
        multiple: the bucket (N, M, T, Np padded up to multiples of it).
        dynamic: passed to ``torch.compile`` (True: symbolic sizes, one graph for every bucket).
        scope: ``stack`` (each layer loop one graph) or ``layer`` (each layer its own call), see the module's doc.
        backend: ``inductor`` (fused generated kernels), ``cudagraphs`` (the traced aten graphs, captured and
            replayed as CUDA graphs: no code generation), or ``aot_eager`` (the traced graphs run as they are:
            what ``cudagraphs`` captures, on any device), see the module's doc; or, in code, any
            ``torch.compile`` backend callable ``(graph_module, example_inputs) -> callable``.
    """

    def __init__(self, multiple: int = DEFAULT_MULTIPLE, dynamic: bool = True, scope: str = "stack",
                 backend: Union[str, Callable] = "inductor"):
        if scope not in SCOPES:
            raise ValueError(f"--tree-compile-scope {scope!r}: expected one of {', '.join(SCOPES)}")
        if not callable(backend) and backend not in BACKENDS:
            raise ValueError(f"--tree-compile-backend {backend!r}: expected one of {', '.join(BACKENDS)}")
        self.multiple = multiple
        self.dynamic = dynamic
        self.scope = scope
        self.backend = backend
        self.graphs = 0
        self.seconds = 0.0
        self.calls = 0
        self._fns = {}

    def __deepcopy__(self, memo):
        return LayerCompiler(self.multiple, self.dynamic, self.scope, self.backend)

    def __getstate__(self):
        return {"multiple": self.multiple, "dynamic": self.dynamic, "scope": self.scope, "backend": self.backend}

    def __setstate__(self, state):
        self.__init__(**state)

    def _backend(self, gm, example_inputs):
        """The chosen backend on one of dynamo's graphs, counting the graphs and the time it takes (inductor: its
        patches, :data:`INDUCTOR_PATCHES`; the others: torch's registered backends of those names)."""
        t0 = time.perf_counter()
        self.graphs += 1
        try:
            if callable(self.backend):
                return self.backend(gm, example_inputs)
            if self.backend == "inductor":
                from torch._inductor.compile_fx import compile_fx

                return compile_fx(gm, example_inputs, config_patches=INDUCTOR_PATCHES)
            from torch._dynamo.backends.registry import lookup_backend

            return lookup_backend(self.backend)(gm, example_inputs)
        finally:
            self.seconds += time.perf_counter() - t0

    def compiled(self, fn):
        """``torch.compile(fn)`` with this compiler's backend and ``dynamic``, built once per function. Called
        without duck sizing: sizes that happen to be equal in the first batch (N' = M', or N' + M' = the width C)
        would otherwise share one symbol, and the width's constant would specialise the graph to that batch."""
        if fn not in self._fns:
            # imported here: torch._dynamo takes about 2 s to import, which every import of the plugin paid
            from torch._dynamo import config as dynamo_config

            compiled = torch.compile(fn, backend=self._backend, dynamic=self.dynamic)
            patches = {k: v for k, v in (("recompile_limit", RECOMPILE_LIMIT), ("specialize_float", True))
                       if hasattr(dynamo_config, k)}  # names of torch 2.6+; older torch keeps its defaults

            @functools.wraps(fn)
            def call(*args, **kwargs):
                self.calls += 1
                with fx_config.patch(use_duck_shape=False), dynamo_config.patch(**patches):
                    return compiled(*args, **kwargs)
            self._fns[fn] = call
        return self._fns[fn]

    def stacks(self, layers, layer_type: type) -> bool:
        """Whether ``layers`` run as one graph: scope ``stack`` and every layer a plain ``layer_type`` (layers
        wrapped by ``--checkpoint-activations`` or FSDP are compiled one by one)."""
        return self.scope == "stack" and all(
            type(layer) is layer_type and not hasattr(layer, "precheckpoint_forward") for layer in layers)

    def bucket(self, n: int) -> int:
        return round_up(n, self.multiple)

    def pad_batch(self, src_tokens: Tensor, src_nodes: Tensor, src_spans: Tensor, prev_output_tokens: Tensor,
                  pad: int, label_pad: int, tgt_pad: int) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
        """The train batch padded to the buckets: src_tokens [B, N] -> [B, N'], src_nodes [B, M] -> [B, M'],
        src_spans [B, M, 2] -> [B, M', 2] (padded nodes' spans are ignored), prev_output_tokens [B, T] -> [B, T']
        (padded at the end: the causal mask hides them from the real positions)."""
        return (pad_to(src_tokens, 1, self.bucket(src_tokens.size(1)), pad),
                pad_to(src_nodes, 1, self.bucket(src_nodes.size(1)), label_pad),
                pad_to(src_spans, 1, self.bucket(src_spans.size(1)), 0),
                pad_to(prev_output_tokens, 1, self.bucket(prev_output_tokens.size(1)), tgt_pad))


def compiler_for(cfg) -> Optional[LayerCompiler]:
    """The model's :class:`LayerCompiler` for a config with ``--tree-compile`` (None without it)."""
    if not getattr(cfg, "tree_compile", False):
        return None
    return LayerCompiler(getattr(cfg, "tree_compile_multiple", None) or DEFAULT_MULTIPLE,
                         scope=getattr(cfg, "tree_compile_scope", None) or "stack",
                         backend=getattr(cfg, "tree_compile_backend", None) or "inductor")


def tracing() -> bool:
    """Whether dynamo is tracing this call (a layer inside a compiled stack runs its forward directly)."""
    is_compiling = getattr(torch.compiler, "is_compiling", None)  # torch 2.3+
    if is_compiling is None:  # torch._dynamo is imported lazily: the attribute may not exist yet
        from torch._dynamo import is_compiling
    return bool(is_compiling())
