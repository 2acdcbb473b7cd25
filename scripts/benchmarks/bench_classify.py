#!/usr/bin/env python
"""Tree classifier vs fairseq's TransformerEncoder classifier of the same size, on the same SST batches, in one run.

    python scripts/benchmarks/bench_classify.py DATA_BIN [--arch-size tiny] [--steps 60] [--device cpu|cuda] \\
        [--repeats 3]

DATA_BIN: a ``fairseq-tree-preprocess --task classification`` directory (e.g. ``work/sst/data-bin/sst5`` of
``scripts/recipes/train_sst.sh``). Training: train steps (forward + the task's loss + backward + Adam step) over the
train split's batches of ``--max-tokens`` (leaves + nodes for the tree model; the baseline batches the same
sentences); inference: every valid sentence, no grad. Sentences/s, median of ``--repeats``; ratios are
tree / transformer. The last line is ``key=value`` pairs.
"""

import argparse
import os
import statistics
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch

REPO = Path(__file__).resolve().parents[2]


def build(data: str, arch: str, device: str, extra=()):
    from fairseq import options, tasks
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    argv = [data, "--user-dir", str(REPO / "fairseq_tree"), "--task", "tree_classification", "--arch", arch,
            "--optimizer", "adam", "--lr", "7e-4", "--dropout", "0.5", *extra]
    cfg = convert_namespace_to_omegaconf(options.parse_args_and_arch(options.get_training_parser(), argv))
    task = tasks.setup_task(cfg.task)
    for split in ("train", "valid"):
        task.load_dataset(split)
    torch.manual_seed(0)
    model = task.build_model(cfg.model).to(device)
    return task, model, task.build_criterion(cfg.criterion)


def batches(task, split: str, max_tokens: int, limit=None):
    itr = task.get_batch_iterator(task.datasets[split], max_tokens=max_tokens, seed=1, ignore_invalid_inputs=False)
    out = []
    for b in itr.next_epoch_itr(shuffle=(split == "train")):
        out.append(b)
        if limit and len(out) >= limit:
            break
    return out


def to(batch, device):
    from fairseq import utils

    return utils.move_to_cuda(batch) if device == "cuda" else batch


def sync(device):
    if device == "cuda":
        torch.cuda.synchronize()


def train_rate(task, model, criterion, data, device) -> float:
    """Sentences/s of train steps over the batches ``data``."""
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=7e-4)
    loss, _, _ = criterion(model, to(data[0], device))  # warm-up step, not timed
    loss.backward()
    sync(device)
    t, n = time.perf_counter(), 0
    for b in data:
        opt.zero_grad()
        loss, _, _ = criterion(model, to(b, device))
        loss.backward()
        opt.step()
        n += b["nsentences"]
    sync(device)
    return n / (time.perf_counter() - t)


@torch.no_grad()
def infer_rate(model, data, device) -> float:
    model.eval()
    sync(device)
    t, n = time.perf_counter(), 0
    for b in data:
        model(**to(b, device)["net_input"])
        n += b["nsentences"]
    sync(device)
    return n / (time.perf_counter() - t)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("data")
    p.add_argument("--arch-size", default="tiny", help="archs tree_classifier_SIZE / transformer_classifier_SIZE")
    p.add_argument("--steps", type=int, default=60, help="train steps per measurement")
    p.add_argument("--max-tokens", type=int, default=2048)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--device", default="cpu")
    a = p.parse_args()
    models = {"tree": build(a.data, f"tree_classifier_{a.arch_size}", a.device),
              "transformer": build(a.data, f"transformer_classifier_{a.arch_size}", a.device, ["--root-only"])}
    rates = {}
    for name, (task, model, criterion) in models.items():
        train = batches(task, "train", a.max_tokens, a.steps)
        valid = batches(task, "valid", a.max_tokens)
        tr = [train_rate(task, model, criterion, train, a.device) for _ in range(a.repeats)]
        inf = [infer_rate(model, valid, a.device) for _ in range(a.repeats)]
        rates[name] = (statistics.median(tr), statistics.median(inf))
        params = sum(p.numel() for p in model.parameters())
        print(f"{name:12s} params {params:>9,d}  train {rates[name][0]:8.1f} sentences/s  "
              f"inference {rates[name][1]:8.1f} sentences/s")
    (t_tr, t_inf), (b_tr, b_inf) = rates["tree"], rates["transformer"]
    print(f"train_sentences_per_s_tree={t_tr:.1f} train_sentences_per_s_transformer={b_tr:.1f} "
          f"infer_sentences_per_s_tree={t_inf:.1f} infer_sentences_per_s_transformer={b_inf:.1f} "
          f"train_time_ratio={b_tr / t_tr:.3f} infer_time_ratio={b_inf / t_inf:.3f}")


if __name__ == "__main__":
    main()
