"""Nguyen et al. (2020) Table 4 for a tree2seq checkpoint: how much of the decoder's cross-attention mass goes to
source nodes (phrases) vs leaves (tokens), teacher-forced over a data split.

    fairseq-tree-attention-share DATA_BIN CKPT [--subset test] [--max-tokens 4096]

Prints, per decoder layer and averaged over layers, "Target->Nodes" (% of the attention mass of every target
position, heads averaged, on the source's nodes) and the paper's "Leaves/Nodes" row (% of the source positions
that are leaves / nodes). The last line is one JSON object. The encoder-side analysis of the tree classifier is
``fairseq-tree-classify --attention-share``.
"""

import argparse
import json
import os
import sys

from fairseq_tree.inference.checkpoint import load_checkpoint
from fairseq_tree.utils.help_text import ArgumentParser

os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch


@torch.no_grad()
def attention_share(model, task, subset: str, max_tokens: int) -> dict:
    """-> {"leaves_pct", "nodes_pct", "target_to_nodes_pct": [per layer], "target_to_nodes_overall"}."""
    task.load_dataset(subset)
    itr = task.get_batch_iterator(task.dataset(subset), max_tokens=max_tokens, ignore_invalid_inputs=False,
                                  seed=1).next_epoch_itr(shuffle=False)
    layers = len(model.decoder.layers)
    on_nodes, total = torch.zeros(layers, dtype=torch.float64), torch.zeros(layers, dtype=torch.float64)
    leaves = nodes = 0
    pad = task.target_dictionary.pad()
    for batch in itr:
        net = batch["net_input"]
        m = net["src_nodes"].shape[1]  # cross-attention keys are [nodes; leaves]
        leaves += int(net["src_tokens"].ne(task.source_dictionary.pad()).sum())
        nodes += int(net["src_nodes"].ne(task.label_dictionary.pad()).sum())
        real = batch["target"].ne(pad).double()  # [B, T]
        for layer in range(layers):
            _, extra = model(**net, alignment_layer=layer)
            attn = extra["attn"][0].double()  # [B, T, M + N], heads averaged
            on_nodes[layer] += (attn[:, :, :m].sum(-1) * real).sum()
            total[layer] += (attn.sum(-1) * real).sum()
    share = (100 * on_nodes / total).tolist()
    return {"leaves_pct": round(100 * leaves / (leaves + nodes), 2),
            "nodes_pct": round(100 * nodes / (leaves + nodes), 2),
            "target_to_nodes_pct": [round(s, 2) for s in share],
            "target_to_nodes_overall": round(100 * float(on_nodes.sum() / total.sum()), 2)}


def main(argv=None):
    p = ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("data")
    p.add_argument("path", metavar="CKPT")
    p.add_argument("--subset", default="test")
    p.add_argument("--max-tokens", type=int, default=4096)
    a = p.parse_args(argv)

    models, _, task = load_checkpoint(a.path, a.data)
    model = models[0]
    r = attention_share(model, task, a.subset, a.max_tokens)
    print(f"Leaves/Nodes (% of source positions): {r['leaves_pct']} / {r['nodes_pct']}")
    for k, s in enumerate(r["target_to_nodes_pct"], 1):
        print(f"decoder layer {k}: Target->Nodes {s:.2f}%")
    print(f"overall: Target->Nodes {r['target_to_nodes_overall']:.2f}%")
    print(json.dumps(r))


def cli_main() -> None:
    rc = main(sys.argv[1:])
    sys.exit(rc if isinstance(rc, int) else 0)


if __name__ == "__main__":
    cli_main()
