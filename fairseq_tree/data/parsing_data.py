"""Treebank reading and binarization for ``--task constituency_parsing`` (the LAL parser).

Trees are read in the EVALB view (:func:`fairseq_tree.trees.read_parse_trees`: :class:`~fairseq_tree.trees.Tree`
objects whose ``labeled_spans(one_word=True)`` keep one-word constituents, unary chains joined ``S+VP``).

Binarizer::

    fairseq-tree-parsing-data --destdir data-bin/ptb \\
        --train train.mrg --train-dep train.conllu --valid wsj22.mrg --valid-dep wsj22.sd.conll

writes into ``--destdir`` (MMap indexed datasets; read with ``data_utils.load_indexed_dataset(prefix, None)``):

==========================  ===========================================================================
``{split}.words``           word ids [n] (``dict.words.txt``; no BOS/EOS)
``{split}.tags``            POS tag ids [n] (``dict.tags.txt``)
``{split}.chars``           character ids of every word, each word followed by the char dict's EOS id
``{split}.spans``           flattened ``start, end, label_id`` triples, half-open, post-order (``dict.labels.txt``)
``{split}.text.jsonl``      the words as strings, one JSON list per sentence (a pretrained encoder's tokenizer
                            reads them: ids cannot give back unknown words)
``{split}.heads``           (with ``--{split}-dep``) head of each word, 1-based, 0 = root [n]
``{split}.rels``            (with ``--{split}-dep``) relation ids [n] (``dict.rels.txt``)
``dict.{words,tags,chars,labels,rels}.txt``  fairseq dictionaries (4 specials each)
``parsing.json``            the command, per split counts, vocabulary sizes
==========================  ===========================================================================

Words and characters are counted on the training split only; tags, span labels and relations on every
split given (closed sets), so no label seen at evaluation is unknown. Nothing is a built-in constant.
"""

import argparse
import json
import os
import sys
from typing import List

from fairseq_tree.trees import Tree, plain_word, read_conllu, read_parse_trees
from fairseq_tree.utils.help_text import ArgumentParser


def attach_dependencies(trees: List[Tree], dep_path: str, tree_path: str) -> None:
    deps = list(read_conllu(dep_path))
    if len(deps) != len(trees):
        raise ValueError(f"{dep_path}: {len(deps)} sentences, {tree_path}: {len(trees)} trees")
    for k, (t, d) in enumerate(zip(trees, deps), 1):
        # PTB .mrg escapes '/' and '*' (``WCRS\\/Boston``); dependency conversions often do not
        dw = [plain_word(w) for w in d.words]
        if dw != [plain_word(w) for w in t.words]:
            raise ValueError(f"{dep_path}: sentence {k}: words differ from tree {k} of {tree_path}: "
                             f"{' '.join(dw[:8])} ... vs {' '.join(t.words[:8])} ...")
        t.heads, t.relations = list(d.heads), list(d.relations)


def word_chars(word: str) -> List[str]:
    return list(word)


# --------------------------------------------------------------------------------------------------
# binarizer CLI
# --------------------------------------------------------------------------------------------------

SPLITS = ("train", "valid", "test")


def get_parser():
    p = ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    for s in SPLITS:
        p.add_argument(f"--{s}", metavar="MRG", help=f"{s} treebank (.mrg brackets)")
        p.add_argument(f"--{s}-dep", metavar="CONLL", help=f"aligned dependencies for --{s} (CoNLL-U / CoNLL-X)")
    p.add_argument("--destdir", required=True)
    p.add_argument("--word-threshold", type=int, default=1, help="keep training words seen at least N times")
    return p


def _write(prefix: str, rows: List[List[int]], vocab_size: int) -> None:
    import torch
    from fairseq.data import indexed_dataset

    b = indexed_dataset.make_builder(prefix + ".bin", impl="mmap", vocab_size=vocab_size)
    for r in rows:
        b.add_item(torch.tensor(r, dtype=torch.int64))
    b.finalize(prefix + ".idx")


def binarize(args) -> dict:
    from fairseq.data import Dictionary

    if not args.train:
        raise SystemExit("--train is required")
    os.makedirs(args.destdir, exist_ok=True)
    data = {}
    for s in SPLITS:
        path = getattr(args, s)
        if not path:
            continue
        trees = list(read_parse_trees(path))
        dep = getattr(args, f"{s}_dep")
        if dep:
            attach_dependencies(trees, dep, path)
        data[s] = trees
    with_dep = {s: getattr(args, f"{s}_dep") is not None for s in data}
    if len(set(with_dep.values())) > 1:
        raise SystemExit("give dependencies for every split or for none")
    d = {k: Dictionary() for k in ("words", "tags", "chars", "labels", "rels")}
    for t in data["train"]:
        for w in t.words:
            d["words"].add_symbol(w)
            for c in word_chars(w):
                d["chars"].add_symbol(c)
    for trees in data.values():
        for t in trees:
            for x in t.tags:
                d["tags"].add_symbol(x)
            for _, _, lab in t.labeled_spans(one_word=True):
                d["labels"].add_symbol(lab)
            for r in t.relations or []:
                d["rels"].add_symbol(r)
    # padding_factor=1: no "madeupword" fillers, which would become phantom labels and label heads
    d["words"].finalize(threshold=args.word_threshold, padding_factor=1)
    for k in ("tags", "chars", "labels", "rels"):
        d[k].finalize(padding_factor=1)
    for k, dic in d.items():
        dic.save(os.path.join(args.destdir, f"dict.{k}.txt"))
    report = {"command": " ".join(sys.argv), "dependencies": any(with_dep.values()), "splits": {},
              "vocab": {k: len(v) - v.nspecial for k, v in d.items()}}
    for s, trees in data.items():
        prefix = os.path.join(args.destdir, s)
        words = [[d["words"].index(w) for w in t.words] for t in trees]
        _write(prefix + ".words", words, len(d["words"]))
        with open(prefix + ".text.jsonl", "w", encoding="utf-8") as f:
            f.writelines(json.dumps(t.words, ensure_ascii=False) + "\n" for t in trees)
        _write(prefix + ".tags", [[d["tags"].index(x) for x in t.tags] for t in trees], len(d["tags"]))
        eos = d["chars"].eos()
        _write(prefix + ".chars", [[i for w in t.words for i in [d["chars"].index(c) for c in word_chars(w)] + [eos]]
                                   for t in trees], len(d["chars"]))
        _write(prefix + ".spans", [[x for a, b, lab in t.labeled_spans(one_word=True)
                                    for x in (a, b, d["labels"].index(lab))]
                                   for t in trees], max(len(d["labels"]), max(len(t) for t in trees) + 1))
        if with_dep[s]:
            _write(prefix + ".heads", [t.heads for t in trees], max(len(t) for t in trees) + 1)
            _write(prefix + ".rels", [[d["rels"].index(r) for r in t.relations] for t in trees], len(d["rels"]))
        report["splits"][s] = {"path": getattr(args, s), "sentences": len(trees),
                               "words": sum(len(t) for t in trees),
                               "spans": sum(len(t.labeled_spans(one_word=True)) for t in trees),
                               "unknown_words": sum(x == d["words"].unk() for r in words for x in r)}
    with open(os.path.join(args.destdir, "parsing.json"), "w", encoding="utf-8") as f:
        json.dump(report, f, indent=1)
    return report


def main(argv=None):
    args = get_parser().parse_args(argv)
    report = binarize(args)
    print(json.dumps({k: report[k] for k in ("splits", "vocab")}))


if __name__ == "__main__":
    main()
