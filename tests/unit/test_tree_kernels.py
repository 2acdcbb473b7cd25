"""The fused tree kernels (``--tree-kernels fused``: fairseq_tree/modules/tree_kernels.py and tree_kernels_triton.py)
against the eager path (forward and every gradient at 1e-5 in fp32, random trees with padding on either side, batch
invariance, half inputs accumulated in fp32) and the paper's equations written out (tests/tree_reference.py); the
flag; and the launch counter the benchmark reports them with (fairseq_tree/utils/launch_count.py).

The kernels run in triton's interpreter on the CPU (``TRITON_INTERPRET=1``; on CUDA where there is one), on tiny
shapes; without triton installed those tests skip and say so."""

import argparse
import random
from collections import Counter
from pathlib import Path

import pytest
import torch
from fairseq.data import Dictionary
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tree_reference import bpe_tree, collate, random_tree, reference_accumulation

import fairseq_tree  # noqa: F401  (registers the models and tasks)
from fairseq_tree.modules import tree_kernels
from fairseq_tree.modules.hierarchical_accumulation import VARIANTS
from fairseq_tree.modules.tree_attention import TreeMultiheadAttention
from fairseq_tree.modules.tree_kernels import fused_values, triton_available, use_fused
from fairseq_tree.modules.tree_structure import TreeStructure
from fairseq_tree.utils.launch_count import LaunchCounter, fused_launch, layer_scope, per_layer

torch.set_num_threads(1)

needs_triton = pytest.mark.skipif(
    not triton_available(), reason="triton is not installed: the fused kernels' parity runs where it is "
                                   "(pip install triton; TRITON_INTERPRET=1 runs the kernels on the CPU)")
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
FUSED = ("tree_values_fwd", "tree_values_bwd_v", "tree_values_bwd_w", "tree_values_bwd_pairs")


@pytest.fixture(scope="module")
def kernels():
    """The kernels' module, interpreted on a CPU-only machine (``TRITON_INTERPRET`` is read as they are jitted), for
    this module's tests."""
    with pytest.MonkeyPatch.context() as mp:
        if DEVICE == "cpu":
            mp.setenv("TRITON_INTERPRET", "1")
        module = tree_kernels.kernels_module()
        kind = type(module.tree_values_fwd).__name__
        if DEVICE == "cpu" and kind == "JITFunction":
            pytest.skip("the kernels were jitted for a GPU in this process, and there is none to run them on")
        assert kind in ("InterpretedFunction", "JITFunction"), f"the kernels were not jitted: {kind}"
        yield module


def batch(trees, seed, extra_n=1, extra_m=1, kh=100, kv=100):
    """A TreeStructure of ``trees`` padded on random sides, with one more leaf and node slot than needed."""
    rng = random.Random(seed)
    spans, node_pad, leaf_pad, leaf_pos, node_pos = collate(trees, rng, extra_n=extra_n, extra_m=extra_m)
    tree = TreeStructure.build(spans, node_pad, leaf_pad, max_horizontal=kh, max_vertical=kv).to(DEVICE)
    return tree, leaf_pos, node_pos


def attention(variant, hier=True, E=16, H=2, kh=100, kv=100, seed=0):
    """A tree self-attention of ``variant`` whose tables and leaf weights are O(1) (their init is small: a wrong
    index or weight must show)."""
    torch.manual_seed(seed)
    att = TreeMultiheadAttention(E, H, self_attention=True, hier_embed=hier, max_horizontal=kh, max_vertical=kv,
                                 **VARIANTS[variant]).to(DEVICE)
    with torch.no_grad():
        att.accumulation.weight_proj.weight.normal_()
        if att.accumulation.weight_proj.bias is not None:
            att.accumulation.weight_proj.bias.normal_()
    return att


def run_values(att, x, tree, kernels, probe):
    """``att._values`` under ``--tree-kernels kernels``: (values, grad of x, grads of the parameters)."""
    att.kernels = kernels
    att.zero_grad(set_to_none=True)
    x = x.detach().requires_grad_()
    v = att._values(x, tree)
    (v.float() * probe).sum().backward()
    return v.detach(), x.grad, {n: p.grad for n, p in att.named_parameters() if p.grad is not None}


def garbage_input(tree, E, seed, pad=1e3):
    """x [N + M, B, E] with large values at the padded positions (they must reach no real node)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(tree.num_leaves + tree.num_nodes, tree.batch_size, E, generator=g)
    return x.masked_fill(tree.pad_mask.t()[..., None].cpu(), pad).to(DEVICE)


def assert_parity(att, tree, seed, E=16):
    x = garbage_input(tree, E, seed)
    probe = torch.randn(x.shape[0], x.shape[1], E, generator=torch.Generator().manual_seed(seed + 1))
    probe = probe.to(DEVICE).view(x.shape[0], x.shape[1], att.num_heads, -1).permute(1, 2, 0, 3)
    eager = run_values(att, x, tree, "eager", probe)
    fused = run_values(att, x, tree, "fused", probe)
    torch.testing.assert_close(fused[0], eager[0], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(fused[1], eager[1], rtol=1e-5, atol=1e-5)
    assert set(fused[2]) == set(eager[2])
    for name in eager[2]:
        torch.testing.assert_close(fused[2][name], eager[2][name], rtol=1e-5, atol=1e-5, msg=name)
    return eager, fused


# ---------------------------------------------------------------------------------------- parity with eager
@needs_triton
@pytest.mark.parametrize("variant,hier", [("paper", True), ("code", True), ("paper", False)])
def test_fused_values_match_eager_forward_and_every_gradient(kernels, variant, hier):
    """Random trees padded left or right, a spare leaf and node slot, garbage at padding: the values ``[L W_V; N']``,
    the gradient of the layer input and of every parameter (projection, leaf weights, both tables) at 1e-5."""
    rng = random.Random(4)
    trees = [random_tree(rng, 9, 3), random_tree(rng, 1), bpe_tree(), random_tree(rng, 6, 2)]
    tree, _, _ = batch(trees, 4)
    eager, _ = assert_parity(attention(variant, hier), tree, 4)
    if hier:
        assert eager[2]["accumulation.vertical_embed.weight"].abs().sum() > 0  # the tables' gradients are tested


@needs_triton
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2 ** 31 - 1), variant=st.sampled_from(["paper", "code"]),
       max_children=st.sampled_from([2, 3, 5]))
def test_fused_values_match_eager_on_random_trees(kernels, seed, variant, max_children):
    """As above, on trees hypothesis draws (1 to 4 sentences of 1 to 11 leaves)."""
    rng = random.Random(seed)
    trees = [random_tree(rng, rng.randint(1, 11), max_children) for _ in range(rng.randint(1, 4))]
    tree, _, _ = batch(trees, seed, extra_n=rng.randint(0, 2), extra_m=rng.randint(0, 2))
    assert_parity(attention(variant, seed=seed % 7), tree, seed % 1000)


@needs_triton
def test_fused_values_on_special_trees(kernels):
    """One-word sentences only (no node, no pair), a deep chain and long spans over small clamped tables (|E| 2 and
    3), several blocks of positions and channels (N + M > 16 rows, 48 channels in 3 heads of 16)."""
    rng = random.Random(0)
    one = random_tree(rng, 1)
    tree, _, _ = batch([one, one], 1, extra_n=0, extra_m=0)
    assert tree.num_nodes == 0
    assert_parity(attention("paper"), tree, 1)
    from tree_reference import RefTree
    chain = RefTree(7, [[("leaf", 5), ("leaf", 6)]] + [[("leaf", 4 - k), ("node", k)] for k in range(5)])
    tree, _, _ = batch([chain, random_tree(rng, 12, 2), one], 2, kh=3, kv=2)
    assert_parity(attention("code", kh=3, kv=2), tree, 2)
    big = [random_tree(rng, 14, 2), random_tree(rng, 9, 3)]
    tree, _, _ = batch(big, 3)
    assert tree.num_leaves + tree.num_nodes > 16
    assert_parity(attention("paper", E=48, H=3), tree, 3, E=48)


@needs_triton
@pytest.mark.parametrize("variant", ["paper", "code"])
def test_fused_values_follow_the_papers_equations(kernels, variant):
    """The fused node values against eqs. (5)-(10) written out (float64 numpy), head by head; NaN in the padded
    values and leaf weights reaches no real node."""
    rng = random.Random(7)
    trees = [bpe_tree(), random_tree(rng, 8, 3), random_tree(rng, 1)]
    tree, leaf_pos, node_pos = batch(trees, 7)
    att = attention(variant, E=8, H=2)
    acc = att.accumulation
    B, N, M, H, dh = len(trees), tree.num_leaves, tree.num_nodes, 2, 4
    g = torch.Generator().manual_seed(1)
    v = torch.randn(N + M, B, H * dh, generator=g).to(DEVICE)
    v = v.masked_fill(tree.pad_mask.t()[..., None], float("nan"))
    w = torch.randn(N + M, B, acc.weight_proj.out_features, generator=g).to(DEVICE)
    w = w.masked_fill(tree.pad_mask.t()[..., None], float("nan"))  # the eager path masks the weights too
    vertical = "vertical_path" if variant == "paper" else "vertical_depth"
    with torch.no_grad():
        out = fused_values(v, w, tree, acc.count_leaf_in_mean,
                           (acc.vertical_embed.weight, acc.horizontal_embed.weight), vertical).cpu().double()
    ev, eh = (acc.vertical_embed.weight.detach().cpu().double().numpy(),
              acc.horizontal_embed.weight.detach().cpu().double().numpy())
    vd, wd = v.cpu().double(), w.cpu().double()
    for b, t in enumerate(trees):
        rows = [N + i for i in node_pos[b]]
        assert torch.isfinite(out[rows, b]).all()
        for h in range(H):
            c = slice(h * dh, (h + 1) * dh)
            ref = reference_accumulation(t, vd[leaf_pos[b], b, c].numpy(), vd[rows, b, c].numpy(),
                                         wd[leaf_pos[b], b, h % w.size(-1)].numpy(), ev, eh, variant)
            torch.testing.assert_close(out[rows, b, c], torch.from_numpy(ref), rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(out[leaf_pos[b], b], vd[leaf_pos[b], b], rtol=0, atol=0)  # the leaves' own


@needs_triton
def test_fused_values_are_batch_invariant(kernels):
    """A sentence alone and in four slots of a padded batch: its values and its input's gradient agree at 1e-5."""
    rng = random.Random(11)
    alone = random_tree(rng, 7, 2)
    others = [random_tree(rng, 9), random_tree(rng, 1), random_tree(rng, 12, 2)]
    att = attention("paper")
    g = torch.Generator().manual_seed(3)
    xl, xn = torch.randn(alone.n, 16, generator=g), torch.randn(alone.m, 16, generator=g)
    probe_l, probe_n = torch.randn(alone.n, 16, generator=g), torch.randn(alone.m, 16, generator=g)

    def run(trees, slot):
        tree, leaf_pos, node_pos = batch(trees, slot)
        N = tree.num_leaves
        rows = leaf_pos[slot] + [N + i for i in node_pos[slot]]
        x = garbage_input(tree, 16, slot).cpu()
        probe = torch.zeros_like(x)
        x[rows, slot] = torch.cat([xl, xn])
        probe[rows, slot] = torch.cat([probe_l, probe_n])
        probe = probe.to(DEVICE).view(x.shape[0], x.shape[1], 2, 8).permute(1, 2, 0, 3)
        v, gx, _ = run_values(att, x.to(DEVICE), tree, "fused", probe)
        return v[slot][:, rows].cpu(), gx[rows, slot].cpu()

    single = run([alone], 0)
    for slot in range(4):
        for a, b in zip(single, run(others[:slot] + [alone] + others[slot:], slot)):
            torch.testing.assert_close(b, a, rtol=1e-5, atol=1e-5)


@needs_triton
def test_fused_values_of_a_reordered_tree(kernels):
    """Beam search reorders the encoder output and its tree (lazily: a ReorderedTree) before the decoder's first
    step computes the cross-attention's values: fused and eager agree on it."""
    rng = random.Random(6)
    tree, _, _ = batch([random_tree(rng, 7, 2), bpe_tree()], 6)
    order = torch.tensor([1, 1, 0, 1]).to(DEVICE)
    reordered = tree.index_select(order)
    att = attention("paper")
    x = garbage_input(tree, 16, 6).index_select(1, order)
    values = {k: run_values(att, x, reordered, k, torch.ones(1, device=DEVICE)) for k in ("eager", "fused")}
    assert type(reordered).__name__ == "ReorderedTree"
    for a, b in zip(values["fused"][:2], values["eager"][:2]):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)


@needs_triton
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_fused_half_values_accumulate_in_fp32(kernels, dtype):
    """Half values (a projection under autocast) and half tables (--fp16): the result is the fp32 computation on the
    same numbers rounded once, and the leaf weights' and tables' gradients (fp32 accumulations of half gradients)
    match the fp32 run at 1e-5: nothing is summed in half."""
    rng = random.Random(2)
    tree, _, _ = batch([random_tree(rng, 9, 3), bpe_tree()], 2)
    att = attention("paper")
    acc = att.accumulation
    g = torch.Generator().manual_seed(5)
    L, B = tree.num_leaves + tree.num_nodes, tree.batch_size
    v = torch.randn(L, B, 16, generator=g).to(DEVICE, dtype)
    w = torch.randn(L, B, 1, generator=g).to(DEVICE)
    tables = [t.detach().to(dtype) for t in (acc.vertical_embed.weight, acc.horizontal_embed.weight)]
    probe = torch.randn(L, B, 16, generator=g).to(DEVICE, dtype)

    def run(v, tables, probe):
        v = v.detach().requires_grad_()
        w_ = w.detach().requires_grad_()
        tables = [t.detach().requires_grad_() for t in tables]
        out = fused_values(v, w_, tree, True, tuple(tables))
        (out * probe).sum().backward()
        return out, v.grad, w_.grad, [t.grad for t in tables]

    half = run(v, tables, probe)
    full = run(v.float(), [t.float() for t in tables], probe.float())
    assert half[0].dtype == dtype and half[1].dtype == dtype and half[2].dtype == torch.float32
    ulp = torch.finfo(dtype).eps  # one rounding (triton's interpreter rounds bf16 toward zero, a GPU to nearest)
    torch.testing.assert_close(half[0].float(), full[0], rtol=ulp, atol=0)
    torch.testing.assert_close(half[1].float(), full[1], rtol=ulp, atol=0)
    torch.testing.assert_close(half[2], full[2], rtol=1e-5, atol=1e-5)
    for a, b in zip(half[3], full[3]):
        assert a.dtype == dtype
        torch.testing.assert_close(a, b.to(dtype), rtol=0, atol=0)


# ---------------------------------------------------------------------------------------- launches
@needs_triton
@pytest.mark.parametrize("hier", [True, False])
def test_fused_values_launch_four_kernels_and_few_operators(kernels, hier):
    """The values of a layer, forward and backward: one fused launch forward, three backward (two without the
    embeddings), and the aten operators around them, counted by hand: the two projections (v: view, t, addmm,
    view; w: t, view, mm, _unsafe_view), the output's allocation and head view (empty, view, permute), the test's
    sum and backward()'s seed gradient (ones_like); backward, the kernels' buffers (empty, zeros; zeros for each
    table) besides the projections' own backward."""
    rng = random.Random(1)
    tree, _, _ = batch([random_tree(rng, 6, 2), bpe_tree()], 1)
    att = attention("paper", hier=hier)
    att.kernels = "fused"
    x = garbage_input(tree, 16, 0).requires_grad_()
    att._values(x, tree).sum().backward()  # the batch's operands built once, outside the count
    att.zero_grad(set_to_none=True)
    with LaunchCounter() as c:
        att._values(x, tree).sum().backward()
    forward = Counter({k[2]: n for k, n in c.names.items() if k[1] == "forward"})
    fused = Counter({k[2]: n for k, n in c.names.items() if k[2].startswith("tree_values")})
    assert fused == Counter(FUSED[:4] if hier else FUSED[:3])
    assert forward == Counter({"view": 4, "t": 2, "addmm": 1, "mm": 1, "_unsafe_view": 1, "empty": 1, "permute": 1,
                               "sum": 1, "ones_like": 1, "tree_values_fwd": 1})
    backward_allocs = Counter({k[2]: n for k, n in c.names.items() if k[1] == "backward" and k[2] in ("zeros",
                                                                                                         "empty")})
    assert backward_allocs == Counter({"empty": 1, "zeros": 3 if hier else 1})


# ---------------------------------------------------------------------------------------- the GPU compiler
# A tree attention's values forward and backward with every launch compiled for a card (tree_kernels.compile_only):
# a fresh process, as the kernels are jitted once per process (this module's are interpreted) and the compile cache
# is the test's own.
COMPILE_SCRIPT = r"""
import json, random, sys
import torch
from tree_reference import bpe_tree, collate, random_tree
from fairseq_tree.modules import tree_kernels
from fairseq_tree.modules.hierarchical_accumulation import VARIANTS
from fairseq_tree.modules.tree_attention import TreeMultiheadAttention
from fairseq_tree.modules.tree_structure import TreeStructure

rng = random.Random(0)
spans, node_pad, leaf_pad, _, _ = collate([random_tree(rng, 9, 3), bpe_tree()], rng, extra_n=1, extra_m=1)
tree = TreeStructure.build(spans, node_pad, leaf_pad, max_horizontal=100, max_vertical=100)
rows = []
for card, dtype, variant in json.loads(sys.argv[1]):
    torch.manual_seed(0)
    att = TreeMultiheadAttention(16, 2, self_attention=True, hier_embed=True, max_horizontal=100, max_vertical=100,
                                 **VARIANTS[variant])
    att.kernels = "fused"
    x = torch.randn(tree.num_leaves + tree.num_nodes, tree.batch_size, 16).requires_grad_()
    with tree_kernels.compile_only(card) as built, torch.autocast("cpu", getattr(torch, dtype),
                                                                  enabled=dtype != "float32"):
        att._values(x, tree).float().sum().backward()
    for k in built:
        rows.append(dict(card=card, dtype=dtype, variant=variant, name=k.name, signature=k.signature,
                         arch=k.kernel.metadata.arch, resources=k.resources(),
                         dots=k.kernel.asm["ttir"].count("tt.dot "), ptx_tf32="tf32" in k.kernel.asm["ptx"],
                         seconds=k.seconds, warp_size=k.kernel.metadata.target.warp_size))
try:
    with tree_kernels.compile_only(90), tree_kernels.compile_only(80):
        pass
    nested = "allowed"
except RuntimeError as e:
    nested = str(e)
from triton.runtime import driver
print(json.dumps(dict(rows=rows, nested=nested, restored=driver._active is None)))
"""
CARDS = [(90, "float32", "paper"), (90, "bfloat16", "code"), (80, "float16", "paper")]


@needs_triton
@pytest.mark.skipif(DEVICE == "cuda", reason="on a GPU the parity tests compile the kernels for the card itself")
def test_the_kernels_compile_for_the_cards_users_train_on(tmp_path):
    """Triton's real compiler (its passes, LLVM and ptxas; no GPU) builds the four kernels of a layer's values for
    sm_90 (H100, H200) and sm_80 (A100), with the arguments a forward and backward pass them, in fp32 and under
    half autocast: the interpreter the parity tests run in accepts programs the GPU compiler rejects (a kernel that
    read a plain global string ran there and failed on every card). The values and gradients arrive in the
    autocast dtype; the batch's structure operands (the mean's weights, A, D, the pairs' weights) are fp32, and
    the leaf weights' gradient an fp32 buffer: the accumulation in fp32 is in the compiled kernel's types. No
    product is TF32 (the interpreter has none, so only the PTX shows a dot left at triton's default: a 1e-3 error
    the 1e-5 parity would meet only on a card)."""
    import json
    import os
    import subprocess
    import sys
    import time

    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env.update(TRITON_CACHE_DIR=str(tmp_path), TRITON_DEFAULT_FP_FUSION="1",
               PYTHONPATH=os.pathsep.join([str(Path(__file__).resolve().parents[1]), env.get("PYTHONPATH", "")]))
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", COMPILE_SCRIPT, json.dumps(CARDS)], env=env, capture_output=True,
                          text=True, timeout=600)
    wall = time.perf_counter() - t0
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.splitlines()[-1])
    rows = out["rows"]
    assert "do not nest" in out["nested"]
    assert out["restored"]  # triton's driver as it was (none chosen yet, on this machine) after each block
    assert 0 < sum(r["seconds"] for r in rows) < wall  # each build timed (cached ones about 0)
    half = {"float32": "*fp32", "bfloat16": "*bf16", "float16": "*fp16"}
    for card, dtype, variant in CARDS:
        built = {r["name"]: r for r in rows if (r["card"], r["dtype"], r["variant"]) == (card, dtype, variant)}
        assert sorted(built) == sorted(FUSED), (card, dtype, variant)
        for r in built.values():
            assert (r["arch"], r["warp_size"]) == (f"sm{card}", 32)
            assert r["resources"]["REG"] > 0
            assert r["dots"] > 0 and not r["ptx_tf32"], r["name"]
        fwd, bwd_w = built["tree_values_fwd"]["signature"], built["tree_values_bwd_w"]["signature"]
        assert (fwd["v"], fwd["out"]) == (half[dtype], half[dtype])
        assert (fwd["w"], fwd["norm"], fwd["A"], fwd["D"], fwd["pw"]) == ("*fp32",) * 5
        assert (built["tree_values_bwd_v"]["signature"]["g"], bwd_w["gw"]) == (half[dtype], "*fp32")
        assert fwd["HIER"] == bwd_w["BK"] == "constexpr"


def test_launch_counter_scopes_phases_and_fused_launches():
    """Hand-counted: encoder layer 0 multiplies by its parameter (forward: mul; backward: mul for the parameter's
    gradient, detach as it is stored), decoder layer 0 adds and reports a fused launch whose own aten operators
    (a clone standing for an interpreter's copy) are not launches; the loss's sum and its backward are "other"."""

    class Layer(torch.nn.Module):
        def __init__(self, fused):
            super().__init__()
            self.p = torch.nn.Parameter(torch.full((3,), 2.0))
            self.fused = fused

        def forward(self, x):
            if self.fused:
                with fused_launch("kernel"):
                    x.clone()
                return x + 1
            return x * self.p

    model = torch.nn.Module()
    model.encoder, model.decoder = torch.nn.Module(), torch.nn.Module()
    model.encoder.layers = torch.nn.ModuleList([Layer(False)])
    model.decoder.layers = torch.nn.ModuleList([Layer(True)])
    x = torch.ones(3)
    with LaunchCounter(model) as c:
        y = model.decoder.layers[0](model.encoder.layers[0](x))
        y.sum().backward()
    rows = per_layer(c)
    assert rows["encoder layer 0"] == {"forward": 1, "backward": 2, "total": 3}
    assert rows["decoder layer 0"] == {"forward": 2, "backward": 0, "total": 2}
    assert c.total("decoder layer 0", "forward") == 2 and c.total_fused() == 1
    # the loss: sum, and backward()'s seed gradient ones_like (dispatched before the engine runs a node); expand
    assert rows["other"]["forward"] == 2 and rows["other"]["backward"] == 1
    assert rows["step"]["total"] == sum(r["total"] for s, r in rows.items() if s != "step")
    assert c.names[("encoder layer 0", "backward", "mul")] == 1
    assert c.names[("decoder layer 0", "forward", "clone")] == 0
    assert torch.equal(model.encoder.layers[0].p.grad, torch.ones(3))
    with fused_launch("outside"):  # no counter active: nothing to report to
        pass
    assert c.total_fused() == 1
    assert [layer_scope(n) for n in ("encoder.layers.3", "decoder.layers.12", "encoder.layers.3.fc1",
                                     "model.decoder.layers.0", "layers.0")] == [
        "encoder layer 3", "decoder layer 12", None, "decoder layer 0", None]


# ---------------------------------------------------------------------------------------- the flag
def test_use_fused_chooses_by_flag_device_and_dtype(monkeypatch):
    """eager never; fused and auto on CUDA (auto only with triton); CPU tensors eager unless TRITON_INTERPRET=1 (a
    checkpoint trained fused decodes on any CPU); float64 eager (the kernels compute in fp32); a bad name refused."""
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    x = torch.zeros(2)
    assert not use_fused("eager", x) and not use_fused("fused", x) and not use_fused("auto", x)
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert use_fused("fused", x) and not use_fused("eager", x) and not use_fused("fused", x.double())
    assert use_fused("auto", x) == triton_available()
    monkeypatch.setattr(tree_kernels, "triton_available", lambda: False)
    assert not use_fused("auto", x) and use_fused("fused", x)
    with pytest.raises(ValueError, match="--tree-kernels must be one of"):
        use_fused("triton", x)
    with pytest.raises(ValueError, match="kernels must be one of"):
        TreeMultiheadAttention(8, 2, self_attention=True, kernels="fast")


def test_fused_without_triton_names_the_install(monkeypatch):
    monkeypatch.setattr(tree_kernels, "triton_available", lambda: False)
    monkeypatch.setattr(tree_kernels.tree_kernels_triton, "jitted", False)
    with pytest.raises(RuntimeError, match="pip install triton"):
        tree_kernels.kernels_module()
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    with pytest.raises(RuntimeError, match="pip install triton"), tree_kernels.compile_only(90):
        pass


def test_compile_only_refuses_the_interpreter(monkeypatch):
    """Kernels jitted for triton's interpreter cannot be compiled for a card: compile_only says what to unset."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    with pytest.raises(RuntimeError, match="unset TRITON_INTERPRET"), tree_kernels.compile_only(90):
        pass


def tiny_model(kernels: str):
    from fairseq.models import ARCH_CONFIG_REGISTRY

    from fairseq_tree.models.tree2seq_transformer import Tree2SeqModel
    from fairseq_tree.tasks.tree_translation import TreeTranslationConfig, TreeTranslationTask

    d, labels = Dictionary(), Dictionary()
    for i in range(12):
        d.add_symbol(f"w{i}")
        labels.add_symbol(f"L{i}")
    args = argparse.Namespace(tree_kernels=kernels, dropout=0.0)
    ARCH_CONFIG_REGISTRY["tree2seq_tiny"](args)
    torch.manual_seed(0)
    return Tree2SeqModel.build_model(args, TreeTranslationTask(TreeTranslationConfig(), d, d, labels)).to(DEVICE)


def test_the_flag_reaches_every_tree_attention():
    """--tree-kernels (default eager) sets the encoder's self-attentions and the decoder's cross-attentions."""
    for kernels in ("eager", "fused", "auto"):
        model = tiny_model(kernels)
        atts = [m for m in model.modules() if isinstance(m, TreeMultiheadAttention)]
        assert len(atts) == 4 and {a.kernels for a in atts} == {kernels}
    from fairseq_tree.models.tree2seq_transformer import Tree2SeqConfig
    assert Tree2SeqConfig().tree_kernels == "eager"


@needs_triton
def test_a_tree2seq_train_step_is_the_same_fused(kernels):
    """tree2seq_tiny (2 + 2 layers): loss and every parameter's gradient of a train step, fused against eager at
    1e-5, and the fused step launches 4 kernels in each encoder self-attention and decoder cross-attention."""
    from fairseq_tree.utils.launch_count import LaunchCounter

    spans = torch.tensor([[[0, 2], [0, 3], [0, 0]], [[1, 3], [0, 3], [0, 4]]])
    nodes = torch.tensor([[5, 6, 1], [5, 7, 8]])
    src = torch.tensor([[4, 5, 6, 1], [7, 8, 9, 10]])
    spans[1, 2] = torch.tensor([0, 4])
    prev = torch.tensor([[2, 4, 5], [2, 6, 7]])
    batch_ = [t.to(DEVICE) for t in (src, nodes, spans, prev)]

    def step(kernels):
        model = tiny_model(kernels)
        model.train()
        with LaunchCounter(model) as c:
            out, _ = model(batch_[0], None, batch_[3], src_nodes=batch_[1], src_spans=batch_[2])
            loss = out.float().logsumexp(-1).sum()
            loss.backward()
        return loss.detach(), {n: p.grad for n, p in model.named_parameters() if p.grad is not None}, c

    eager, fused = step("eager"), step("fused")
    torch.testing.assert_close(fused[0], eager[0], rtol=1e-5, atol=1e-5)
    assert set(fused[1]) == set(eager[1])
    for name in eager[1]:
        torch.testing.assert_close(fused[1][name], eager[1][name], rtol=1e-5, atol=1e-5, msg=name)
    counts = Counter(s for (s, _, name), n in fused[2].names.items() if name.startswith("tree_values") for _ in
                     range(n))
    assert counts == {"encoder layer 0": 4, "encoder layer 1": 4, "decoder layer 0": 4, "decoder layer 1": 4}
    assert eager[2].total_fused() == 0 and fused[2].total() < eager[2].total() - 4 * 40
