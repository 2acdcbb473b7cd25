"""The authors' StructFormer code (google-research ``structformer/``) on this project's data: the smallest data
adapter, and their trained model's parses written for ``fairseq-tree-score``. Reference runs only: their code is
read from a local copy (``--ref``, the folder that holds ``structformer/``) and never imported by fairseq_tree.

  prepare  --corpus-dir WORK/CORPUS --ref REF --out OUT [--batch-size 820]
      OUT/data/{train,valid,test}.txt: the recipe's own text (text/train.txt; valid and test = text/valid.txt),
      OUT/data/dict.pkl: their ``Dictionary`` holding our data-bin's words in its order after their three specials
      (<unk> 0, <pad> 1, <mask> 2), so their ``Corpus`` loads it instead of building one;
      OUT/shim/wget.py: a ``wget`` that refuses to download (their data_penn imports it; the files exist);
      OUT/nltk_data/corpora/ptb/: an empty NLTK PTB (their main.py reads WSJ trees at start for a grammar test it
      does not run unless --test_grammar); prints the batches per epoch their ``batchify`` makes.
  train    --ref REF --py-seed N [--last PATH] -- THEIR_MAIN_ARGS
      their main.py (``python -m structformer.main``) with Python's ``random`` seeded first: their utils.batchify
      shuffles the batches with it, and their main.py seeds numpy and torch only, so two runs of one --seed
      differ in batch order (and reach different numbers: wsj22 UAS 31.2 and 20.9 at 1,071 updates).
      --last PATH: the model after each epoch, in their own file format, kept at PATH. Their --save file is the
      lowest validation loss so far, not the model after the epochs trained: a stage scored or resumed from it
      is behind its update count once the loss stalls (runs before 2026-11-29 were; docs/results-log.md).
  parse    --ref REF --checkpoint CKPT --treebank X.mrg --dict OUT/data/dict.pkl --out-trees F --out-deps F
      their model on each sentence alone (batch 1, as their test_phrase_grammar): the tree from their
      ``tree_utils.build_tree(distance, words)`` (gap 0), heads by their rule (argmax of the head row, the word of
      the largest height the root), words by the evaluation's rule (fairseq-tree-induction-text's).

Changes to their code: none; their run is seeded where it was not (``train``), and ``--last`` wraps torch's
``ReduceLROnPlateau.step`` to save their model after it (``keep_last``). Their process gets
``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1`` (their main.py unpickles its own [model, criterion, optimizer, scheduler]
file, which torch >= 2.6 refuses by default) from the recipe, and ``parse`` unpickles their checkpoint the same
way: run it on files your own reference run wrote, never on files from elsewhere.
"""

from __future__ import annotations

import argparse
import os
import pickle
import sys
from pathlib import Path

SPECIALS = ("<s>", "<pad>", "</s>", "<unk>")  # fairseq's; their own specials are <unk>, <pad>, <mask>


def _their(ref: str, module: str):
    """Import ``structformer.<module>`` from the local copy ``ref``."""
    if not (Path(ref) / "structformer" / "structformer.py").is_file():
        raise SystemExit(f"--ref {ref}: no structformer/structformer.py there (a google-research checkout or a "
                         "folder holding its structformer/ folder)")
    sys.path.insert(0, str(Path(ref).resolve()))
    import importlib
    return importlib.import_module(f"structformer.{module}")


def fairseq_words(dict_txt: Path):
    """fairseq dict.txt -> its words in order (``madeupword`` fillers dropped)."""
    words = []
    with open(dict_txt, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            parts = line.rstrip("\n").split(" ")
            if len(parts) < 2:
                raise SystemExit(f"{dict_txt}:{n}: not a fairseq dictionary line: {line!r}")
            if parts[0] not in SPECIALS and not parts[0].startswith("madeupword"):
                words.append(parts[0])
    return words


def prepare(args) -> None:
    out, corpus = Path(args.out), Path(args.corpus_dir)
    data = out / "data"
    data.mkdir(parents=True, exist_ok=True)
    train, valid = corpus / "text" / "train.txt", corpus / "text" / "valid.txt"
    for src in (train, valid, corpus / "data-bin" / "dict.txt"):
        if not src.is_file():
            raise SystemExit(f"{src}: missing (run scripts/recipes/induction_wsj.sh for this corpus first)")
    for name, src in (("train", train), ("valid", valid), ("test", valid)):
        (data / f"{name}.txt").write_bytes(src.read_bytes())
    shim = out / "shim"
    shim.mkdir(exist_ok=True)
    (shim / "wget.py").write_text('def download(url, out=None, bar=None):\n'
                                  '    raise RuntimeError(f"no download in a reference run: {out} is missing")\n')
    ptb = out / "nltk_data" / "corpora" / "ptb"
    ptb.mkdir(parents=True, exist_ok=True)
    (ptb / "allcats.txt").write_text("")
    sys.path.insert(0, str(shim))
    data_penn = _their(args.ref, "data_penn")
    d = data_penn.Dictionary()
    for w in fairseq_words(corpus / "data-bin" / "dict.txt"):
        d.add_word(w)
    with open(data / "dict.pkl", "wb") as f:
        pickle.dump(d, f)
    lengths = [len(line.split()) for line in train.read_text(encoding="utf-8").splitlines()]
    print(f"words={len(d)} train_sentences={len(lengths)} batches_per_epoch={batches(lengths, args.batch_size)}")


def batches(lengths, batch_size: int) -> int:
    """The number of batches their ``utils.batchify`` makes: sentences sorted by length, a batch closed once its
    word count reaches ``batch_size``."""
    n, total, count = 0, 0, 0
    for L in sorted(lengths):
        total += L
        count += 1
        if total >= batch_size:
            n, total, count = n + 1, 0, 0
    return n + (count > 0)


def keep_last(path: str):
    """Make every ``ReduceLROnPlateau.step`` (their main.py calls it once at each epoch's end, after its best-model
    save) write their own [model, criterion, optimizer, scheduler] list, read from the calling module's globals, to
    ``path`` (through ``path.tmp``): the model after the epoch just trained. Their ``--save`` file holds the lowest
    validation loss of the run instead, which is not the model after the run's updates once the loss stalls.
    Returns a function that undoes the patch."""
    import torch
    from torch.optim.lr_scheduler import ReduceLROnPlateau

    original = ReduceLROnPlateau.step

    def step(self, *a, **k):
        out = original(self, *a, **k)
        g = sys._getframe(1).f_globals
        if g.get("scheduler") is self:  # their loop's scheduler (not one of a library's)
            with open(f"{path}.tmp", "wb") as f:
                torch.save([g["model"], g["criterion"], g["optimizer"], self], f)
            os.replace(f"{path}.tmp", path)
        return out

    ReduceLROnPlateau.step = step
    return lambda: setattr(ReduceLROnPlateau, "step", original)


def train(args) -> None:
    """Their ``structformer.main`` as ``python -m`` runs it from ``--ref``, after ``random.seed(--py-seed)``;
    with ``--last PATH``, the model at each epoch's end is kept there too (``keep_last``)."""
    import random
    import runpy

    ref = Path(args.ref).resolve()
    if not (ref / "structformer" / "main.py").is_file():
        raise SystemExit(f"--ref {args.ref}: no structformer/main.py there")
    random.seed(args.py_seed)
    sys.path.insert(0, str(ref))
    sys.argv = [str(ref / "structformer" / "main.py"), *args.their_args]
    undo = keep_last(args.last) if args.last else None
    try:
        runpy.run_module("structformer.main", run_name="__main__")
    finally:
        if undo:
            undo()


def parse(args) -> None:
    import numpy as np
    import torch

    sys.path.insert(0, str(Path(args.dict).resolve().parent.parent / "shim"))
    tree_utils = _their(args.ref, "tree_utils")
    _their(args.ref, "structformer")  # the classes their pickle names
    with open(args.dict, "rb") as f:
        dictionary = pickle.load(f)
    model = torch.load(args.checkpoint, map_location="cpu", weights_only=False)[0]  # their own file (see above)
    model.eval()
    trees, deps = [], []
    with torch.no_grad():
        for words, raw in sentences(args.treebank):
            if not words:
                trees.append("")
                deps.append("")
                continue
            x = torch.tensor([[dictionary[w] for w in words]])
            _, out = model(x, torch.arange(len(words))[None])
            distance = out["distance"][0].tolist()
            height = out["height"][0].tolist()
            head = out["head"][0].numpy()
            # their tree over word indices, written with the gold's spelling (the scorer compares words)
            t = tree_utils.build_tree(distance, list(range(len(words))), gap=0)
            trees.append(bracket(t if isinstance(t, list) else [t], raw))  # a one-word sentence: (X w)
            top = max(height)
            heads = [int(np.argmax(head[i])) + 1 if height[i] < top else 0 for i in range(len(words))]
            deps.append("\n".join(f"{i + 1}\t{w}\t_\t_\t_\t_\t{h}\t_\t_\t_" for i, (w, h) in
                                  enumerate(zip(raw, heads))))
    Path(args.out_trees).write_text("\n".join(trees) + "\n", encoding="utf-8")
    Path(args.out_deps).write_text("\n\n".join(deps) + "\n\n", encoding="utf-8")
    print(f"sentences={len(trees)} trees={args.out_trees} deps={args.out_deps}")


def sentences(treebank: str):
    """(words by the evaluation's rule, the same words as the gold spells them) for each tree of ``treebank``."""
    from fairseq_tree.data.induction_text import treebank_sentences
    return list(zip(treebank_sentences(treebank), treebank_sentences(treebank, lowercase=False, digits=False)))


def bracket(t, words) -> str:
    """Their nested-list tree over word indices (an index, or a list of subtrees) -> "(X (X a b) c)" with bare
    words ``words[index]``."""
    if not isinstance(t, list):
        return words[t]
    return "(X " + " ".join(bracket(c, words) for c in t) + ")"


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("prepare")
    a.add_argument("--corpus-dir", required=True)
    a.add_argument("--ref", required=True)
    a.add_argument("--out", required=True)
    a.add_argument("--batch-size", type=int, default=820)
    b = sub.add_parser("parse")
    for name in ("--ref", "--checkpoint", "--treebank", "--dict", "--out-trees", "--out-deps"):
        b.add_argument(name, required=True)
    t = sub.add_parser("train", usage="%(prog)s --ref REF --py-seed N [--last PATH] -- THEIR_MAIN_ARGS")
    t.add_argument("--ref", required=True)
    t.add_argument("--py-seed", type=int, required=True)
    t.add_argument("--last", metavar="PATH",
                   help="also keep the model at each epoch's end here (their --save: the best)")
    argv = sys.argv[1:] if argv is None else list(argv)
    cut = argv.index("--") if "--" in argv else len(argv)  # train: what follows "--" is their main.py's
    args = p.parse_args(argv[:cut])
    args.their_args = argv[cut + 1:]
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    {"prepare": prepare, "parse": parse, "train": train}[args.cmd](args)


if __name__ == "__main__":
    main()
