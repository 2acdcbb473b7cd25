"""The SST results table of ``scripts/recipes/train_sst.sh``: dev accuracy (mean ± sd over seeds) of every run done
so far, beside the paper's numbers (Nguyen et al. 2020, Tables 2 and 3: test accuracy, tiny models).

    fairseq-tree-report sst WORK  > WORK/results.md
"""

import json
import statistics
import sys
from pathlib import Path

from fairseq_tree.utils.help_text import ArgumentParser

#: (run directory, description, paper SST-5, paper SST-2); the phrase-accuracy column is left empty for models
#: trained on sentence labels only (their phrase outputs were never trained)
ROWS = [
    ("tree", "`tree_classifier_tiny`, every label", 47.4, 84.3),
    ("tree_nohier", "  -HierEmb (`--no-hierarchical-embeddings`)", 46.1, None),
    ("tree_nosubmask", "  -SubMask (`--no-subtree-mask`)", 45.7, None),
    ("tree_nohier_nosubmask", "  -HierEmb -SubMask", 45.0, None),
    ("transformer", "`transformer_classifier_tiny`, sentences", 37.6, 74.8),
    ("transformer_phrases", "`transformer_classifier_tiny`, every phrase a sample (Tai et al.)", None, None),
    # diagnostics (not in the paper)
    ("tree_rootonly", "`tree_classifier_tiny`, sentence label only (`--root-only`)", None, None),
    ("tree_warmup2k", "`tree_classifier_tiny`, 2,000 warmup updates", None, None),
    ("tree_nosubmask_warmup2k", "  -SubMask, 2,000 warmup updates", None, None),
]


def cell(work: Path, task: str, run: str, key: str = "accuracy") -> str:
    scores = [json.loads(p.read_text(encoding="utf-8")).get(key)
              for p in sorted((work / task / run).glob("s*/dev.json"))]
    scores = [s for s in scores if s is not None]
    if not scores:
        return "—"
    if len(scores) == 1:
        return f"{scores[0]:.1f} (1 seed)"
    return f"{statistics.mean(scores):.1f} ± {statistics.stdev(scores):.1f} ({len(scores)} seeds)"


SENTENCE_ONLY = {"transformer", "tree_rootonly"}


def main(argv=None) -> None:

    ap = ArgumentParser(prog="fairseq-tree-report sst", description=__doc__.split("\n\n")[0])
    ap.add_argument("work", help="the WORK directory of scripts/recipes/train_sst.sh")
    w = Path(ap.parse_args(argv).work)
    paper = lambda x: "—" if x is None else f"{x:.1f}"  # noqa: E731
    print("| model | SST-5 dev | paper SST-5 (test) | SST-5 dev phrase acc. | SST-2 dev | paper SST-2 (test) |")
    print("|---|---:|---:|---:|---:|---:|")
    for run, desc, p5, p2 in ROWS:
        phrases = "—" if run in SENTENCE_ONLY else cell(w, "sst5", run, "phrase_accuracy")
        print(f"| {desc} | {cell(w, 'sst5', run)} | {paper(p5)} | {phrases} | {cell(w, 'sst2', run)} | {paper(p2)} |")


def cli_main() -> None:
    rc = main(sys.argv[1:])
    sys.exit(rc if isinstance(rc, int) else 0)


if __name__ == "__main__":
    cli_main()
