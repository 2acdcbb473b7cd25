"""The train step that ``bench_tree2seq.py`` and its probes (``tree2seq_probes.py``) measure: a data-bin of
dictionaries, tree2seq and fairseq's transformer of one arch's sizes, batches of PTB or random trees with their
positions-matched twin, and one forward / loss / backward / Adam step of either model."""

import functools
import time
from pathlib import Path
from typing import Optional

import torch
from alternate import alternate, train_step

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
