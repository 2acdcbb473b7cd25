"""``--tree-compile``'s LayerCompiler (fairseq_tree/modules/tree_compile.py) as a model uses it: its settings survive
a pickle and a deep copy, the options build it, a batch is padded to its buckets, and which layer stacks run as one
graph (bugs of one line that tests/unit/test_tree_compile.py let through: scripts/mutation/). A compiled call itself
costs inductor 15-70 s: tests/integration/test_tree_compile_step.py."""

import argparse
import copy
import pickle

import pytest
import torch
from torch import nn

from fairseq_tree.modules.tree_compile import LayerCompiler, compiler_for, tracing

torch.set_num_threads(1)


@pytest.mark.parametrize("dynamic", [False, True])
def test_a_pickled_or_copied_compiler_keeps_every_setting(dynamic):
    """A model is pickled (checkpoint averaging, spawned workers) and deep-copied (EMA): its compiler keeps the
    bucket, ``dynamic``, the scope and the backend, and starts with no graph."""
    c = LayerCompiler(16, dynamic=dynamic, scope="layer", backend="cudagraphs")
    c.graphs = 2
    for other in (pickle.loads(pickle.dumps(c)), copy.deepcopy(c)):
        assert (other.multiple, other.dynamic, other.scope, other.backend, other.graphs) == (
            16, dynamic, "layer", "cudagraphs", 0)


def test_compiler_for_the_options():
    """--tree-compile-multiple 4 --tree-compile-scope layer --tree-compile-backend aot_eager; a config older than
    the backend's option: inductor; without --tree-compile: no compiler."""
    class Cfg:
        tree_compile, tree_compile_multiple, tree_compile_scope, tree_compile_backend = True, 4, "layer", "aot_eager"

    c = compiler_for(Cfg())
    assert (c.multiple, c.dynamic, c.scope, c.backend) == (4, True, "layer", "aot_eager")
    del Cfg.tree_compile_backend
    assert compiler_for(Cfg()).backend == "inductor"
    assert [c.bucket(n) for n in (1, 4, 5)] == [4, 4, 8]
    Cfg.tree_compile = False
    assert compiler_for(Cfg()) is None
    assert compiler_for(argparse.Namespace()) is None  # the args of a checkpoint older than the option
    assert not tracing() and tracing() is False  # eager here


def test_a_batch_padded_to_the_buckets_keeps_its_values():
    """2 sentences of 9 leaves, 10 nodes and 11 target tokens -> 16 of each (bucket 8): the real values in place,
    each field's padding value after them, the batch size unchanged."""
    c = LayerCompiler(8)
    src = torch.arange(4, 22).view(2, 9)
    nodes = torch.arange(30, 50).view(2, 10)
    spans = torch.arange(40).view(2, 10, 2)
    prev = torch.arange(50, 72).view(2, 11)
    s2, n2, sp2, p2 = c.pad_batch(src, nodes, spans, prev, pad=1, label_pad=2, tgt_pad=3)
    assert (s2.shape, n2.shape, sp2.shape, p2.shape) == ((2, 16), (2, 16), (2, 16, 2), (2, 16))
    assert s2[:, :9].equal(src) and s2[:, 9:].eq(1).all()
    assert n2[:, :10].equal(nodes) and n2[:, 10:].eq(2).all()
    assert sp2[:, :10].equal(spans) and sp2[:, 10:].eq(0).all()
    assert p2[:, :11].equal(prev) and p2[:, 11:].eq(3).all()
    same = LayerCompiler(8).pad_batch(s2, n2, sp2, p2, pad=1, label_pad=2, tgt_pad=3)
    assert all(a is b for a, b in zip(same, (s2, n2, sp2, p2)))  # already bucketed: the tensors themselves


def test_which_layer_stacks_run_as_one_graph():
    """Scope ``stack``: a stack of plain layers is one graph; a stack with a layer of another type, or one wrapped by
    fairseq's --checkpoint-activations, is compiled layer by layer; scope ``layer``: always layer by layer."""
    from fairseq.modules.checkpoint_activations import checkpoint_wrapper

    plain = [nn.Linear(4, 4), nn.Linear(4, 4)]
    assert LayerCompiler(scope="stack").stacks(plain, nn.Linear)
    assert not LayerCompiler(scope="layer").stacks(plain, nn.Linear)
    assert not LayerCompiler(scope="stack").stacks(plain + [nn.ReLU()], nn.Linear)
    assert not LayerCompiler(scope="stack").stacks([plain[0], checkpoint_wrapper(nn.Linear(4, 4))], nn.Linear)


class _Graph(nn.Module):
    def forward(self, x, y):
        return (torch.tanh(x) @ y + 1,)


@pytest.mark.parametrize("backend", ["inductor", "aot_eager", "cudagraphs"])
def test_each_backend_turns_a_traced_graph_into_its_function(backend):
    """LayerCompiler's backend on a traced graph (what dynamo hands it): a callable that computes the graph, for
    each --tree-compile-backend (cudagraphs on CPU tensors: uncaptured), the graph counted and its time taken."""
    comp = LayerCompiler(backend=backend)
    x, y = torch.randn(3, 4), torch.randn(4, 5)
    fn = comp._backend(torch.fx.symbolic_trace(_Graph()), [x, y])
    torch.testing.assert_close(fn(x, y)[0], torch.tanh(x) @ y + 1)
    assert comp.graphs == 1 and comp.seconds > 0


def test_python_floats_are_compiled_as_constants():
    """dynamo's ``specialize_float`` inside the compiled calls: three floats, three graphs (a model's floats, its
    dropout and scaling, are fixed; as symbols torch 2.13 traced each graph twice), each the eager result."""
    comp = LayerCompiler(backend="aot_eager")

    def f(x, s):
        return torch.tanh(x) * s

    fn = comp.compiled(f)
    x = torch.randn(3)
    for k, s in enumerate((0.5, 0.25, 0.125), 1):
        torch.testing.assert_close(fn(x, s), f(x, s))
        assert comp.graphs == k
