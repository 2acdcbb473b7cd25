"""``--tree-compile``: the compiled train step against the eager one (fp32 at 1e-5) under both scopes (``stack``, the
default: each layer loop one compiled call; ``layer``: each layer its own, here with ``--checkpoint-activations``),
batch invariance and padding buckets through it, decoding a compiled model, the number of graphs over batches of
several shapes, and LayerCompiler's counters on a small function. Tiny arch, few graphs: compilation is most of this
file's time. (Eager against the paper's equations written out: tests/unit/test_tree_attention.py; compiled equals
eager here, so it follows. bf16 autocast on the CPU does not compile: inductor's lowering of fairseq's decoder
self-attention fails on symbolic sizes, ValueRangeError, torch 2.13; see docs/tree2seq.md.)"""

import copy

import pytest
import torch
from conftest import REPO
from fairseq import options, tasks
from fairseq.dataclass.configs import GenerationConfig

from fairseq_tree.trees import distances_to_tree

pytestmark = pytest.mark.slow(minutes=3)  # 120 s measured (-n 0, the busy 2-core box, 2026-11-27), most of it inductor;
# the aot_eager step's tracing 30 s more (2026-12-02)

VOCAB, LABELS = 60, 12


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("tc")
    (d / "dict.src.txt").write_text("".join(f"w{i} 1\n" for i in range(VOCAB)))
    (d / "dict.tgt.txt").write_text((d / "dict.src.txt").read_text())
    (d / "dict.src.labels.txt").write_text("".join(f"L{i} 1\n" for i in range(LABELS)))
    return d


def build(data_dir, *extra):
    args = options.parse_args_and_arch(options.get_training_parser(), [
        str(data_dir), "-s", "src", "-t", "tgt", "--user-dir", str(REPO / "fairseq_tree"), "--task",
        "tree_translation", "--arch", "tree2seq_tiny", "--share-all-embeddings", "--dropout", "0", *extra])
    task = tasks.setup_task(args)
    torch.manual_seed(0)
    return task, task.build_model(args)


def batch(lengths, seed, tgt_len=None):
    """A right-padded batch of random binary trees over ``lengths`` leaves: (net_input, targets [B, T])."""
    g = torch.Generator().manual_seed(seed)
    B, N = len(lengths), max(lengths)
    M = max(n - 1 for n in lengths)
    T = tgt_len or N
    src, nodes = torch.ones(B, N, dtype=torch.long), torch.ones(B, M, dtype=torch.long)
    spans = torch.zeros(B, M, 2, dtype=torch.long)
    for b, n in enumerate(lengths):
        src[b, :n] = torch.randint(4, VOCAB, (n,), generator=g)
        if n > 1:
            spans[b, :n - 1] = torch.tensor(distances_to_tree(torch.rand(n - 1, generator=g).tolist())).view(-1, 2)
            nodes[b, :n - 1] = torch.randint(4, LABELS, (n - 1,), generator=g)
    tgt = torch.randint(4, VOCAB, (B, T), generator=g)
    prev = torch.cat([torch.full((B, 1), 2), tgt[:, :-1]], 1)
    net = dict(src_tokens=src, src_lengths=torch.tensor(lengths), prev_output_tokens=prev, src_nodes=nodes,
               src_spans=spans)
    return net, tgt


def loss_and_grads(model, net, tgt):
    model.train()
    model.zero_grad(set_to_none=True)
    out, _ = model(**net)
    loss = torch.nn.functional.cross_entropy(out.float().transpose(1, 2), tgt)
    loss.backward()
    return out.detach(), loss.detach(), {k: p.grad.clone() for k, p in model.named_parameters() if p.grad is not None}


def assert_same(a, b, atol):
    (oa, la, ga), (ob, lb, gb) = a, b
    torch.testing.assert_close(oa, ob, rtol=0, atol=atol)
    torch.testing.assert_close(la, lb, rtol=0, atol=atol)
    assert ga.keys() == gb.keys()
    for k in ga:
        torch.testing.assert_close(ga[k], gb[k], rtol=0, atol=atol, msg=k)


@pytest.fixture(scope="module")
def models(data_dir):
    _, eager = build(data_dir)
    _, compiled = build(data_dir, "--tree-compile")
    compiled.load_state_dict(eager.state_dict())
    return eager, compiled


def test_a_compiled_function_is_the_eager_one_and_counts_its_graphs_calls_and_time():
    """LayerCompiler.compiled on a small function (seconds, not a model's minutes): the eager results; one graph
    for sizes that were equal by chance in the first call (3 x 3, no duck sizing: they get a symbol each) and for
    new sizes later (symbolic sizes); every call counted; inductor's time between 0 and the wall time."""
    import time

    from fairseq_tree.modules.tree_compile import LayerCompiler

    def f(x, y):
        return torch.tanh(x) @ y + 1

    comp = LayerCompiler()
    fn = comp.compiled(f)
    assert comp.compiled(f) is fn and fn.__name__ == "f"  # built once per function
    t0 = time.perf_counter()
    for k, (a, b) in enumerate([((3, 3), (3, 3)), ((3, 5), (5, 2)), ((6, 4), (4, 7))], 1):
        x, y = torch.randn(*a), torch.randn(*b)
        torch.testing.assert_close(fn(x, y), f(x, y))
        assert (comp.graphs, comp.calls) == (1, k)
    assert 0 < comp.seconds < time.perf_counter() - t0


@pytest.mark.parametrize("backend", ["aot_eager", "cudagraphs"])
def test_the_other_backends_on_cpu_tensors_are_eager(backend, caplog):
    """``--tree-compile-backend aot_eager``, and ``cudagraphs`` where the tensors are on the CPU (a CPU run of a
    config meant for a GPU: torch's backend declines the capture with its reason in the log): the traced graphs,
    forward and backward, give the eager results."""
    from fairseq_tree.modules.tree_compile import LayerCompiler

    def f(x, y):
        return torch.tanh(x) @ y + 1

    comp = LayerCompiler(backend=backend)
    fn = comp.compiled(f)
    x, y = torch.randn(3, 4, requires_grad=True), torch.randn(4, 5)
    x2 = x.detach().clone().requires_grad_()
    fn(x, y).pow(2).sum().backward()
    f(x2, y).pow(2).sum().backward()
    torch.testing.assert_close(fn(x, y), f(x, y))
    torch.testing.assert_close(x.grad, x2.grad)
    assert comp.graphs == 1
    assert ("skipping cudagraphs due to cpu device" in caplog.text) == (backend == "cudagraphs")


def calls_per_step(model, net, tgt) -> int:
    """Compiled functions called by one train step."""
    before = model.encoder.compiler.calls
    loss_and_grads(model, net, tgt)
    return model.encoder.compiler.calls - before


def test_compiled_step_equals_eager_and_graphs_stay_bounded(models):
    """Batches of different shapes (and buckets): the same outputs, loss and gradients as eager at 1e-5; batches
    within buckets already seen compile nothing more; the step is two compiled calls (encoder stack, decoder)."""
    eager, compiled = models
    comp = compiled.encoder.compiler
    assert comp.scope == "stack" and compiled.decoder.compiler is comp
    shapes = [([9, 12, 5], 10), ([16, 3, 11, 14], 13), ([10, 9, 13], 9), ([15, 2, 16, 7], 16), ([20, 18, 17], 22)]
    graphs = []
    for i, (lengths, T) in enumerate(shapes):
        net, tgt = batch(lengths, i, T)
        assert_same(loss_and_grads(compiled, net, tgt), loss_and_grads(eager, net, tgt), 1e-5)
        graphs.append(comp.graphs)
    assert 0 < graphs[0] and graphs[1] == graphs[2], graphs  # (N, M, T buckets 16; the sizes are symbolic)
    # T = 16 is unpadded: fairseq's decoder branches on the target's padding, one more graph for its other branch
    assert graphs[3] == graphs[2] + 1, graphs
    assert graphs[4] == graphs[3], graphs  # new buckets (24), same graphs
    assert graphs[-1] <= 6, graphs
    assert calls_per_step(compiled, *batch([9, 12, 5], 0, 10)) == 2


def capture_candidates(found: list):
    """A ``torch.compile`` backend that traces as torch's ``cudagraphs`` backend does (AOTAutograd, its default
    partition, its input-mutation setting) and runs the graphs as traced (``boxed_nop``, as on a CPU), recording
    for each forward and backward graph what would make ``cudagraphs`` decline its capture on a GPU, the device
    aside: an input it mutates, or an op it cannot capture (a host sync, a data-dependent size)."""
    from torch._dynamo import config as dynamo_config
    from torch._dynamo.backends.common import aot_autograd
    from torch._dynamo.backends.cudagraphs import check_for_mutation_ignore_cuda_graph_managed_tensor as mutation
    from torch._dynamo.backends.debugging import boxed_nop
    from torch._inductor.utils import count_tangents, get_first_incompatible_cudagraph_node, num_fw_fixed_arguments

    def backend(gm, example_inputs):
        def forward(aot_gm, aot_inputs, is_inference=False):
            fixed = num_fw_fixed_arguments(len(example_inputs), len(aot_inputs))
            found.append(("forward", mutation(aot_gm, fixed), get_first_incompatible_cudagraph_node(aot_gm)))
            return boxed_nop(aot_gm, aot_inputs)

        def backward(aot_gm, aot_inputs):
            found.append(("backward", mutation(aot_gm, count_tangents(aot_gm)),
                          get_first_incompatible_cudagraph_node(aot_gm)))
            return boxed_nop(aot_gm, aot_inputs)

        return aot_autograd(fw_compiler=forward, bw_compiler=backward,
                            keep_inference_input_mutations=dynamo_config.cudagraph_backend_keep_input_mutation)(
            gm, example_inputs)
    return backend


def test_the_capture_check_sees_what_cuda_graphs_refuse():
    """:func:`capture_candidates` on a function whose graph holds a data-dependent size (boolean-mask indexing,
    kept in the graph by dynamo's ``capture_dynamic_output_shape_ops``): it names the op in the forward graph and
    a size read from it in the backward; on a plain function it names nothing."""
    from torch._dynamo import config as dynamo_config

    from fairseq_tree.modules.tree_compile import LayerCompiler

    found = []
    comp = LayerCompiler(backend=capture_candidates(found))
    x = torch.randn(6, requires_grad=True)
    comp.compiled(lambda v: torch.tanh(v) * 2)(x).sum().backward()
    assert [(k, n) for k, _, n in found] == [("forward", None), ("backward", None)]
    found.clear()
    with dynamo_config.patch(capture_dynamic_output_shape_ops=True):
        comp.compiled(lambda v: v[v > 0].sum() * v)(x).sum().backward()
    assert [k for k, _, _ in found] == ["forward", "backward"] and all(n is not None for _, _, n in found)
    assert "index" in str(found[0][2].target)


def test_the_graphs_cuda_graphs_would_capture_are_the_eager_step_and_capturable(data_dir, models):
    """``--tree-compile-backend cudagraphs``, its graphs traced as that backend traces them and run as traced (the
    CPU's part of it: the capture needs a GPU, tests/integration/test_cuda.py): eager's outputs, loss and gradients
    at 1e-5 on two batches of one bucket, one set of graphs, two compiled calls a step; and in none of the forward
    and backward graphs an input mutation or an op that CUDA graphs cannot capture (either would make the backend
    fall back to running them uncaptured on the card)."""
    eager, _ = models
    _, traced = build(data_dir, "--tree-compile", "--tree-compile-backend", "cudagraphs")
    traced.load_state_dict(eager.state_dict())
    comp = traced.encoder.compiler
    assert comp.backend == "cudagraphs" and traced.decoder.compiler is comp
    found = []
    comp.backend = capture_candidates(found)
    graphs = []
    for i, (lengths, T) in enumerate([([9, 12, 5], 10), ([16, 3, 11, 14], 13)]):
        net, tgt = batch(lengths, i, T)
        assert_same(loss_and_grads(traced, net, tgt), loss_and_grads(eager, net, tgt), 1e-5)
        graphs.append(comp.graphs)
    assert graphs[0] > 0 and graphs[1] == graphs[0], graphs
    assert calls_per_step(traced, *batch([9, 12, 5], 0, 10)) == 2
    kinds = [k for k, _, _ in found]
    assert kinds.count("forward") == graphs[0] and kinds.count("backward") == graphs[0], kinds
    assert [(k, m, n) for k, m, n in found if m or n] == []


def test_batch_invariance_through_the_compiled_step(models):
    """A sentence's outputs in a batch and alone (other buckets, other padding) are the same, compiled."""
    _, compiled = models
    net, tgt = batch([11, 4, 15], 7, 12)
    out, _, _ = loss_and_grads(compiled, net, tgt)
    for b in (0, 1):
        n = int(net["src_lengths"][b])
        alone = dict(src_tokens=net["src_tokens"][b:b + 1, :n], src_lengths=net["src_lengths"][b:b + 1],
                     prev_output_tokens=net["prev_output_tokens"][b:b + 1], src_nodes=net["src_nodes"][b:b + 1, :n - 1],
                     src_spans=net["src_spans"][b:b + 1, :n - 1])
        out_alone, _, _ = loss_and_grads(compiled, alone, tgt[b:b + 1])
        torch.testing.assert_close(out_alone[0], out[b], rtol=0, atol=1e-5)


def test_layer_scope_and_checkpointed_layers_compiled_equal_eager(data_dir, models):
    """``--tree-compile-scope layer`` with ``--checkpoint-activations``: each layer its own compiled call (2 encoder
    + 2 decoder layers), 4 calls in the forward and the same 4 again when the backward recomputes them (under the
    default scope a checkpointed stack is compiled this way too: tests/unit/test_tree_compile_mutants.py); two
    batches of different shapes, the eager step. (One model for both: each costs inductor its own compiles.)"""
    eager, _ = models
    _, compiled = build(data_dir, "--tree-compile", "--tree-compile-scope", "layer", "--checkpoint-activations")
    assert compiled.encoder.compiler.scope == "layer"
    compiled.load_state_dict(eager.state_dict())
    for i, (lengths, T) in enumerate([([9, 12, 5], 10), ([16, 3, 11, 14], 13)]):
        net, tgt = batch(lengths, i, T)
        assert_same(loss_and_grads(compiled, net, tgt), loss_and_grads(eager, net, tgt), 1e-5)
    assert calls_per_step(compiled, *batch([9, 12, 5], 0, 10)) == 8


def test_decoding_a_compiled_model_is_eager_decoding(data_dir, models):
    """Validation and beam search (incremental decoding) of a --tree-compile model run its eager layers: the same
    hypotheses as the eager model, after compiled train steps, and a deep copy of it decodes too."""
    eager, compiled = models
    task, _ = build(data_dir)
    net, _ = batch([9, 12, 5], 3, 6)
    inp = {k: v for k, v in net.items() if k != "prev_output_tokens"}
    gen = task.build_generator([eager], GenerationConfig(beam=3, max_len_a=0, max_len_b=6))
    hyps = {}
    for name, model in (("eager", eager), ("compiled", compiled), ("copy", copy.deepcopy(compiled))):
        model.eval()
        with torch.no_grad():
            hyps[name] = [[h["tokens"].tolist() for h in sent] for sent in gen.generate([model], {"net_input": inp})]
    assert hyps["compiled"] == hyps["eager"] == hyps["copy"]
