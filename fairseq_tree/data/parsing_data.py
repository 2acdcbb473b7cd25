"""Treebank reading and binarization for ``--task constituency_parsing`` (the LAL parser).

Parsing needs one thing the canonical :class:`fairseq_tree.trees.Tree` drops: a unary chain over a single
word (``(NP (PRP it))``) is a constituent that EVALB scores, so the parser must predict it. The reader
here (:func:`read_parse_trees`) builds on ``trees.parse_brackets``/``_prune_none`` and keeps such spans:
a :class:`ParseTree` has labeled half-open spans of length >= 1, post-order, unary chains joined into one
label (``S+VP``, ``S+NP`` over one word), function tags stripped, ``-NONE-`` removed, the outer
``TOP``/``ROOT``/empty wrapper removed (kept as the root label only when the sentence is a bare
preterminal, so every tree has a labeled whole-sentence span).

Binarizer::

    python -m fairseq_tree.data.parsing_data --destdir data-bin/ptb \\
        --train train.mrg --train-dep train.conllu --valid wsj22.mrg --valid-dep wsj22.sd.conll

writes into ``--destdir`` (MMap indexed datasets; read with ``data_utils.load_indexed_dataset(prefix, None)``):

==========================  ===========================================================================
``{split}.words``           word ids [n] (``dict.words.txt``; no BOS/EOS)
``{split}.tags``            POS tag ids [n] (``dict.tags.txt``)
``{split}.chars``           character ids of every word, each word followed by the char dict's EOS id
``{split}.spans``           flattened ``start, end, label_id`` triples, half-open, post-order (``dict.labels.txt``)
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
from dataclasses import dataclass, field
from typing import Iterator, List, Optional, Sequence, Tuple

from fairseq_tree.trees import (
    ROOT_LABEL, WRAPPER_LABELS, TreeFormatError, _UNESCAPE_WORD, _is_preterminal, _prune_none, escape_word,
    parse_brackets, plain_word, read_conllu, strip_function_tags,
)

LabeledSpan = Tuple[int, int, str]


@dataclass
class ParseTree:
    """words [n], tags [n], spans: (start, end, label) half-open, length >= 1, post-order, root last."""

    words: List[str]
    tags: List[str]
    spans: List[LabeledSpan] = field(default_factory=list)
    heads: Optional[List[int]] = None
    relations: Optional[List[str]] = None

    def __len__(self):
        return len(self.words)


def raw_to_parse_tree(raw: Sequence) -> ParseTree:
    """Raw bracket trees of one sentence (``trees.parse_brackets`` output) -> :class:`ParseTree`."""
    nodes = [t for t in (_prune_none(r) for r in raw) if t is not None]
    if not nodes:
        raise TreeFormatError("tree has no words (only empty elements)")
    top = nodes[0] if len(nodes) == 1 else [ROOT_LABEL] + nodes
    while top[0] in WRAPPER_LABELS and len(top) == 2 and not isinstance(top[1], str) \
            and not _is_preterminal(top[1]):
        top = top[1]
    if _is_preterminal(top):  # a bare one-word sentence: give it a root
        top = [ROOT_LABEL, top]
    words: List[str] = []
    tags: List[str] = []
    spans: List[LabeledSpan] = []

    def visit(node):
        if _is_preterminal(node):
            words.append(_UNESCAPE_WORD.get(node[1], node[1]))
            tags.append(strip_function_tags(node[0]))
            return
        start, before = len(words), len(spans)
        children = node[1:]
        for child in children:
            if isinstance(child, str):
                raise TreeFormatError(f"bare word {child!r} under ({node[0]} ...)")
            visit(child)
        label = strip_function_tags(node[0]) or ROOT_LABEL
        if len(children) == 1 and not _is_preterminal(children[0]) and len(spans) > before:
            s, e, lab = spans[-1]  # unary chain over a phrase: join onto the child's span
            spans[-1] = (s, e, label + "+" + lab)
        else:
            spans.append((start, len(words), label))

    visit(top)
    return ParseTree(words, tags, spans)


def parse_tree_from_brackets(text: str) -> ParseTree:
    return raw_to_parse_tree(parse_brackets(text))


def read_parse_trees(path: str) -> Iterator[ParseTree]:
    """Every top-level bracket of a .mrg file (one- or multi-line) is one sentence."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    try:
        raws = parse_brackets(text)
    except TreeFormatError as e:
        raise e.at(path, None) from None
    for k, raw in enumerate(raws, 1):
        try:
            yield raw_to_parse_tree([raw])
        except TreeFormatError as e:
            raise TreeFormatError(f"tree {k}: {e.message}", path) from None


def to_brackets(words: Sequence[str], tags: Sequence[str], spans: Sequence[LabeledSpan]) -> str:
    """One-line PTB brackets with POS preterminals; joined labels ``S+VP`` become unary chains again; words are
    escaped as the treebank writes them (``trees.escape_word``: ``{`` -> ``-LCB-``), so
    :func:`parse_tree_from_brackets` reads back the same tree."""
    n = len(words)
    opens: List[List[str]] = [[] for _ in range(n)]
    closes = [0] * n
    for s, e, label in sorted(spans, key=lambda x: (x[0], -x[1])):
        for part in label.split("+"):
            opens[s].append(part)
            closes[e - 1] += 1
    out = []
    for j in range(n):
        for label in opens[j]:
            out.append("(" + label + " ")
        out.append(f"({tags[j] or 'X'} {escape_word(words[j])})")
        out.append(")" * closes[j])
        if j + 1 < n:
            out.append(" ")
    return "".join(out)


def attach_dependencies(trees: List[ParseTree], dep_path: str, tree_path: str) -> None:
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
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
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
            for _, _, lab in t.spans:
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
        _write(prefix + ".tags", [[d["tags"].index(x) for x in t.tags] for t in trees], len(d["tags"]))
        eos = d["chars"].eos()
        _write(prefix + ".chars", [[i for w in t.words for i in [d["chars"].index(c) for c in word_chars(w)] + [eos]]
                                   for t in trees], len(d["chars"]))
        _write(prefix + ".spans", [[x for a, b, lab in t.spans for x in (a, b, d["labels"].index(lab))]
                                   for t in trees], max(len(d["labels"]), max(len(t) for t in trees) + 1))
        if with_dep[s]:
            _write(prefix + ".heads", [t.heads for t in trees], max(len(t) for t in trees) + 1)
            _write(prefix + ".rels", [[d["rels"].index(r) for r in t.relations] for t in trees], len(d["rels"]))
        report["splits"][s] = {"path": getattr(args, s), "sentences": len(trees),
                               "words": sum(len(t) for t in trees), "spans": sum(len(t.spans) for t in trees),
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
