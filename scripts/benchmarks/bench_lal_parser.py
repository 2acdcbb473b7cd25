#!/usr/bin/env python
"""Benchmark the LAL parser on CPU: training and parsing sentences/s, peak memory, span-chart size; and
stanza's constituency parser on the same sentences.

    python scripts/benchmarks/bench_lal_parser.py [--quick] [--arch lal_parser_small] [--stanza-model-dir DIR] \\
        [--shared DIR]

Training: ``--train-sents`` sentences of ptb_sample/train (binarized into a temp dir), batches of
``--batch-size`` sentences, forward + span hinge / dependency loss (cost-augmented CKY) + backward + Adam.
Parsing: ptb_sample/valid (gold words and tags), CKY + Eisner, batches of 64. The model is untrained: speed
does not depend on the weights (the charts are the same size whatever the scores).
Stanza: ``--stanza-model-dir DIR`` (models from scripts/recipes/train_stanza_parser.sh), otherwise without ``--quick``
a tiny stanza model is trained once into ``work/bench_stanza_tiny`` (~30 s); with ``--quick`` and no models
stanza is skipped (``stanza_parse_sents_per_s=skipped``). Stanza gets the gold words and tags its own POS.
The last line is ``key=value`` pairs.

``--pretrained``: the same two timings for the parser with ``--pretrained-encoder`` set to a randomly initialised
BERT-base-sized encoder (hidden 768, 12 layers, 12 heads, d_ff 3072; WordPiece vocabulary = the benchmark's
words, built offline and saved to the temp dir; first-subword pooling, fine-tuned), on ``--pretrained-sents``
training and parsing sentences, beside today's parser (keys ``pretrained_*``). These are speed numbers of a random
encoder, never parsing results: no pretrained weights can be downloaded on these machines. Needs transformers.
"""

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="under a minute: fewer sentences, tiny model")
    p.add_argument("--arch", default=None, help="lal_parser architecture (default: small; tiny with --quick)")
    p.add_argument("--shared", default=str(REPO.parent / "shared"))
    p.add_argument("--train-sents", type=int, default=None)
    p.add_argument("--parse-sents", type=int, default=None)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--stanza-model-dir", default=None)
    p.add_argument("--pretrained", action="store_true", help="also time a BERT-base-sized random pretrained encoder")
    p.add_argument("--pretrained-sents", type=int, default=64, help="training and parsing sentences for it")
    args = p.parse_args()
    import torch

    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
    import fairseq_tree  # noqa: F401
    from fairseq_tree.data.parsing_data import binarize, get_parser
    from fairseq_tree.models import lal_parser as lp
    from fairseq_tree.tasks.constituency_parsing import ConstituencyParsingConfig, ConstituencyParsingTask
    from fairseq_tree.trees import read_parse_trees

    arch = args.arch or ("lal_parser_tiny" if args.quick else "lal_parser_small")
    n_train = args.train_sents or (96 if args.quick else 640)
    n_parse = args.parse_sents or (128 if args.quick else 273)
    ptb = Path(args.shared) / "data" / "ptb_sample"
    tmp = Path(tempfile.mkdtemp(prefix="bench_parser_"))
    lines = (ptb / "train.mrg").read_text(encoding="utf-8").splitlines()[:n_train]
    (tmp / "train.mrg").write_text("\n".join(lines) + "\n", encoding="utf-8")
    binarize(get_parser().parse_args(["--destdir", str(tmp / "bin"), "--train", str(tmp / "train.mrg"),
                                      "--valid", str(ptb / "valid.mrg")]))
    task = ConstituencyParsingTask.setup_task(ConstituencyParsingConfig(data=str(tmp / "bin")))
    task.load_dataset("train")
    ns = argparse.Namespace()
    getattr(lp, arch)(ns)
    torch.manual_seed(0)
    model = lp.LALParserModel(ns, task.dicts, task.num_labels, task.num_relations)
    ds = task.datasets["train"]
    train_s = time_training(model, task, range(len(ds)), args.batch_size)
    train_rss = peak_rss_mb()

    trees = sorted(list(read_parse_trees(str(ptb / "valid.mrg")))[:n_parse], key=len)  # as LALParser batches
    sents, tags = [t.words for t in trees], [t.tags for t in trees]
    parse_s = time_parsing(model, task, sents, tags)
    n_max = max(len(s) for s in sents)
    H, dproj = model.lal_heads, ns.lal_d_proj
    hidden = ns.lal_tied_hidden * H if ns.lal_tie_heads else ns.label_hidden
    kv = {"arch": arch, "labels": task.num_labels, "lal_heads": H, "params": sum(x.numel() for x in model.parameters()),
          "train_sents": len(ds), "train_sents_per_s": round(len(ds) / train_s, 1),
          "parse_sents": len(sents), "parse_sents_per_s": round(len(sents) / parse_s, 1),
          "peak_rss_mb_train": round(train_rss, 1), "peak_rss_mb": round(peak_rss_mb(), 1),
          # the span chart held per sentence of the longest length (floats) vs the naive [n+1, n+1, H*d_proj]
          "span_chart_floats": (n_max + 1) ** 2 * hidden, "naive_span_chart_floats": (n_max + 1) ** 2 * H * dproj}

    if args.pretrained:
        kv.update(bench_pretrained(task, arch, tmp, sents, tags, args.pretrained_sents, args.batch_size))

    stanza_dir = args.stanza_model_dir
    cache = REPO / "work" / "bench_stanza_tiny"
    if stanza_dir is None and (cache / "constituency.pt").is_file():
        stanza_dir = str(cache)
    if stanza_dir is None and not args.quick:
        print(f"training a tiny stanza model into {cache} (once)", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "fairseq_tree.stanza_train", str(tmp / "train.mrg"),
                        str(cache), "--size", "tiny"], cwd=str(REPO), check=True)
        stanza_dir = str(cache)
    if stanza_dir is None:
        print("stanza skipped: --quick without --stanza-model-dir (and no cached work/bench_stanza_tiny); "
              "run without --quick to train a tiny stanza model once", file=sys.stderr)
        kv["stanza_parse_sents_per_s"] = "skipped"
    else:
        from fairseq_tree.parsers.stanza_parser import StanzaParser

        sp = StanzaParser(model_dir=stanza_dir, num_threads=1)
        sp.parse(sents[:4])  # warm-up
        t0 = time.perf_counter()
        sp.parse(sents)
        kv["stanza_parse_sents_per_s"] = round(len(sents) / (time.perf_counter() - t0), 1)
        kv["stanza_models"] = stanza_dir
    print(" ".join(f"{k}={v}" for k, v in kv.items()))


def time_training(model, task, indices, batch_size) -> float:
    """Seconds to train once over the train split's sentences ``indices`` (forward, span hinge loss with
    cost-augmented CKY, backward, Adam), in length-sorted batches of ``batch_size``."""
    import torch

    from fairseq_tree.criterions.span_hinge_dependency import SpanHingeDependencyCriterion
    from fairseq_tree.inference.batching import length_batches

    crit = SpanHingeDependencyCriterion(task, dependency_weight=0.0)
    opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-4)
    ds = task.datasets["train"]
    indices = list(indices)
    batches = length_batches([int(ds.sizes[i]) for i in indices], batch_size)
    model.train()
    t0 = time.perf_counter()
    for b in batches:
        sample = ds.collater([ds[indices[i]] for i in b])
        loss, _, _ = crit(model, sample)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return time.perf_counter() - t0


def time_parsing(model, task, sents, tags) -> float:
    """Seconds to parse ``sents`` (CKY + Eisner) in batches of 64."""
    import torch

    model.eval()
    t0 = time.perf_counter()
    with torch.no_grad():
        for i in range(0, len(sents), 64):
            batch = task.build_batch(sents[i:i + 64], tags[i:i + 64])
            model.parse(batch["net_input"])
    return time.perf_counter() - t0


def bench_pretrained(task, arch, tmp, sents, tags, n, batch_size) -> dict:
    """Today's parser and the same parser over a random BERT-base-sized encoder, on the same ``n`` training and
    ``n`` parsing sentences: sentences/s (speed only: the encoder is random, not BERT)."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizer  # optional: the [pretrained] extra

    from fairseq_tree.models import lal_parser as lp

    words = {w for s in task.datasets["train"].text for w in s} | {w for s in sents for w in s}
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + sorted(words)
    enc_dir = tmp / "bert_base_random"
    torch.manual_seed(0)
    BertTokenizer(vocab={w: i for i, w in enumerate(vocab)}, do_lower_case=False).save_pretrained(str(enc_dir))
    BertModel(BertConfig(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072,
                         vocab_size=len(vocab))).save_pretrained(str(enc_dir))
    step = max(1, len(sents) // n)  # every step-th of the length-sorted parsing sentences: all lengths
    sents, tags = sents[::step][:n], tags[::step][:n]
    out = {"pretrained_encoder": "random_bert_base_size_speed_only", "pretrained_sents": n}
    for key, extra in (("baseline", {}), ("pretrained", {"pretrained_encoder": str(enc_dir)})):
        ns = argparse.Namespace(arch=arch, **extra)
        getattr(lp, arch)(ns)
        torch.manual_seed(0)
        model = task.build_model(ns)
        train_s = time_training(model, task, range(min(n, len(task.datasets["train"]))), batch_size)
        parse_s = time_parsing(model, task, sents[:n], tags[:n])
        out[f"{key}_train_sents_per_s"] = round(min(n, len(task.datasets["train"])) / train_s, 2)
        out[f"{key}_parse_sents_per_s"] = round(len(sents[:n]) / parse_s, 2)
        task.subwords = None  # the next model builds its own
        task.datasets["train"].subwords = None
    return out


if __name__ == "__main__":
    main()
