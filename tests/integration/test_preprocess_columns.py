"""The shard-level fast paths of fairseq-tree-preprocess against straightforward per-word / per-sentence
references: BatchBPE against subword-nmt's own ``segment_tokens``, numpy tree expansion against
``expand_subwords``, and a whole CLI run against a reference writer (one ``add_item`` per sentence)."""

import io
import json
import random
import tempfile

import numpy as np
import pytest
import torch
from conftest import SHARED
from fairseq.data import indexed_dataset
from test_preprocess import run_cli

from fairseq_tree.data.binarize import build_dictionary
from fairseq_tree.preprocess import columns as C
from fairseq_tree.text.bpe import BatchBPE, Segmenter, learn_codes
from fairseq_tree.text.tokenize import Tokenizer
from fairseq_tree.trees import (
    Tree,
    TreeFormatError,
    canonicalize,
    distances_to_tree,
    expand_subwords,
    parse_brackets,
    tree_from_brackets,
)
from fairseq_tree.trees.brackets import _one_tree_lowest

PTB = SHARED / "data" / "ptb_sample"
M30K = SHARED / "data" / "multi30k"


def subword_nmt(codes_text):
    from subword_nmt.apply_bpe import BPE

    return BPE(io.StringIO(codes_text), separator="@@")


def batch_pieces(codes_text, words):
    return BatchBPE(subword_nmt(codes_text)).encode(words)


# ------------------------------------------------------------------------------------------------ BatchBPE

@pytest.mark.parametrize("version", ["#version: 0.2\n", ""])  # "" = version 0.1: "</w>" is its own symbol
def test_batch_bpe_edge_cases(version):
    """Overlapping pairs (x x x -> xx x, left to right), a duplicated code (the first rank counts), merges whose
    result forms a cheaper pair later, characters no code knows, 1-character words, a literal "</w>"."""
    codes = version + "a a\naa a\na a\nb c\na bc\nabc </w>\nc </w>\na</w> a\nx y\nxy z\nz </w>\n< /\nw >\n"
    if version:
        codes += "a a</w>\nabc </w>\nc</w> c</w>\nbc </w>\nxy z</w>\n"
    words = ["aaa", "aaaa", "aaaaa", "abc", "abcabc", "bc", "a", "b", "é", "aéa", "xyz", "zxyz", "xyzz",
             "abc</w>", "</w>", "a</w>b", "ccc", "ééé", "ab", "ba", "😀a"]
    bpe = subword_nmt(codes)
    assert batch_pieces(codes, words) == [bpe.segment_tokens([w]) for w in words]


def test_batch_bpe_matches_subword_nmt_on_multi30k():
    """Every word type of 2,000 Multi30k sentence pairs (English and German, Moses-tokenized) with 2,000 merges
    learned on them: the same pieces as subword-nmt, word by word."""
    if not (M30K / "train.en").is_file():
        pytest.skip(f"{M30K} not found")
    counts = {}
    for lang in ("en", "de"):
        tok = Tokenizer("moses", lang)
        with open(M30K / f"train.{lang}", encoding="utf-8") as f:
            for _, line in zip(range(2000), f):
                for w in tok(line):
                    counts[w] = counts.get(w, 0) + 1
    with tempfile.TemporaryDirectory() as tmp:
        codes_path = f"{tmp}/codes"
        learn_codes(counts, 2000, codes_path)
        codes = open(codes_path, encoding="utf-8").read()
    words = sorted(counts) + ["Unbekanntes", "Zwölfjährige", "x"]
    bpe = subword_nmt(codes)
    expected = [bpe.segment_tokens([w]) for w in words]
    assert sum(len(p) > 1 for p in expected) > 300  # many words are split
    assert batch_pieces(codes, words) == expected
    # in batches, through the Segmenter's cache: the same again
    with tempfile.TemporaryDirectory() as tmp:
        open(f"{tmp}/codes", "w", encoding="utf-8").write(codes)
        seg = Segmenter(f"{tmp}/codes")
        seg.prepare(words[:500])
        seg.prepare(words)
        assert [seg.cache[w] for w in words] == expected


# ------------------------------------------------------------------------------------------------ trees

def _general(text):
    try:
        return canonicalize(parse_brackets(text))
    except TreeFormatError as e:
        return f"error: {e}"


def _read(text):
    try:
        return tree_from_brackets(text)
    except TreeFormatError as e:
        return f"error: {e}"


HARD_TREES = [
    "( (S (NP-SBJ-1 (DT The) (NN dog)) (VP (VBD ran))) )", "(ROOT (S (NP (NN dog)) (VP (VBZ barks))))",
    "(TOP (NN word))", "(S (NP (NN a)) (NP (-NONE- *T*-1)) (VP (VB b)))", "(S (NP (-NONE- *)) (VP (VB go)))",
    "(S (A (B (C (NN x) (NN y)))) (NN z))", "(X (NN -LRB-) (NN -RRB-) (NN -LCB-))", "(NP=2 (NN a) (NN b))",
    "(S (NP (NN a)) (VP (VB b))) (S (NP (NN c)) (VP (VB d)))", "(S (NN a) b)", "(S a b)", "(S (NN a) (NN b)",
    "(S (NN a)))", "(S ()) ", "()", "word", "(S (NN a) (NN b)) x", "(  S   (NN\ta )  (NN b ) )", "((S (NN a) (NN b)))",
    "(S (NN a) (VP (-NONE- *)) (NN b))", "(-LRB- (NN a) (NN b))", "(S-1 (NN a) (NN b))", "( (NN a) (NN b))",
]


def test_tree_reading_fast_path_is_the_general_reader():
    """tree_from_brackets's one-pass reader (unary=lowest) against the general one: the same tree or the same
    error on every PTB sample line (with and without empty elements) and on hand-made hard cases."""
    lines = (PTB / "train.mrg").read_text().splitlines() + (PTB / "valid.mrg").read_text().splitlines()
    fast = 0
    for text in lines + HARD_TREES:
        assert _read(text) == _general(text), text
        fast += _one_tree_lowest(text) is not None
    assert fast > 900  # the fast path did read the trees without empty elements
    assert isinstance(_read("(S (NN a) b)"), str) and isinstance(_read("(S (NN a) (NN b)"), str)


# ------------------------------------------------------------------------------------------------ columns

def test_expand_trees_matches_expand_subwords():
    """200 random binary and flat trees, random pieces per word: numpy expansion == per-tree expand_subwords."""
    rng = random.Random(0)
    trees, pieces = [], {}
    for i in range(200):
        n = rng.randint(1, 12)
        words = [f"w{i}_{j}" for j in range(n)]
        spans = [] if n == 1 else (distances_to_tree([rng.random() for _ in range(n - 1)]) if i % 3
                                   else [(0, n)])
        tags = [rng.choice(["NN", "VB", "X"]) for _ in words]
        trees.append(Tree(words, tags, [rng.choice(["S", "NP", "VP"]) for _ in spans], spans))
        for w in words:
            k = rng.choice([1, 1, 1, 2, 3])
            pieces[w] = [f"{w}.{p}@@" for p in range(k - 1)] + [f"{w}.{k - 1}"]
    expected = [expand_subwords(t, pieces.__getitem__) for t in trees]
    labels = C.Vocab()
    word_sizes = np.array([len(t.words) for t in trees])
    k = np.array([len(pieces[w]) for t in trees for w in t.words])
    tag_ids = labels.intern([g for t in trees for g in t.tags])
    node_sizes = np.array([len(t.labels) for t in trees])
    node_ids = labels.intern([lab for t in trees for lab in t.labels])
    spans = np.array([x for t in trees for x in t.flat_spans()], dtype=np.int64).reshape(-1, 2)
    sizes, ids, new_spans = C.expand_trees(word_sizes, k, tag_ids, node_sizes, node_ids, spans)
    starts = C.starts_of(sizes)
    for i, t in enumerate(expected):
        got = slice(starts[i], starts[i] + sizes[i])
        assert [labels.strings[j] for j in ids[got]] == t.labels
        assert [tuple(s) for s in new_spans[got].tolist()] == t.spans


# ------------------------------------------------------------------------------------------------ whole runs

def _corpus(tmp_path):
    """600 + 150 PTB trees (given) as the source; the target: the sentence lower-cased, words reversed,
    with a few very long targets (for the length filter) and unseen characters in valid."""
    d = tmp_path / "corpus"
    d.mkdir()
    for split, name, n in (("train", "train", 600), ("valid", "valid", 150)):
        trees = (PTB / f"{name}.mrg").read_text().splitlines()[:n]
        text = (PTB / f"{name}.txt").read_text().splitlines()[:n]
        tgt = [" ".join(reversed(t.lower().split())) for t in text]
        for i in range(5, n, 97):
            tgt[i] = " ".join([tgt[i]] * 12)
        for i in (3, 4, 10, 20) if split == "valid" else ():
            tgt[i] += " ζωή"
        (d / f"{split}.en").write_text("\n".join(trees) + "\n")
        (d / f"{split}.xx").write_text("\n".join(tgt) + "\n")
    return d


def _reference(corpus, split, codes, max_positions):
    """Per sentence, straight from the input files: (lineno, leaves, labels, flat spans, target pieces) of the
    kept sentences, and the line numbers of the skipped ones."""
    bpe = subword_nmt(codes)
    tok = Tokenizer("moses", "xx")
    src = (corpus / f"{split}.en").read_text().splitlines()
    tgt = (corpus / f"{split}.xx").read_text().splitlines()
    kept, skipped = [], []
    for lineno, (s, t) in enumerate(zip(src, tgt), 1):
        tree = expand_subwords(tree_from_brackets(" ".join(s.split())), lambda w: bpe.segment_tokens([w]))
        pieces = bpe.segment_tokens(tok(t))
        if len(tree.words) + len(tree.labels) > max_positions or len(pieces) + 1 > max_positions:
            skipped.append(lineno)
        else:
            kept.append((lineno, tree.words, tree.labels, tree.flat_spans(), pieces))
    return kept, skipped


def _write_reference(prefix, items, dtype):
    builder = indexed_dataset.MMapIndexedDatasetBuilder(f"{prefix}.bin", dtype=dtype)
    for item in items:
        builder.add_item(torch.tensor(item, dtype=torch.int64))
    builder.finalize(f"{prefix}.idx")


@pytest.mark.parametrize("joined", [False, True])
def test_run_is_byte_identical_to_a_per_sentence_reference(tmp_path, joined):
    """fairseq-tree-preprocess (2 workers, shards of 37 lines, learned BPE, a length filter) against datasets
    written one sentence at a time by fairseq's own builder from a reference built word by word with subword-nmt
    and ``expand_subwords``: the same dictionaries, the same bytes in every .bin/.idx, the same report."""
    if not (PTB / "train.mrg").is_file():
        pytest.skip(f"{PTB} not found")
    corpus, dest, max_positions = _corpus(tmp_path), tmp_path / "bin", 140
    run_cli("-s", "en", "-t", "xx", "--trainpref", corpus / "train", "--validpref", corpus / "valid",
            "--parser", "given", "--destdir", dest, "--bpe-merges", "400", "--workers", "2", "--shard-size", "37",
            "--max-positions", max_positions, "--on-error", "skip", *(["--joined-dictionary"] if joined else []))
    codes = (dest / "bpe.codes").read_text(encoding="utf-8")
    ref = {split: _reference(corpus, split, codes, max_positions) for split in ("train", "valid")}
    train = ref["train"][0]
    src_counts, tgt_counts, label_counts = {}, {}, {}
    for _, words, labels, _, pieces in train:
        for counts, items in ((src_counts, words), (tgt_counts, pieces), (label_counts, labels)):
            for x in items:
                counts[x] = counts.get(x, 0) + 1
    if joined:
        both = dict(src_counts)
        for w, c in tgt_counts.items():
            both[w] = both.get(w, 0) + c
        src_dict = tgt_dict = build_dictionary(both)
    else:
        src_dict, tgt_dict = build_dictionary(src_counts), build_dictionary(tgt_counts)
    label_dict = build_dictionary(label_counts, padding_factor=1)
    refdir = tmp_path / "ref"
    refdir.mkdir()
    for name, d in (("dict.en.txt", src_dict), ("dict.xx.txt", tgt_dict), ("dict.en.labels.txt", label_dict)):
        d.save(str(refdir / name))
        assert (refdir / name).read_bytes() == (dest / name).read_bytes(), name
    report = json.loads((dest / "preprocess.json").read_text())
    for split, (kept, skipped) in ref.items():
        assert [e["line"] for e in report["splits"][split]["skipped_lines"]] == skipped
        base = f"{split}.en-xx"
        columns = {
            "en": ([[src_dict.index(w) for w in k[1]] for k in kept], src_dict),
            "en.nodes": ([[label_dict.index(x) for x in k[2]] for k in kept], label_dict),
            "en.spans": ([k[3] for k in kept], None),
            "xx": ([[tgt_dict.index(p) for p in k[4]] + [tgt_dict.eos()] for k in kept], tgt_dict),
        }
        for suffix, (items, d) in columns.items():
            dtype = np.int32 if d is None else indexed_dataset.best_fitting_int_dtype(len(d))
            _write_reference(refdir / f"{base}.{suffix}", items, dtype)
            for ext in ("bin", "idx"):
                name = f"{base}.{suffix}.{ext}"
                assert (refdir / name).read_bytes() == (dest / name).read_bytes(), name
        r = report["splits"][split]
        assert r["sentences"] == len(kept) and r["skipped"] == len(skipped) > 0
        assert r["source_tokens"] == sum(len(k[1]) for k in kept)
        assert r["nodes"] == sum(len(k[2]) for k in kept)
        assert r["target_tokens"] == sum(len(k[4]) + 1 for k in kept)
        assert r["source_unk"] == sum(src_dict.index(w) == src_dict.unk() for k in kept for w in k[1])
        assert r["target_unk"] == sum(tgt_dict.index(p) == tgt_dict.unk() for k in kept for p in k[4])
    assert report["splits"]["valid"]["target_unk"] > 0  # the unseen characters
    assert sum(w.endswith("@@") for k in train for w in k[1]) > 1000  # BPE split many source words (new nodes)
