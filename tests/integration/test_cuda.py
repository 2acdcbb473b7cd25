"""The GPU paths (skipped without CUDA; CI has none, run on a lent GPU as ../shared/notes/gpu_checklist.md says):
tree2seq's train step on CUDA against the CPU's (fp32), under fp16 / bf16 autocast against fp32, with
``--checkpoint-activations`` and with ``--tree-compile`` (inductor, CUDA graphs) against eager; and every family
trained end to end by ``fairseq-train --fp16`` / ``--bf16`` on CUDA, then decoded, parsed, classified or induced on
CUDA by the plugin's CLIs. The trees come from the same random batches as
tests/integration/test_tree_compile_step.py."""

import contextlib

import pytest
import torch
from test_tree_compile_step import batch, build, data_dir, loss_and_grads  # noqa: F401  (data_dir: a fixture)
from tiny_models import BIN, USER_DIR, ok

pytestmark = [pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA here"), pytest.mark.slow(minutes=3)]

LENGTHS, T = [9, 12, 5, 16], 11


def to(net, device):
    return {k: v.to(device) for k, v in net.items()}


def flat_g(grads, keys):
    return torch.cat([grads[k].float().flatten().cpu() for k in keys])


def rel_err(a, b):
    return float((a.float() - b.float()).norm() / b.float().norm().clamp_min(1e-12))


@pytest.fixture(scope="module")
def eager_cpu(data_dir):  # noqa: F811
    _, model = build(data_dir)
    return model


@pytest.fixture(scope="module")
def step_cpu(eager_cpu):
    net, tgt = batch(LENGTHS, 1, T)
    return net, tgt, loss_and_grads(eager_cpu, net, tgt)


def cuda_copy(data_dir, state, *flags):  # noqa: F811
    _, model = build(data_dir, *flags)
    model.load_state_dict(state)
    return model.cuda()


def test_cuda_fp32_step_is_the_cpu_step(data_dir, eager_cpu, step_cpu):  # noqa: F811
    net, tgt, (out, loss, grads) = step_cpu
    prev = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        o, lo, g = loss_and_grads(cuda_copy(data_dir, eager_cpu.state_dict()), to(net, "cuda"), tgt.cuda())
    finally:
        torch.backends.cuda.matmul.allow_tf32 = prev
    torch.testing.assert_close(o.cpu(), out, rtol=0, atol=1e-4)
    torch.testing.assert_close(lo.cpu(), loss, rtol=0, atol=1e-5)
    for k in grads:
        torch.testing.assert_close(g[k].cpu(), grads[k], rtol=1e-3, atol=1e-5, msg=k)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_autocast_step_follows_fp32(data_dir, eager_cpu, step_cpu, dtype):  # noqa: F811
    """fp16 / bf16 autocast (as --amp and --bf16 --amp run it): loss within 1% and the gradient within a few % of
    fp32's (bf16 keeps 8 mantissa bits, fp16 11); nothing non-finite."""
    net, tgt, (out, loss, grads) = step_cpu
    model = cuda_copy(data_dir, eager_cpu.state_dict())
    with torch.autocast("cuda", dtype=dtype):
        o, lo, g = loss_and_grads(model, to(net, "cuda"), tgt.cuda())
    flat, ref = flat_g(g, grads), flat_g(grads, grads)
    print(f"{dtype}: loss {float(lo):.5f} vs fp32 {float(loss):.5f}, gradient rel. error {rel_err(flat, ref):.2e}")
    assert o.dtype == dtype and torch.isfinite(o).all()
    assert abs(float(lo) - float(loss)) <= 0.01 * float(loss)
    assert torch.isfinite(flat).all() and rel_err(flat, ref) < (0.05 if dtype == torch.bfloat16 else 0.01)


def test_checkpoint_activations_on_cuda_give_the_same_step(data_dir, eager_cpu, step_cpu):  # noqa: F811
    net, tgt, _ = step_cpu
    a = loss_and_grads(cuda_copy(data_dir, eager_cpu.state_dict()), to(net, "cuda"), tgt.cuda())
    b = loss_and_grads(cuda_copy(data_dir, eager_cpu.state_dict(), "--checkpoint-activations"), to(net, "cuda"),
                       tgt.cuda())
    torch.testing.assert_close(b[1], a[1], rtol=0, atol=1e-6)
    for k in a[2]:
        torch.testing.assert_close(b[2][k], a[2][k], rtol=0, atol=1e-6, msg=k)


@pytest.mark.parametrize("backend", ["inductor", "cudagraphs"])
@pytest.mark.parametrize("dtype", [None, torch.bfloat16])
def test_tree_compile_on_cuda_follows_eager(data_dir, eager_cpu, dtype, backend):  # noqa: F811
    """The compiled step (inductor's GPU kernels, or the traced graphs replayed as CUDA graphs) against eager on
    CUDA: fp32 at 1e-4, bf16 autocast within the rounding of bf16; three batches, the later two within the first's
    buckets (a replay for cudagraphs), and they compile nothing more."""
    eager = cuda_copy(data_dir, eager_cpu.state_dict())
    compiled = cuda_copy(data_dir, eager_cpu.state_dict(), "--tree-compile", "--tree-compile-backend", backend)
    graphs = []
    for i, lengths in enumerate(([9, 12, 5, 16], [10, 3, 14], [16, 11, 2, 9])):
        net, tgt = batch(lengths, 10 + i, T)
        net, tgt = to(net, "cuda"), tgt.cuda()
        with torch.autocast("cuda", dtype=dtype) if dtype else contextlib.nullcontext():
            (oc, lc, gc), (oe, le, ge) = loss_and_grads(compiled, net, tgt), loss_and_grads(eager, net, tgt)
        graphs.append(compiled.encoder.compiler.graphs)
        tol = 1e-4 if dtype is None else 2e-2
        torch.testing.assert_close(oc.float(), oe.float(), rtol=tol, atol=tol)
        torch.testing.assert_close(lc.float(), le.float(), rtol=tol, atol=tol)
        err = rel_err(flat_g(gc, ge), flat_g(ge, ge))
        diff = float((oc.float() - oe.float()).abs().max())
        print(f"{backend} {dtype or 'fp32'} {lengths}: compiled - eager: output max {diff:.2e}, gradient rel. "
              f"error {err:.2e}, graphs {compiled.encoder.compiler.graphs}")
        assert err < (1e-4 if dtype is None else 5e-2)
    assert graphs[0] > 0 and graphs[2] == graphs[1] == graphs[0], graphs


def test_cuda_graphs_accumulate_gradients_as_eager(data_dir, eager_cpu):  # noqa: F811
    """--update-freq 2 through CUDA graphs: two batches' backward passes add into the same .grad, no zero_grad
    between (a replay must not overwrite a gradient that holds the graph's output), then a third step after
    zero_grad; the gradients are eager's at 1e-4 each time."""
    eager = cuda_copy(data_dir, eager_cpu.state_dict())
    compiled = cuda_copy(data_dir, eager_cpu.state_dict(), "--tree-compile", "--tree-compile-backend", "cudagraphs")
    batches = [batch(lengths, 20 + i, T) for i, lengths in enumerate(([9, 12, 5, 16], [10, 3, 14], [15, 6]))]
    grads = {}
    for name, model in (("eager", eager), ("cudagraphs", compiled)):
        model.train()
        model.zero_grad(set_to_none=True)
        grads[name] = []
        for i, (net, tgt) in enumerate(batches):
            if i == 2:
                model.zero_grad(set_to_none=True)
            out, _ = model(**to(net, "cuda"))
            torch.nn.functional.cross_entropy(out.float().transpose(1, 2), tgt.cuda()).backward()
            if i:  # after the accumulated pair, and after the fresh step
                grads[name].append({k: p.grad.detach().clone() for k, p in model.named_parameters()
                                    if p.grad is not None})
    for got, want in zip(grads["cudagraphs"], grads["eager"]):
        assert got.keys() == want.keys()
        keys = sorted(want)
        assert rel_err(flat_g(got, keys), flat_g(want, keys)) < 1e-4


# ------------------------------------------------------------------ end to end: fairseq-train on CUDA, our CLIs


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from tiny_models import build_models

    return build_models(tmp_path_factory.mktemp("cuda_models"), ("lal_notags", "tree2seq", "classifier",
                                                                  "structformer"), train_models=False)


def train_cuda(data, save, precision, *args):
    ok(BIN / "fairseq-train", data, "--user-dir", USER_DIR, precision, "--seed", "1", "--save-dir", save,
       "--no-epoch-checkpoints", "--log-format", "simple", "--num-workers", "0", "--optimizer", "adam",
       "--lr", "1e-3", "--max-update", "4", *args)
    return save / "checkpoint_last.pt"


@pytest.mark.parametrize("precision", ["--fp16", "--bf16"])
def test_every_family_trains_and_runs_on_cuda(tiny, tmp_path, precision):
    """fairseq-train on the GPU in fp16 / bf16 for 4 updates (validation included; fairseq stops on a non-finite
    loss), then each family's CLI reads the checkpoint on the GPU and gives what it gives on the CPU:
    fairseq-tree-parse (lal) and fairseq-tree-induce (structformer) the same trees, fairseq-tree-classify the same
    labels; fairseq-generate (tree2seq) decodes every sentence on the GPU in the training precision."""
    d = tiny["dir"]
    t2s = train_cuda(tiny["tree2seq"][1], tmp_path / "t2s", precision, "--task", "tree_translation", "--arch",
                     "tree2seq_tiny", "--share-all-embeddings", "--max-tokens", "2000", "--valid-subset", "train")
    gen = ok(BIN / "fairseq-generate", tiny["tree2seq"][1], "--user-dir", USER_DIR, "--path", t2s, "--task",
             "tree_translation", "--gen-subset", "train", "--beam", "2", "--max-len-b", "5", "--batch-size", "16",
             precision)
    assert sum(line.startswith("H-") for line in gen.stdout.splitlines()) == 48

    lal = train_cuda(d / "lal_bin", tmp_path / "lal", precision, "--task", "constituency_parsing", "--arch",
                     "lal_parser_tiny", "--criterion", "span_hinge_dependency", "--batch-size", "10", "--no-pos-tags",
                     "--valid-subset", "train")
    trees = {}
    for dev in ("cuda", "cpu"):
        ok(BIN / "fairseq-tree-parse", "--path", lal, "--input", d / "t.mrg", "--output", tmp_path / f"p_{dev}",
           "--device", dev)
        trees[dev] = (tmp_path / f"p_{dev}.trees").read_text().splitlines()
    assert len(trees["cuda"]) == 30 and trees["cuda"] == trees["cpu"]

    sf = train_cuda(tiny["structformer"][1], tmp_path / "sf", precision, "--task", "tree_induction", "--arch",
                    "structformer_tiny", "--criterion", "masked_lm", "--max-tokens", "1500", "--valid-subset", "train")
    induced = {}
    for dev in ("cuda", "cpu"):
        ok(BIN / "fairseq-tree-induce", "--path", sf, "--treebank", d / "t.mrg", "--out", tmp_path / f"i_{dev}",
           "--no-perplexity", "--device", dev)
        induced[dev] = (tmp_path / f"i_{dev}" / "trees.txt").read_text().splitlines()
    assert len(induced["cuda"]) == 30 and induced["cuda"] == induced["cpu"]

    clf = train_cuda(tiny["classifier"][1], tmp_path / "clf", precision, "--task", "tree_classification", "--arch",
                     "tree_classifier_tiny", "--max-tokens", "2048", "--valid-subset", "train")
    labels = {dev: ok(BIN / "fairseq-tree-classify", "--path", clf, "--input", d / "sst.txt", "--device", dev)
              .stdout.splitlines()[:-1] for dev in ("cuda", "cpu")}
    assert len(labels["cuda"]) == 60 and labels["cuda"] == labels["cpu"]
