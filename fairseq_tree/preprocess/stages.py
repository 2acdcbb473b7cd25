"""The per-shard work of the pipeline: parse, bpe, binarize, one worker class each.

A worker holds what one process needs for every shard it handles (tokenizers, the parser, the BPE tables, the
dictionaries): it is built once per process from the :class:`StageConfig` and called on each shard
(:mod:`fairseq_tree.preprocess.workers` runs it in local processes, :mod:`fairseq_tree.preprocess.launcher` in
scheduler jobs); nothing is kept in module globals. Where the modes differ (the target field, the trees, the
subword rows, the datasets), a worker calls the run's row codec (:mod:`fairseq_tree.preprocess.codecs`).
Shards, their files and rows: :mod:`fairseq_tree.preprocess.shards`.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from dataclasses import dataclass
from typing import Dict, List, Optional

from fairseq.data.dictionary import Dictionary

from fairseq_tree.parsers import ParseError, build_parser, length_batches
from fairseq_tree.preprocess.codecs import RowCodec
from fairseq_tree.preprocess.columns import PieceTable
from fairseq_tree.preprocess.shards import (  # noqa: F401  (PreprocessError, Shard, atomic_copy: re-exported)
    LineErrors,
    PreprocessError,
    Shard,
    atomic_copy,
    atomic_write_text,
    read_lines,
    shard_dataset_prefixes,
    tree_to_compact,
    write_meta,
)
from fairseq_tree.text.bpe import Segmenter
from fairseq_tree.text.tokenize import InputError, Tokenizer, check_line, decode_line


@dataclass
class StageConfig:
    """Everything a worker needs; plain data so it pickles into worker processes and jobs."""

    workdir: str
    paths: Dict[str, Dict[str, str]]  # split -> role -> file path
    src_lang: str
    parser: str
    tokenize: str
    on_error: str
    unary: str
    max_positions: int
    parser_options: Dict
    codec: RowCodec
    parse_batch_size: int = 256

# --------------------------------------------------------------------------------------------------
# stage 1: validate, tokenize, parse
# --------------------------------------------------------------------------------------------------


@dataclass
class _Lines:
    """A shard's lines in stage 1: whether each is still good, its source tokens, raw tree and target tokens."""

    ok: List[bool]
    src_tokens: List[Optional[List[str]]]
    raw_trees: List[str]
    tgt_tokens: List[Optional[List[str]]]

    @classmethod
    def empty(cls, n: int) -> "_Lines":
        return cls([True] * n, [None] * n, [""] * n, [None] * n)


class ParseWorker:
    """Stage 1: rows ``lineno, raw tree, compact tree (4 fields), target tokens, error`` (``.parsed.tsv``) and
    the shard's word counts of the training split (``.parsed.json``)."""

    def __init__(self, cfg: StageConfig):
        self.cfg, self.codec = cfg, cfg.codec
        self.given = cfg.parser == "given"
        self.src_tok = Tokenizer(cfg.tokenize, cfg.src_lang, ptb=True)
        self.read_target = cfg.codec.target_reader(cfg.tokenize)
        self.parser = None if self.given else build_parser(cfg.parser, **cfg.parser_options)

    def __call__(self, shard: Shard) -> dict:
        paths = self.cfg.paths[shard.split]
        errors = LineErrors(self.cfg.on_error)
        t0 = time.perf_counter()
        lines = self._read(shard, paths, errors)
        t_tok = time.perf_counter() - t0
        t0 = time.perf_counter()
        if self.parser is not None:
            self._parse(shard, paths, lines, errors)
        compact, src_counts, tgt_counts = self._trees(shard, paths, lines, errors)
        t_parse = time.perf_counter() - t0
        rows = []
        for k, good in enumerate(lines.ok):
            tree_fields = compact[k] if good else "\t\t\t"
            tgt = " ".join(lines.tgt_tokens[k]) if (good and lines.tgt_tokens[k] is not None) else ""
            rows.append(f"{shard.first_line + k}\t{lines.raw_trees[k]}\t{tree_fields}\t{tgt}\t{'' if good else 'x'}\n")
        base = os.path.join(self.cfg.workdir, shard.name)
        atomic_write_text(base + ".parsed.tsv", "".join(rows))
        meta = {"lines": len(rows), "kept": sum(lines.ok), "skipped": errors.skipped, "filtered": errors.filtered,
                "seconds": {"tokenize": t_tok, "parse": t_parse},
                "src_word_counts": dict(src_counts), "tgt_word_counts": dict(tgt_counts)}
        write_meta(base + ".parsed.json", meta)
        return meta

    def _read(self, shard: Shard, paths: Dict[str, str], errors: LineErrors) -> _Lines:
        """Check and decode every line of the shard's files; tokenize the source (unless it holds the trees) and
        the target (:meth:`RowCodec.target_reader`). A line's first error is reported."""
        src_lines = read_lines(paths["src"], shard.offsets["src"], shard.num_lines)
        tgt_lines = read_lines(paths["tgt"], shard.offsets["tgt"], shard.num_lines) if "tgt" in paths else None
        tree_lines = read_lines(paths["trees"], shard.offsets["trees"], shard.num_lines) if "trees" in paths else None
        src_is_tree = self.given and tree_lines is None
        lines = _Lines.empty(len(src_lines))
        for k in range(len(src_lines)):
            lineno = shard.first_line + k
            try:
                text = check_line(decode_line(src_lines[k]))
                if src_is_tree:
                    lines.raw_trees[k] = " ".join(text.split())
                else:
                    lines.src_tokens[k] = self.src_tok(text)
            except InputError as e:
                errors.add(paths["src"], lineno, e.reason, e.message)
                lines.ok[k] = False
            if tree_lines is not None:
                try:
                    lines.raw_trees[k] = " ".join(check_line(decode_line(tree_lines[k])).split())
                except InputError as e:
                    if lines.ok[k]:
                        errors.add(paths["trees"], lineno, e.reason, e.message)
                    lines.ok[k] = False
            if tgt_lines is not None:
                try:
                    lines.tgt_tokens[k] = self.read_target(check_line(decode_line(tgt_lines[k])))
                except InputError as e:
                    if lines.ok[k]:
                        errors.add(paths["tgt"], lineno, e.reason, e.message)
                    lines.ok[k] = False
        return lines

    def _parse(self, shard: Shard, paths: Dict[str, str], lines: _Lines, errors: LineErrors) -> None:
        """The raw trees of the good lines from the parser; a sentence it fails on is reported."""
        todo = [k for k, good in enumerate(lines.ok) if good]
        for k, result in zip(todo, _run_parser(self.parser, [lines.src_tokens[k] for k in todo],
                                               self.cfg.parse_batch_size)):
            if isinstance(result, Exception):
                errors.add(paths["src"], shard.first_line + k, "parse_failed", f"parser failed: {result}")
                lines.ok[k] = False
            else:
                lines.raw_trees[k] = result

    def _trees(self, shard: Shard, paths: Dict[str, str], lines: _Lines, errors: LineErrors):
        """Read the raw trees (:meth:`RowCodec.read_tree`), check their leaves against the source tokens, apply
        the codec's view filter; -> (compact trees, source and target word counts of the training split)."""
        where = (paths["trees"] if "trees" in paths else paths["src"]) if self.given else paths["src"]
        compact = [""] * len(lines.ok)
        src_counts: Counter = Counter()
        tgt_counts: Counter = Counter()
        for k, good in enumerate(lines.ok):
            if not good:
                continue
            lineno = shard.first_line + k
            try:
                tree = self.codec.read_tree(lines.raw_trees[k], self.cfg.unary)
            except InputError as e:
                errors.add(where, lineno, e.reason, e.message)
                lines.ok[k] = False
                continue
            if lines.src_tokens[k] is not None and tree.words != lines.src_tokens[k]:
                errors.add(where, lineno, "leaves_mismatch", _mismatch_message(tree.words, lines.src_tokens[k]))
                lines.ok[k] = False
                continue
            target = lines.tgt_tokens[k]
            dropped = self.codec.view_filter(tree, target)
            if dropped is not None:
                errors.filter(paths["tgt"] if target else where, lineno, *dropped)
                lines.ok[k] = False
                continue
            compact[k] = tree_to_compact(tree)
            if shard.split == "train":
                src_counts.update(tree.words)
                if target is not None:
                    tgt_counts.update(self.codec.bpe_words(target))
        return compact, src_counts, tgt_counts


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


class BpeWorker:
    """Stage 2: subword trees and targets, length filter, counts of the training split (:meth:`RowCodec.bpe`).

    The shard's new word types are segmented in one batch (:meth:`Segmenter.prepare`); the piece table is kept
    for the worker's later shards."""

    def __init__(self, cfg: StageConfig, codes_path: Optional[str]):
        self.cfg = cfg
        self.pieces = PieceTable(Segmenter(codes_path))

    def __call__(self, shard: Shard) -> dict:
        base = os.path.join(self.cfg.workdir, shard.name)
        t0 = time.perf_counter()
        errors = LineErrors(self.cfg.on_error)
        kept, counts = self.cfg.codec.bpe(shard, base, self.cfg.paths[shard.split], self.pieces,
                                          self.cfg.max_positions, errors)
        meta = {"kept": kept, "skipped": errors.skipped, "seconds": {"bpe": time.perf_counter() - t0},
                "counts": counts}
        write_meta(base + ".bpe.json", meta)
        return meta

# --------------------------------------------------------------------------------------------------
# stage 3: binarize
# --------------------------------------------------------------------------------------------------


class BinarizeWorker:
    """Stage 3: the shard's subword rows -> its datasets (:meth:`RowCodec.binarize`) and stats."""

    def __init__(self, cfg: StageConfig, dict_paths: Dict[str, str]):
        self.cfg = cfg
        self.dicts = {k: Dictionary.load(p) for k, p in dict_paths.items()}

    def __call__(self, shard: Shard) -> dict:
        base = os.path.join(self.cfg.workdir, shard.name)
        t0 = time.perf_counter()
        out = self.cfg.codec.binarize(base, shard_dataset_prefixes(self.cfg.workdir, shard), self.dicts)
        meta = {"stats": out.pop("stats"), "seconds": {"binarize": time.perf_counter() - t0}, **out}
        write_meta(base + ".bin.json", meta)
        return meta
