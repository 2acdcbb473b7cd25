"""The per-shard work of the pipeline: parse, bpe, binarize. Each runs in a worker process.

A shard is a run of consecutive input lines. Each stage reads the previous stage's shard file from
the work directory and writes its own (temporary name, renamed when complete, then a ``.json``
with counts and timings written last: its presence marks the shard as done, which makes reruns
resume). Intermediate rows are tab-separated; a *compact tree* is four fields
``words<TAB>tags<TAB>labels<TAB>spans`` (space-separated within a field, spans flattened).
With ``--task classification`` the target field holds the sentence's class (label file) or nothing, and a
class-labelled tree keeps its classes in ``labels``/``tags`` until the binarize stage turns them into targets
and node inputs (:mod:`fairseq_tree.data.class_labels`).
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from dataclasses import dataclass
from typing import Dict, List, Optional

from fairseq_tree.data.binarize import ArrayBuilder, encode, token_dtype, write_dataset
from fairseq_tree.data.class_labels import NO_TARGET, ClassScheme, node_inputs, tree_targets
from fairseq_tree.parsers import ParseError, build_parser, length_batches
from fairseq_tree.preprocess import columns as C
from fairseq_tree.preprocess.columns import PieceTable, vocab_from_bytes
from fairseq_tree.text.bpe import Segmenter
from fairseq_tree.text.tokenize import InputError, Tokenizer, check_line, decode_line
from fairseq_tree.trees import Tree, TreeFormatError, expand_subwords, labelled_tree_from_brackets, tree_from_brackets
from fairseq_tree.trees.io import atomic_copy, atomic_path, atomic_write_text  # noqa: F401  (atomic_copy: re-exported)

#: classification targets, one dataset each (``{split}.SRC-None.SRC.{key}``), int16 with -1 = no target:
#: the sentence's class [1], the class of every node [m] (post-order, as ``.nodes``) and of every leaf [n]
TARGET_KEYS = ("target", "node_target", "leaf_target")
TARGET_DTYPE = "int16"


class PreprocessError(Exception):
    """A fatal input error; the message names the file and line."""


@dataclass
class Shard:
    split: str
    index: int
    first_line: int  # 1-based number of the shard's first line in the input files
    num_lines: int
    offsets: Dict[str, int]  # byte offset of the first line, per input role (src, tgt, trees)

    @property
    def name(self) -> str:
        return f"{self.split}.{self.index:05d}"


@dataclass
class StageConfig:
    """Everything a worker needs; plain data so it pickles into worker processes."""

    workdir: str
    paths: Dict[str, Dict[str, str]]  # split -> role -> file path
    src_lang: str
    tgt_lang: Optional[str]
    parser: str
    tokenize: str
    on_error: str
    unary: str
    max_positions: int
    parser_options: Dict
    parse_batch_size: int = 256
    classification: Optional[Dict] = None  # --task classification: pipeline.classification_options


def class_scheme(options: Dict) -> ClassScheme:
    return ClassScheme.make(options["num_classes"], options["class_names"], options["binary"])

# --------------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------------

def read_lines(path: str, offset: int, count: int) -> List[bytes]:
    lines = []
    with open(path, "rb") as f:
        f.seek(offset)
        for _ in range(count):
            line = f.readline()
            if not line:
                break
            lines.append(line.rstrip(b"\r\n"))
    return lines


def write_meta(path: str, meta: dict) -> None:
    atomic_write_text(path, json.dumps(meta))


def tree_to_compact(tree: Tree) -> str:
    return "\t".join([
        " ".join(tree.words), " ".join(t or "X" for t in tree.tags), " ".join(tree.labels),
        " ".join(map(str, tree.flat_spans())),
    ])


def compact_to_tree(fields: List[str]) -> Tree:
    words = fields[0].split(" ")
    tags = fields[1].split(" ")
    labels = fields[2].split(" ") if fields[2] else []
    flat = [int(x) for x in fields[3].split(" ")] if fields[3] else []
    return Tree(words, tags, labels, list(zip(flat[0::2], flat[1::2])))


class _Errors:
    """Collects skipped lines, or raises at the first error when on_error == 'fail'."""

    def __init__(self, on_error: str):
        self.on_error = on_error
        self.skipped: List[dict] = []
        self.filtered: List[dict] = []

    @staticmethod
    def _entry(path: str, lineno: int, reason: str, message: str) -> dict:
        return {"file": path, "line": lineno, "reason": reason,
                "message": message.replace("\t", " ").replace("\n", " ")}

    def add(self, path: str, lineno: int, reason: str, message: str) -> None:
        if self.on_error == "fail":
            raise PreprocessError(f"{path}:{lineno}: {message} [{reason}]")
        self.skipped.append(self._entry(path, lineno, reason, message))

    def filter(self, path: str, lineno: int, reason: str, message: str) -> None:
        """A good line left out by design (the neutral roots of --binary): always recorded, never fatal."""
        self.filtered.append(self._entry(path, lineno, reason, message))

# --------------------------------------------------------------------------------------------------
# worker state (one per process)
# --------------------------------------------------------------------------------------------------

_STATE: dict = {}


def init_parse_worker(cfg: StageConfig) -> None:
    _STATE.clear()
    _STATE["cfg"] = cfg
    given = cfg.parser == "given"
    _STATE["src_tok"] = Tokenizer(cfg.tokenize, cfg.src_lang, ptb=True)
    _STATE["tgt_tok"] = Tokenizer(cfg.tokenize, cfg.tgt_lang) if cfg.tgt_lang else None
    if not given:
        _STATE["parser"] = build_parser(cfg.parser, **cfg.parser_options)


def init_bpe_worker(cfg: StageConfig, codes_path: Optional[str]) -> None:
    _STATE.clear()
    _STATE["cfg"] = cfg
    _STATE["segment"] = Segmenter(codes_path)
    _STATE["pieces"] = PieceTable(_STATE["segment"])


def init_binarize_worker(cfg: StageConfig, dict_paths: Dict[str, str]) -> None:
    from fairseq.data.dictionary import Dictionary

    _STATE.clear()
    _STATE["cfg"] = cfg
    _STATE["dicts"] = {k: Dictionary.load(p) for k, p in dict_paths.items()}

# --------------------------------------------------------------------------------------------------
# stage 1: validate, tokenize, parse
# --------------------------------------------------------------------------------------------------

def parse_shard(shard: Shard) -> dict:
    """Rows ``lineno, raw tree, compact tree (4 fields), target tokens, error``."""
    cfg: StageConfig = _STATE["cfg"]
    paths = cfg.paths[shard.split]
    errors = _Errors(cfg.on_error)
    src_lines = read_lines(paths["src"], shard.offsets["src"], shard.num_lines)
    tgt_lines = read_lines(paths["tgt"], shard.offsets["tgt"], shard.num_lines) if "tgt" in paths else None
    tree_lines = read_lines(paths["trees"], shard.offsets["trees"], shard.num_lines) if "trees" in paths else None
    given = cfg.parser == "given"
    src_is_tree = given and tree_lines is None
    scheme = class_scheme(cfg.classification) if cfg.classification else None
    labelled = scheme is not None and cfg.classification["labels"] == "nodes"

    t0 = time.perf_counter()
    n = len(src_lines)
    ok = [True] * n
    src_tokens: List[Optional[List[str]]] = [None] * n
    tgt_tokens: List[Optional[List[str]]] = [None] * n
    raw_trees: List[str] = [""] * n
    for k in range(n):
        lineno = shard.first_line + k
        try:
            text = check_line(decode_line(src_lines[k]))
            if src_is_tree:
                raw_trees[k] = " ".join(text.split())
            else:
                src_tokens[k] = _STATE["src_tok"](text)
        except InputError as e:
            errors.add(paths["src"], lineno, e.reason, e.message)
            ok[k] = False
        if tree_lines is not None:
            try:
                raw_trees[k] = " ".join(check_line(decode_line(tree_lines[k])).split())
            except InputError as e:
                if ok[k]:
                    errors.add(paths["trees"], lineno, e.reason, e.message)
                ok[k] = False
        if tgt_lines is not None:
            try:
                text = check_line(decode_line(tgt_lines[k]))
                tgt_tokens[k] = [_class_label(scheme, text)] if scheme else _STATE["tgt_tok"](text)
            except InputError as e:
                if ok[k]:
                    errors.add(paths["tgt"], lineno, e.reason, e.message)
                ok[k] = False
    t_tok = time.perf_counter() - t0

    t0 = time.perf_counter()
    if not given:
        todo = [k for k in range(n) if ok[k]]
        for k, result in zip(todo, _run_parser(_STATE["parser"], [src_tokens[k] for k in todo],
                                               cfg.parse_batch_size)):
            if isinstance(result, Exception):
                errors.add(paths["src"], shard.first_line + k, "parse_failed", f"parser failed: {result}")
                ok[k] = False
            else:
                raw_trees[k] = result
    tree_path = paths["trees"] if tree_lines is not None else paths["src"]
    compact = [""] * n
    src_counts: Counter = Counter()
    tgt_counts: Counter = Counter()
    for k in range(n):
        if not ok[k]:
            continue
        lineno = shard.first_line + k
        where = tree_path if given else paths["src"]
        try:
            tree = (labelled_tree_from_brackets(raw_trees[k], scheme.names) if labelled
                    else tree_from_brackets(raw_trees[k], unary=cfg.unary))
        except TreeFormatError as e:
            errors.add(where, lineno, *(("bad_labelled_tree", e.message) if labelled
                                        else ("malformed_tree", f"malformed tree: {e.message}")))
            ok[k] = False
            continue
        if src_tokens[k] is not None and tree.words != src_tokens[k]:
            errors.add(where, lineno, "leaves_mismatch", _mismatch_message(tree.words, src_tokens[k]))
            ok[k] = False
            continue
        if scheme is not None and scheme.binary:
            label = tgt_tokens[k][0] if tgt_tokens[k] else None
            if tree_targets(tree, scheme, label)[0] == NO_TARGET:
                errors.filter(paths["tgt"] if label else where, lineno, "neutral_root",
                              "the sentence is neutral: no class in the binary view")
                ok[k] = False
                continue
        compact[k] = tree_to_compact(tree)
        if shard.split == "train":
            src_counts.update(tree.words)
            if tgt_tokens[k] is not None and scheme is None:  # classes are not words (no BPE on them)
                tgt_counts.update(tgt_tokens[k])
    t_parse = time.perf_counter() - t0

    rows = []
    for k in range(n):
        tree_fields = compact[k] if ok[k] else "\t\t\t"
        tgt = " ".join(tgt_tokens[k]) if (ok[k] and tgt_tokens[k] is not None) else ""
        rows.append(f"{shard.first_line + k}\t{raw_trees[k]}\t{tree_fields}\t{tgt}\t{'' if ok[k] else 'x'}\n")
    base = os.path.join(cfg.workdir, shard.name)
    atomic_write_text(base + ".parsed.tsv", "".join(rows))
    meta = {"lines": n, "kept": sum(ok), "skipped": errors.skipped, "filtered": errors.filtered,
            "seconds": {"tokenize": t_tok, "parse": t_parse},
            "src_word_counts": dict(src_counts), "tgt_word_counts": dict(tgt_counts)}
    write_meta(base + ".parsed.json", meta)
    return meta


def _class_label(scheme: ClassScheme, text: str) -> str:
    try:
        return scheme.check_label(text)
    except ValueError as e:
        raise InputError("bad_label", str(e)) from None


def _mismatch_message(leaves: List[str], tokens: List[str]) -> str:
    for j, (a, b) in enumerate(zip(leaves, tokens)):
        if a != b:
            return f"tree leaf {j + 1} is {a!r} but source token {j + 1} is {b!r}"
    return f"tree has {len(leaves)} leaves but the source has {len(tokens)} tokens"


def _run_parser(parser, sentences: List[List[str]], batch_size: int) -> List[object]:
    """Parse in calls of ``batch_size`` sentences of similar length (sorted by length over the whole list), results
    in input order; a sentence the parser fails on yields its ParseError (``index``: its position in
    ``sentences``), the rest still parse."""

    out: List[object] = [None] * len(sentences)
    for idx in length_batches([len(s) for s in sentences], batch_size):
        for i, result in zip(idx, _parse_call(parser, [sentences[i] for i in idx])):
            out[i] = ParseError(i, result.message) if isinstance(result, ParseError) else result
    return out


def _parse_call(parser, batch: List[List[str]]) -> List[object]:
    """``parser.parse_all(batch)``; for a backend with ``parse`` only, parse again after each ParseError."""

    if hasattr(parser, "parse_all"):
        return parser.parse_all(batch)
    out: List[object] = []
    while batch:
        try:
            out.extend(parser.parse(batch))
            batch = []
        except ParseError as e:
            out.extend(parser.parse(batch[:e.index]) if e.index else [])
            out.append(e)
            batch = batch[e.index + 1:]
    return out

# --------------------------------------------------------------------------------------------------
# stage 2: subwords, length filter
# --------------------------------------------------------------------------------------------------

def bpe_shard(shard: Shard) -> dict:
    """Stage 2 of a shard: subword trees and targets, length filter, counts of the training split.

    The shard's new word types are segmented in one batch (:meth:`Segmenter.prepare`); sentences are then
    handled as columns (:mod:`fairseq_tree.preprocess.columns`), written to ``.bpe.npz`` (``.bpe.tsv`` rows, one
    sentence at
    a time, for classification, whose binarize stage needs each tree).
    """
    cfg: StageConfig = _STATE["cfg"]
    base = os.path.join(cfg.workdir, shard.name)
    t0 = time.perf_counter()
    errors = _Errors(cfg.on_error)
    if cfg.classification:
        kept, counts = _bpe_rows(shard, _read_kept_parsed(base + ".parsed.tsv"), errors)
    else:
        kept, counts = _bpe_columns(shard, errors)
    meta = {"kept": kept, "skipped": errors.skipped, "seconds": {"bpe": time.perf_counter() - t0},
            "counts": counts}
    write_meta(base + ".bpe.json", meta)
    return meta


def _bpe_columns(shard: Shard, errors: "_Errors"):
    """Translation (or --only-source): every column of the shard at once -> ``.bpe.npz``; returns
    (kept sentences, counts)."""
    import numpy as np

    cfg: StageConfig = _STATE["cfg"]
    table: C.PieceTable = _STATE["pieces"]
    paths = cfg.paths[shard.split]
    base = os.path.join(cfg.workdir, shard.name)
    cols = C.read_parsed(base + ".parsed.tsv")
    n = len(cols[0])
    linenos = np.asarray([int(x) for x in cols[0]], dtype=np.int64)  # [S]
    words, word_sizes = C.split_column(cols[2])
    labels, node_sizes = C.split_column(cols[4])
    spans_f = [f for f in cols[5] if f]
    spans = (np.fromstring(" ".join(spans_f), dtype=np.int64, sep=" ") if spans_f
             else np.zeros(0, np.int64)).reshape(-1, 2)  # [M, 2]
    has_tgt = cfg.tgt_lang is not None
    tgt_words, tgt_sizes = C.split_column(cols[6]) if has_tgt else ([], np.zeros(n, np.int64))
    leaves, k = table.lookup(words)  # [P] piece ids, [W] pieces per word
    leaf_sizes = np.bincount(C.owner(word_sizes), weights=k, minlength=n).astype(np.int64)
    tgt, kt = table.lookup(tgt_words)
    tgt_piece_sizes = np.bincount(C.owner(tgt_sizes), weights=kt, minlength=n).astype(np.int64)
    # node labels, and the tags of split words (the labels of their new nodes)
    label_vocab = C.Vocab()
    node_ids = label_vocab.intern(labels)
    tag_ids = np.zeros(len(words), np.int64)
    split = np.flatnonzero(k > 1)
    if len(split):
        tags, _ = C.split_column(cols[3])
        tag_ids[split] = label_vocab.intern([tags[i] for i in split.tolist()])
    node_sizes, node_ids, spans = C.expand_trees(word_sizes, k, tag_ids, node_sizes, node_ids, spans)
    keep = _length_filter(linenos, leaf_sizes + node_sizes, tgt_piece_sizes, tgt_sizes == 0 if has_tgt else None,
                          paths, errors)
    leaves, tgt = leaves[np.repeat(keep, leaf_sizes)], tgt[np.repeat(keep, tgt_piece_sizes)]
    both = np.concatenate([leaves, tgt])
    used = np.flatnonzero(np.bincount(both, minlength=len(table.pieces)))  # shard-local piece ids: ranks in used
    local = np.zeros(len(table.pieces), np.int64)
    local[used] = np.arange(len(used))
    local = local[both]
    pieces = [table.pieces.strings[i] for i in used.tolist()]
    arrays = {"lineno": linenos[keep], "labels": C.strings_to_bytes(label_vocab.strings),
              "pieces": C.strings_to_bytes(pieces),
              "leaves": local[:len(leaves)].astype(np.int32), "tgt": local[len(leaves):].astype(np.int32),
              "nodes": node_ids[np.repeat(keep, node_sizes)].astype(np.int32),
              "spans": spans.reshape(-1)[np.repeat(keep, 2 * node_sizes)].astype(np.int32),
              "leaf_sizes": leaf_sizes[keep], "node_sizes": node_sizes[keep], "tgt_sizes": tgt_piece_sizes[keep]}
    with atomic_path(base + ".bpe.npz") as tmp, open(tmp, "wb") as f:
        np.savez(f, **arrays)
    counts = {"src": {}, "tgt": {}, "labels": {}}
    if shard.split == "train":
        counts = {"src": _count(arrays["leaves"], pieces), "tgt": _count(arrays["tgt"], pieces),
                  "labels": _count(arrays["nodes"], label_vocab.strings)}
    return int(keep.sum()), counts


def _length_filter(linenos, src_len, tgt_len, no_tgt, paths, errors: "_Errors"):
    """Sentences within --max-positions and with target tokens [S] (bool); the others are reported in line
    order (source length first). ``no_tgt`` [S] marks targets with no token (None: no targets)."""
    import numpy as np

    cfg: StageConfig = _STATE["cfg"]
    bad_src = src_len > cfg.max_positions
    no_tgt = np.zeros(len(src_len), dtype=bool) if no_tgt is None else no_tgt
    bad_tgt = ~no_tgt & (tgt_len + 1 > cfg.max_positions)
    for i in np.flatnonzero(bad_src | bad_tgt | no_tgt).tolist():
        if bad_src[i]:
            errors.add(paths["src"], int(linenos[i]), "too_long",
                       f"source has {src_len[i]} leaves + nodes > --max-positions {cfg.max_positions}")
        elif no_tgt[i]:
            errors.add(paths["tgt"], int(linenos[i]), "empty_line", "no target tokens after tokenization")
        else:
            errors.add(paths["tgt"], int(linenos[i]), "too_long",
                       f"target has {tgt_len[i] + 1} tokens (with EOS) > --max-positions {cfg.max_positions}")
    return ~(bad_src | bad_tgt | no_tgt)


def _count(ids, strings: List[str]) -> Dict[str, int]:
    """Occurrences of every string (``strings[i]`` for id ``i``) among ``ids`` (the absent ones left out)."""
    import numpy as np

    counts = np.bincount(ids, minlength=len(strings))
    return {strings[i]: int(counts[i]) for i in np.flatnonzero(counts).tolist()}


def _bpe_rows(shard: Shard, rows: List[List[str]], errors: "_Errors"):
    """Classification: one sentence at a time -> ``.bpe.tsv`` rows; returns (kept sentences, counts)."""
    cfg: StageConfig = _STATE["cfg"]
    segment = _STATE["segment"]
    paths = cfg.paths[shard.split]
    base = os.path.join(cfg.workdir, shard.name)
    segment.prepare(_words_of(rows, 2))
    counts = {"src": Counter(), "tgt": Counter(), "labels": Counter()}
    out = []
    for fields in rows:
        lineno = int(fields[0])
        words = fields[2].split(" ")
        if segment.split_words(words) is None:  # no word split: the compact tree stays as it is
            labels = fields[4].split(" ") if fields[4] else []
            compact = "\t".join(fields[2:6])
        else:
            tree = expand_subwords(compact_to_tree(fields[2:6]), segment)
            words, labels, compact = tree.words, tree.labels, tree_to_compact(tree)
        labels = node_inputs(labels, cfg.classification["node_inputs"])  # the target field is a class
        src_len = len(words) + len(labels)
        if src_len > cfg.max_positions:
            errors.add(paths["src"], lineno, "too_long",
                       f"source has {src_len} leaves + nodes > --max-positions {cfg.max_positions}")
            continue
        if shard.split == "train":
            counts["src"].update(words)
            counts["labels"].update(labels)
        out.append(f"{lineno}\t{compact}\t{fields[6]}\n")
    atomic_write_text(base + ".bpe.tsv", "".join(out))
    return len(out), {k: dict(v) for k, v in counts.items()}


def _read_kept_parsed(path: str) -> List[List[str]]:
    """The fields of the rows of a ``.parsed.tsv`` not skipped in stage 1."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    rows = [line.split("\t") for line in lines if line]
    return [r for r in rows if not r[7]]


def _words_of(rows: List[List[str]], *columns: Optional[int]) -> List[str]:
    """Every space-separated word of the given (non-empty) columns of all rows, concatenated."""
    fields = [r[c] for c in columns if c is not None for r in rows if r[c]]
    return " ".join(fields).split(" ") if fields else []

# --------------------------------------------------------------------------------------------------
# stage 3: binarize
# --------------------------------------------------------------------------------------------------

def shard_dataset_prefixes(workdir: str, shard: Shard) -> Dict[str, str]:
    base = os.path.join(workdir, shard.name)
    return {k: f"{base}.{k}" for k in ("leaves", "nodes", "spans", "tgt") + TARGET_KEYS}


def binarize_shard(shard: Shard) -> dict:
    """The shard's ``.bpe.tsv`` -> its leaves, nodes, spans (and target, or class targets) datasets."""
    cfg: StageConfig = _STATE["cfg"]
    base = os.path.join(cfg.workdir, shard.name)
    t0 = time.perf_counter()
    prefixes = shard_dataset_prefixes(cfg.workdir, shard)
    if cfg.classification:
        with open(base + ".bpe.tsv", encoding="utf-8") as f:
            rows = [line.split("\t") for line in f.read().split("\n") if line]
        stats, class_counts = _binarize_classification(rows, prefixes)
    else:
        stats, class_counts = _binarize_translation(base + ".bpe.npz", prefixes), None
    meta = {"stats": stats, "seconds": {"binarize": time.perf_counter() - t0}}
    if class_counts is not None:
        meta["class_counts"] = class_counts
    write_meta(base + ".bin.json", meta)
    return meta


def _binarize_translation(path: str, prefixes: Dict[str, str]) -> Dict[str, int]:
    """A ``.bpe.npz`` (:mod:`fairseq_tree.preprocess.columns`) -> the shard's datasets: every shard-local string is
    looked up
    in its dictionary once, then each column is one gather and one write (the bytes of one ``add_item`` per
    sentence). Returns the stats."""
    import numpy as np

    dicts = _STATE["dicts"]
    with np.load(path) as z:
        a = {k: z[k] for k in z.files}
    pieces, labels = vocab_from_bytes(a["pieces"]), vocab_from_bytes(a["labels"])

    def ids(d, strings, column):  # [items] dictionary ids of a column of shard-local ids
        table = np.asarray([d.indices.get(t, d.unk_index) for t in strings], dtype=np.int64)
        return table[column].astype(token_dtype(d)) if len(column) else np.zeros(0, token_dtype(d))

    leaves, nodes = ids(dicts["src"], pieces, a["leaves"]), ids(dicts["labels"], labels, a["nodes"])
    write_dataset(prefixes["leaves"], leaves, a["leaf_sizes"])
    write_dataset(prefixes["nodes"], nodes, a["node_sizes"])
    write_dataset(prefixes["spans"], a["spans"], 2 * a["node_sizes"])
    stats = {"sentences": len(a["lineno"]), "source_tokens": len(leaves), "nodes": len(nodes),
             "source_unk": int((leaves == dicts["src"].unk_index).sum()),
             "label_unk": int((nodes == dicts["labels"].unk_index).sum())}
    if "tgt" in dicts:
        tgt, sizes = ids(dicts["tgt"], pieces, a["tgt"]), a["tgt_sizes"]
        tgt = np.insert(tgt, np.cumsum(sizes), dicts["tgt"].eos_index)  # EOS after every sentence
        write_dataset(prefixes["tgt"], tgt, sizes + 1)
        stats.update(target_tokens=len(tgt), target_unk=int((tgt == dicts["tgt"].unk_index).sum()))
    return stats


def _binarize_classification(rows: List[List[str]], prefixes: Dict[str, str]):
    """One sentence at a time: the class targets need each tree. Returns (stats, class counts)."""
    import numpy as np

    cfg: StageConfig = _STATE["cfg"]
    dicts = _STATE["dicts"]
    builders = {
        "leaves": ArrayBuilder(prefixes["leaves"] + ".tmp", token_dtype(dicts["src"])),
        "nodes": ArrayBuilder(prefixes["nodes"] + ".tmp", token_dtype(dicts["labels"])),
        "spans": ArrayBuilder(prefixes["spans"] + ".tmp", np.int32),
    }
    classify = _ClassTargets(cfg.classification)
    builders.update({k: ArrayBuilder(prefixes[k] + ".tmp", TARGET_DTYPE) for k in TARGET_KEYS})
    stats = Counter()
    for fields in rows:
        words = fields[1].split(" ")
        spans = [int(x) for x in fields[4].split(" ")] if fields[4] else []
        labels = classify.add(compact_to_tree(fields[1:5]), fields[5], builders, stats)
        leaves = encode(dicts["src"], words, append_eos=False)
        nodes = encode(dicts["labels"], labels, append_eos=False)
        builders["leaves"].add(leaves)
        builders["nodes"].add(nodes)
        builders["spans"].add(spans)
        stats["sentences"] += 1
        stats["source_tokens"] += len(leaves)
        stats["source_unk"] += leaves.count(dicts["src"].unk_index)
        stats["nodes"] += len(nodes)
        stats["label_unk"] += nodes.count(dicts["labels"].unk_index)
    for key, b in builders.items():
        b.finalize()
        for ext in (".bin", ".idx"):
            os.replace(prefixes[key] + ".tmp" + ext, prefixes[key] + ext)
    return dict(stats), dict(classify.class_counts)


class _ClassTargets:
    """Binarize-stage classification: the node inputs and targets of one subword tree
    (:mod:`fairseq_tree.data.class_labels`)."""

    def __init__(self, options: Dict):
        self.scheme, self.options = class_scheme(options), options
        self.class_counts: Counter = Counter()

    def add(self, tree: Tree, label_field: str, builders: dict, stats: Counter) -> List[str]:
        """Write the targets; returns the node labels to binarize as inputs."""
        sentence_label = label_field if self.options["labels"] == "file" else None
        target, node_t, leaf_t = tree_targets(tree, self.scheme, sentence_label)
        builders["target"].add([target])
        builders["node_target"].add(node_t)
        builders["leaf_target"].add(leaf_t)
        stats["labelled_nodes"] += sum(t != NO_TARGET for t in node_t)
        stats["labelled_leaves"] += sum(t != NO_TARGET for t in leaf_t)
        self.class_counts[self.scheme.classes[target]] += 1
        return node_inputs(tree.labels, self.options["node_inputs"])
