"""A positions-matched control for tree2seq: a plain translation data-bin whose source holds, per sentence,
the n leaves of a tree data-bin followed by its m node labels (post-order, as tokens ``<NP>``, ``<X>``, ...).

    fairseq-tree-positions-matched TREE_DATA_BIN OUT_DATA_BIN

fairseq's transformer trained on OUT (the task below) attends over as many encoder positions as tree2seq
does on TREE_DATA_BIN (n + m), and sees the same labels, but without the tree: no accumulation of subtrees, no
subtree mask, no hierarchical embeddings; the appended tokens get ordinary positions n .. n + m - 1. Built from
the data-bin of trivial trees (labels ``X``, POS on split words) it is close to n + m dummy tokens; from a
parser's data-bin it is the source followed by its labels in post-order (a bracket-free linearisation).

Train it with ``--task positions_matched_translation`` (batches by the leaves, as ``--tree-batch-by leaves``;
``--pm-batch-by positions`` counts all n + m), which reads the ``{split}.SRC-TGT.SRC.leaves.npy`` written here.
The dictionaries are TREE_DATA_BIN's joint one with the label tokens appended (earlier indices unchanged, so the
target files are copied as they are); every split and both sides are written, with ``positions_matched.json``
(provenance and counts) last. OUT is written beside itself and renamed into place: never half-written.
"""

import argparse
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import torch

from fairseq_tree.tasks.positions_matched_translation import LEAF_SIZES
from fairseq_tree.utils.help_text import ArgumentParser


def splits_and_langs(src_dir: Path):
    """-> [(split, src, tgt)] of the tree data-bin's ``{split}.{src}-{tgt}.{src}.nodes.bin`` files."""
    out = []
    for f in sorted(src_dir.glob("*.nodes.bin")):
        split, pair, lang = f.name[: -len(".nodes.bin")].split(".")
        src, tgt = pair.split("-")
        if lang != src:
            raise SystemExit(f"{f}: a tree side named {lang}, not the pair's source {src}")
        out.append((split, src, tgt))
    if not out:
        raise SystemExit(f"{src_dir}: no *.nodes.bin (not a fairseq-tree-preprocess data-bin)")
    return out


def label_token(label: str) -> str:
    return f"<{label}>"


def convert(src_dir: Path, out: Path) -> dict:
    """Write OUT from TREE_DATA_BIN (see the module docstring); -> the counts written to positions_matched.json."""
    from fairseq.data import Dictionary, indexed_dataset

    items = splits_and_langs(src_dir)
    src, tgt = items[0][1], items[0][2]
    vocab = Dictionary.load(str(src_dir / f"dict.{src}.txt"))
    if (src_dir / f"dict.{tgt}.txt").read_bytes() != (src_dir / f"dict.{src}.txt").read_bytes():
        raise SystemExit(f"{src_dir}: dict.{src}.txt and dict.{tgt}.txt differ (needs a --joined-dictionary "
                         "data-bin: the labels are added to one dictionary that both sides share)")
    labels = Dictionary.load(str(src_dir / f"dict.{src}.labels.txt"))
    n_before = len(vocab)
    # label id -> token id; a label unseen in training is <unk> in both; <s>, <pad>, </s> are never node labels
    remap = torch.full((len(labels),), vocab.unk(), dtype=torch.long)
    for i in range(labels.nspecial, len(labels)):
        remap[i] = vocab.add_symbol(label_token(labels[i]))
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for lang in (src, tgt):
        vocab.save(str(tmp / f"dict.{lang}.txt"))
    counts = {}
    for split, s, t in items:
        prefix = f"{split}.{s}-{t}"
        leaves = indexed_dataset.make_dataset(str(src_dir / f"{prefix}.{s}"), impl="mmap")
        nodes = indexed_dataset.make_dataset(str(src_dir / f"{prefix}.{s}.nodes"), impl="mmap")
        if leaves is None or nodes is None or len(leaves) != len(nodes):
            raise SystemExit(f"{src_dir}/{prefix}: leaves and nodes missing or of different lengths")
        builder = indexed_dataset.make_builder(str(tmp / f"{prefix}.{s}.bin"), impl="mmap", vocab_size=len(vocab))
        for i in range(len(leaves)):
            leaf, node = leaves[i].long(), nodes[i].long()
            if len(node) and (node.min() < labels.unk() or node.max() >= len(labels)):
                raise SystemExit(f"{src_dir}/{prefix}.{s}.nodes: sentence {i} has a label id outside "
                                 f"dict.{s}.labels.txt")
            builder.add_item(torch.cat([leaf, remap[node]]))
        builder.finalize(str(tmp / f"{prefix}.{s}.idx"))
        # the leaves of each source, for positions_matched_translation's batching by the words
        np.save(tmp / LEAF_SIZES.format(split=split, src=s, tgt=t), np.asarray(leaves.sizes, dtype=np.int64))
        for ext in ("bin", "idx"):
            shutil.copyfile(src_dir / f"{prefix}.{t}.{ext}", tmp / f"{prefix}.{t}.{ext}")
        counts[split] = dict(sentences=len(leaves), leaves=int(leaves.sizes.sum()), nodes=int(nodes.sizes.sum()))
    info = dict(tree_data_bin=str(src_dir.resolve()), label_tokens=len(vocab) - n_before, splits=counts)
    (tmp / "positions_matched.json").write_text(json.dumps(info, indent=1) + "\n", encoding="utf-8")
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    return info


def main(argv=None):
    ap = ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("tree_data_bin", type=Path)
    ap.add_argument("out", type=Path)
    args = ap.parse_args(argv)
    info = convert(args.tree_data_bin, args.out)
    for split, c in info["splits"].items():
        print(f"{args.out}: {split}: {c['sentences']} sentences, {c['leaves']} leaves + {c['nodes']} label tokens "
              f"({c['nodes'] / max(c['leaves'], 1):.2f} per leaf)", file=sys.stderr)


def cli_main() -> None:
    rc = main(sys.argv[1:])
    sys.exit(rc if isinstance(rc, int) else 0)


if __name__ == "__main__":
    cli_main()
