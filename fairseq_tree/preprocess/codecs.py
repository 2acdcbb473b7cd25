"""Row codecs: what the pipeline's modes do differently, in one object handed to every stage.

The passes (:mod:`fairseq_tree.preprocess.pipeline`) and the per-shard stages
(:mod:`fairseq_tree.preprocess.stages`) are the same for every ``--task``; where translation and classification
differ, they call the codec of the run (:func:`make_codec`, built once from the
:class:`~fairseq_tree.preprocess.config.PreprocessConfig` and pickled into the workers with the stage config):

============================  =====================================  =============================================
point                         :class:`TranslationCodec`              :class:`ClassificationCodec`
============================  =====================================  =============================================
target field (parse)          the target sentence, tokenized         the sentence's class (label file) or nothing
tree (parse)                  a parsed tree (``--unary``)            a class-labelled tree (``--labels nodes``)
view filter (parse)           none                                   neutral roots of ``--binary``
BPE words (parse)             source and target words                source words (classes are not words)
bpe stage                     columns -> ``.bpe.npz``; source and    rows -> ``.bpe.tsv``; source length only
                              target length (``tgt + EOS``)
binarize stage                leaves, nodes, spans, target + EOS     leaves, node inputs, spans, class targets
output datasets               ``{split}.SRC-TGT.{SRC,TGT}``          ``{split}.SRC-None.SRC`` + ``.target`` ...
scheme file, report           none; target tokens and unknowns       ``classification.json``; class counts
============================  =====================================  =============================================

A codec is plain data (it pickles into worker processes and submitit jobs); what it needs in a worker (the target
tokenizer) it builds on request (:meth:`RowCodec.target_reader`).
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass
from typing import Callable, ClassVar, Dict, List, Optional, Tuple

import numpy as np

from fairseq_tree.data.binarize import ArrayBuilder, encode, token_dtype, write_dataset
from fairseq_tree.data.class_labels import CLASSIFICATION_JSON, NO_TARGET, ClassScheme, node_inputs, tree_targets
from fairseq_tree.inference.input_policy import length_fix, over_length
from fairseq_tree.preprocess import columns as C
from fairseq_tree.preprocess.config import PreprocessConfig
from fairseq_tree.preprocess.shards import (
    TARGET_DTYPE,
    TARGET_KEYS,
    LineErrors,
    PreprocessError,
    Shard,
    atomic_path,
    atomic_write_text,
    compact_to_tree,
    tree_to_compact,
)
from fairseq_tree.text.tokenize import InputError, Tokenizer
from fairseq_tree.trees import Tree, TreeFormatError, expand_subwords, labelled_tree_from_brackets, tree_from_brackets

#: a stage's result from the codec: (sentences kept, counts of the training split by role)
BpeResult = Tuple[int, Dict[str, Dict[str, int]]]


class RowCodec:
    """The points where the modes differ (see the module docstring); the base class is the part they share."""

    #: the suffix of the target role's files (``FP.SUFFIX``), None: no target file
    target_suffix: Optional[str] = None
    #: the language of target sentences (datasets ``{split}.SRC-TGT.TGT``, ``dict.TGT.txt``), None: none
    target_lang: Optional[str] = None
    #: datasets beside the source tree's, one per key (classification's targets)
    target_keys: Tuple[str, ...] = ()

    # ---------------------------------------------------------------- the pipeline
    def write_scheme(self, destdir: str) -> None:
        """Write what a data directory of this mode holds besides dictionaries and codes (nothing by default)."""

    def output_prefixes(self, destdir: str, split: str, src: str) -> Dict[str, str]:
        """The merged datasets of a split, by output key (fairseq-preprocess's names)."""
        base = dataset_prefix(destdir, split, src, self.target_lang, src)
        out = {"leaves": base, "nodes": base + ".nodes", "spans": base + ".spans"}
        if self.target_lang is not None:
            out["tgt"] = dataset_prefix(destdir, split, src, self.target_lang, self.target_lang)
        out.update({k: f"{base}.{k}" for k in self.target_keys})
        return out

    def dataset_dtypes(self, dicts: Dict) -> Dict[str, object]:
        """The element type of every output dataset (``dicts``: role -> fairseq Dictionary)."""
        dtypes = {"leaves": token_dtype(dicts["src"]), "nodes": token_dtype(dicts["labels"]), "spans": np.int32}
        if self.target_lang is not None:
            dtypes["tgt"] = token_dtype(dicts["tgt"])
        dtypes.update({k: TARGET_DTYPE for k in self.target_keys})
        return dtypes

    def split_report(self, roles: Dict[str, str], stats: Counter, bin_meta: dict, filtered: List[dict]) -> dict:
        """The mode's entries of a split in ``preprocess.json`` (``stats``: the split's folded binarize stats)."""
        raise NotImplementedError

    # ---------------------------------------------------------------- stage 1: parse
    def target_reader(self, tokenize: str) -> Optional[Callable[[str], List[str]]]:
        """In a worker: text of the target field -> its tokens (raises InputError); None without a target file."""
        raise NotImplementedError

    def read_tree(self, raw: str, unary: str) -> Tree:
        """A bracketed tree of the source; InputError(reason, message) when it is not one."""
        try:
            return tree_from_brackets(raw, unary=unary)
        except TreeFormatError as e:
            raise InputError("malformed_tree", f"malformed tree: {e.message}") from None

    def view_filter(self, tree: Tree, target: Optional[List[str]]) -> Optional[Tuple[str, str]]:
        """``(reason, message)`` when a good line is left out by design, else None."""
        return None

    def bpe_words(self, target: List[str]) -> List[str]:
        """The words of a target row that BPE is learned on and counted."""
        return target

    # ---------------------------------------------------------------- stage 2: bpe
    def bpe(self, shard: Shard, base: str, paths: Dict[str, str], table: C.PieceTable, max_positions: int,
            errors: LineErrors) -> BpeResult:
        """``base.parsed.tsv`` -> the subword rows of the binarize stage; too long sentences reported."""
        raise NotImplementedError

    # ---------------------------------------------------------------- stage 3: binarize
    def binarize(self, base: str, prefixes: Dict[str, str], dicts: Dict) -> dict:
        """The bpe stage's rows -> the shard's datasets; returns ``{"stats": ..., ...}`` for the shard's meta."""
        raise NotImplementedError


def dataset_prefix(destdir: str, split: str, src: str, tgt: Optional[str], lang: str) -> str:
    """fairseq-preprocess's naming: ``{split}.{src}-{tgt}.{lang}`` (``tgt`` is ``None`` with --only-source)."""
    return os.path.join(destdir, f"{split}.{src}-{tgt}.{lang}")


def make_codec(cfg: PreprocessConfig) -> RowCodec:
    """The codec of ``cfg.task``."""
    return {"translation": TranslationCodec, "classification": ClassificationCodec}[cfg.task].from_config(cfg)

# --------------------------------------------------------------------------------------------------
# translation
# --------------------------------------------------------------------------------------------------


@dataclass
class TranslationCodec(RowCodec):
    """Source trees and target sentences (``--only-source``: source trees only); the bpe and binarize stages
    handle a shard as columns (:mod:`fairseq_tree.preprocess.columns`)."""

    target_lang: Optional[str] = None

    @classmethod
    def from_config(cls, cfg: PreprocessConfig) -> "TranslationCodec":
        if not cfg.only_source and not cfg.target_lang:
            raise PreprocessError("--target-lang is required unless --only-source is given")
        return cls(None if cfg.only_source else cfg.target_lang)

    @property
    def target_suffix(self) -> Optional[str]:
        return self.target_lang

    def split_report(self, roles, stats, bin_meta, filtered) -> dict:
        return {k: stats[k] for k in ("target_tokens", "target_unk")} if "tgt" in roles else {}

    def target_reader(self, tokenize: str):
        return Tokenizer(tokenize, self.target_lang) if self.target_lang else None

    def bpe(self, shard, base, paths, table, max_positions, errors) -> BpeResult:
        """Every column of the shard at once -> ``.bpe.npz``."""
        cols = C.read_parsed(base + ".parsed.tsv")
        n = len(cols[0])
        linenos = np.asarray([int(x) for x in cols[0]], dtype=np.int64)  # [S]
        words, word_sizes = C.split_column(cols[2])
        labels, node_sizes = C.split_column(cols[4])
        spans_f = [f for f in cols[5] if f]
        spans = (np.fromstring(" ".join(spans_f), dtype=np.int64, sep=" ") if spans_f
                 else np.zeros(0, np.int64)).reshape(-1, 2)  # [M, 2]
        has_tgt = self.target_lang is not None
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
                              paths, max_positions, errors)
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

    def binarize(self, base, prefixes, dicts) -> dict:
        """A ``.bpe.npz`` -> the shard's datasets: every shard-local string is looked up in its dictionary once,
        then each column is one gather and one write (the bytes of one ``add_item`` per sentence)."""
        with np.load(base + ".bpe.npz") as z:
            a = {k: z[k] for k in z.files}
        pieces, labels = C.vocab_from_bytes(a["pieces"]), C.vocab_from_bytes(a["labels"])

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
        return {"stats": stats}


def _length_filter(linenos, src_len, tgt_len, no_tgt, paths, max_positions: int, errors: LineErrors):
    """Sentences within --max-positions and with target tokens [S] (bool); the others are reported in line
    order (source length first). ``no_tgt`` [S] marks targets with no token (None: no targets)."""
    bad_src = src_len > max_positions
    no_tgt = np.zeros(len(src_len), dtype=bool) if no_tgt is None else no_tgt
    bad_tgt = ~no_tgt & (tgt_len + 1 > max_positions)
    for i in np.flatnonzero(bad_src | bad_tgt | no_tgt).tolist():
        if bad_src[i]:
            too_long(errors, paths["src"], int(linenos[i]), "source", int(src_len[i]), "leaves + nodes", max_positions)
        elif no_tgt[i]:
            errors.add(paths["tgt"], int(linenos[i]), "empty_line", "no target tokens after tokenization")
        else:
            too_long(errors, paths["tgt"], int(linenos[i]), "target", int(tgt_len[i]) + 1, "tokens (with EOS)",
                     max_positions)
    return ~(bad_src | bad_tgt | no_tgt)


def too_long(errors: LineErrors, path: str, lineno: int, side: str, size: int, unit: str, max_positions: int) -> None:
    """Report a line over ``--max-positions`` (the policy of :mod:`fairseq_tree.inference.input_policy`): with
    ``--on-error fail`` the message names the two options that change it, with ``skip`` it is listed as it is."""
    message = over_length(side, size, unit, max_positions, "--max-positions")
    if errors.on_error == "fail":
        message += ": " + length_fix("--on-error skip to leave such lines out (each one listed in preprocess.json)",
                                     "--max-positions")
    errors.add(path, lineno, "too_long", message)


def _count(ids, strings: List[str]) -> Dict[str, int]:
    """Occurrences of every string (``strings[i]`` for id ``i``) among ``ids`` (the absent ones left out)."""
    counts = np.bincount(ids, minlength=len(strings))
    return {strings[i]: int(counts[i]) for i in np.flatnonzero(counts).tolist()}

# --------------------------------------------------------------------------------------------------
# classification
# --------------------------------------------------------------------------------------------------


@dataclass
class ClassificationCodec(RowCodec):
    """Trees and their classes (:mod:`fairseq_tree.data.class_labels`): the label file, if any, takes the target's
    role (read, checked and counted in line with the source, never BPE-split); a class-labelled tree keeps its
    classes in ``labels``/``tags`` until the binarize stage turns them into targets and node inputs. The bpe and
    binarize stages go one sentence at a time (``.bpe.tsv`` rows): the targets need each tree."""

    scheme: ClassScheme
    labels: str  # nodes | file
    node_inputs: str  # symbol | syntax
    unary: str  # recorded in classification.json
    label_suffix: Optional[str] = None  # --labels file: the label files' suffix (-t)
    target_keys: ClassVar[Tuple[str, ...]] = TARGET_KEYS

    @classmethod
    def from_config(cls, cfg: PreprocessConfig) -> "ClassificationCodec":
        return cls(ClassScheme.make(cfg.num_classes, cfg.class_names, cfg.binary), cfg.labels, cfg.node_inputs,
                   cfg.unary, cfg.target_lang if cfg.labels == "file" else None)

    @property
    def target_suffix(self) -> Optional[str]:
        return self.label_suffix

    def write_scheme(self, destdir: str) -> None:
        atomic_write_text(os.path.join(destdir, CLASSIFICATION_JSON), self.scheme.to_json(
            labels=self.labels, node_inputs=self.node_inputs, unary=self.unary))

    def split_report(self, roles, stats, bin_meta, filtered) -> dict:
        """Sentences per class, labelled nodes and leaves, lines dropped by the view (the neutral roots of
        --binary) with their line numbers."""
        classes: Counter = Counter(bin_meta.get("class_counts", {}))
        return {"sentences_per_class": dict(sorted(classes.items())),
                "labelled_nodes": stats["labelled_nodes"], "labelled_leaves": stats["labelled_leaves"],
                "filtered": len(filtered), "filtered_by_reason": dict(Counter(e["reason"] for e in filtered)),
                "filtered_lines": [e["line"] for e in filtered]}

    def target_reader(self, tokenize: str):
        return self._class_label if self.label_suffix else None

    def _class_label(self, text: str) -> List[str]:
        try:
            return [self.scheme.check_label(text)]
        except ValueError as e:
            raise InputError("bad_label", str(e)) from None

    def read_tree(self, raw: str, unary: str) -> Tree:
        if self.labels != "nodes":
            return super().read_tree(raw, unary)
        try:
            return labelled_tree_from_brackets(raw, self.scheme.names)
        except TreeFormatError as e:
            raise InputError("bad_labelled_tree", e.message) from None

    def view_filter(self, tree, target):
        if self.scheme.binary and tree_targets(tree, self.scheme, target[0] if target else None)[0] == NO_TARGET:
            return "neutral_root", "the sentence is neutral: no class in the binary view"
        return None

    def bpe_words(self, target: List[str]) -> List[str]:
        return []  # classes are not words (no BPE on them)

    def bpe(self, shard, base, paths, table, max_positions, errors) -> BpeResult:
        """One sentence at a time -> ``.bpe.tsv`` rows."""
        segment = table.segment
        rows = _read_kept_parsed(base + ".parsed.tsv")
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
            labels = node_inputs(labels, self.node_inputs)  # the target field is a class
            src_len = len(words) + len(labels)
            if src_len > max_positions:
                too_long(errors, paths["src"], lineno, "source", src_len, "leaves + nodes", max_positions)
                continue
            if shard.split == "train":
                counts["src"].update(words)
                counts["labels"].update(labels)
            out.append(f"{lineno}\t{compact}\t{fields[6]}\n")
        atomic_write_text(base + ".bpe.tsv", "".join(out))
        return len(out), {k: dict(v) for k, v in counts.items()}

    def binarize(self, base, prefixes, dicts) -> dict:
        """One sentence at a time: the class targets need each tree. Returns the stats and the class counts."""
        with open(base + ".bpe.tsv", encoding="utf-8") as f:
            rows = [line.split("\t") for line in f.read().split("\n") if line]
        builders = {"leaves": ArrayBuilder(prefixes["leaves"] + ".tmp", token_dtype(dicts["src"])),
                    "nodes": ArrayBuilder(prefixes["nodes"] + ".tmp", token_dtype(dicts["labels"])),
                    "spans": ArrayBuilder(prefixes["spans"] + ".tmp", np.int32)}
        builders.update({k: ArrayBuilder(prefixes[k] + ".tmp", TARGET_DTYPE) for k in TARGET_KEYS})
        stats, class_counts = Counter(), Counter()
        for fields in rows:
            words = fields[1].split(" ")
            spans = [int(x) for x in fields[4].split(" ")] if fields[4] else []
            labels = self._add_targets(compact_to_tree(fields[1:5]), fields[5], builders, stats, class_counts)
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
        return {"stats": dict(stats), "class_counts": dict(class_counts)}

    def _add_targets(self, tree: Tree, label_field: str, builders: dict, stats: Counter,
                     class_counts: Counter) -> List[str]:
        """Write the targets of one subword tree; returns the node labels to binarize as inputs."""
        sentence_label = label_field if self.labels == "file" else None
        target, node_t, leaf_t = tree_targets(tree, self.scheme, sentence_label)
        builders["target"].add([target])
        builders["node_target"].add(node_t)
        builders["leaf_target"].add(leaf_t)
        stats["labelled_nodes"] += sum(t != NO_TARGET for t in node_t)
        stats["labelled_leaves"] += sum(t != NO_TARGET for t in leaf_t)
        class_counts[self.scheme.classes[target]] += 1
        return node_inputs(tree.labels, self.node_inputs)


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
