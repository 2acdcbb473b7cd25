"""The row codecs (fairseq_tree/preprocess/codecs.py), each against hand-written rows: what the parse stage reads
and keeps, the bpe stage's rows and length checks, the binarize stage's datasets, the outputs and the report."""

import json

import pytest
from fairseq.data import data_utils

from fairseq_tree.data.binarize import build_dictionary
from fairseq_tree.preprocess.codecs import ClassificationCodec, TranslationCodec, make_codec
from fairseq_tree.preprocess.columns import PieceTable
from fairseq_tree.preprocess.config import PreprocessConfig
from fairseq_tree.preprocess.shards import LineErrors, PreprocessError, Shard, tree_to_compact
from fairseq_tree.text.bpe import Segmenter
from fairseq_tree.text.tokenize import InputError
from fairseq_tree.trees import labelled_tree_from_brackets, tree_from_brackets

DOG = "(S (NP (DT The) (NN dog)) (VP (VBD barked)))"
CAT = "(S (NP (DT A) (NN cat)) (VP (VBD sat)))"
SST = "(3 (2 The) (4 (3 good) (2 film)))"
NEUTRAL = "(2 (2 It) (2 (2 is) (2 .)))"
SHARD = Shard("train", 0, 1, 3, {})
PATHS = {"src": "train.en", "tgt": "train.xx"}


def parsed_row(lineno, raw, tree, target=""):
    """A ``.parsed.tsv`` row as the parse stage writes it (``tree`` None: a skipped line)."""
    fields = tree_to_compact(tree) if tree is not None else "\t\t\t"
    return f"{lineno}\t{raw}\t{fields}\t{target if tree is not None else ''}\t{'' if tree is not None else 'x'}\n"


def load(prefix):
    ds = data_utils.load_indexed_dataset(str(prefix), None, dataset_impl="mmap")
    return [ds[i].tolist() for i in range(len(ds))]


def dicts_of(counts):
    return {role: build_dictionary(c, padding_factor=8 if role != "labels" else 1) for role, c in counts.items()}


def test_make_codec_picks_the_task():
    t = make_codec(PreprocessConfig(task="translation", source_lang="en", target_lang="xx"))
    assert t == TranslationCodec("xx") and (t.target_suffix, t.target_lang, t.target_keys) == ("xx", "xx", ())
    assert make_codec(PreprocessConfig(source_lang="en", target_lang="xx", only_source=True)).target_lang is None
    with pytest.raises(PreprocessError, match="--target-lang is required"):
        make_codec(PreprocessConfig(source_lang="en"))
    c = make_codec(PreprocessConfig(task="classification", source_lang="en", target_lang="label", labels="file"))
    assert (c.target_suffix, c.target_lang, c.target_keys) == ("label", None, ("target", "node_target", "leaf_target"))
    n = make_codec(PreprocessConfig(task="classification", source_lang="txt", labels="nodes", binary=True))
    assert n.target_suffix is None and n.scheme.binary


def test_output_prefixes_follow_fairseq_preprocess():
    assert TranslationCodec("xx").output_prefixes("d", "train", "en") == {
        "leaves": "d/train.en-xx.en", "nodes": "d/train.en-xx.en.nodes", "spans": "d/train.en-xx.en.spans",
        "tgt": "d/train.en-xx.xx"}
    assert list(TranslationCodec(None).output_prefixes("d", "valid", "en")) == ["leaves", "nodes", "spans"]
    c = make_codec(PreprocessConfig(task="classification", source_lang="txt", labels="nodes"))
    assert c.output_prefixes("d", "train", "txt")["node_target"] == "d/train.txt-None.txt.node_target"


def test_translation_parse_points():
    codec = TranslationCodec("xx")
    assert codec.target_reader("none")("der  hund") == ["der", "hund"]
    assert TranslationCodec(None).target_reader("none") is None
    assert codec.read_tree(DOG, "lowest").words == ["The", "dog", "barked"]
    with pytest.raises(InputError) as e:
        codec.read_tree("(S (NP the", "lowest")
    assert e.value.reason == "malformed_tree" and e.value.message.startswith("malformed tree: ")
    assert codec.view_filter(tree_from_brackets(DOG), ["der"]) is None
    assert codec.bpe_words(["der", "hund"]) == ["der", "hund"]


def test_classification_parse_points():
    nodes = ClassificationCodec.from_config(PreprocessConfig(task="classification", labels="nodes", binary=True))
    assert nodes.target_reader("moses") is None
    assert nodes.read_tree(SST, "lowest").labels == ["4", "3"]
    with pytest.raises(InputError) as e:
        nodes.read_tree("((2 The) (2 Rock))", "lowest")
    assert e.value.reason == "bad_labelled_tree" and "has no class label" in e.value.message
    assert nodes.view_filter(labelled_tree_from_brackets(NEUTRAL, nodes.scheme.names), None)[0] == "neutral_root"
    assert nodes.view_filter(labelled_tree_from_brackets(SST, nodes.scheme.names), None) is None
    file = ClassificationCodec.from_config(PreprocessConfig(task="classification", labels="file", target_lang="label"))
    assert file.target_reader("moses")(" 4 ") == ["4"]
    with pytest.raises(InputError) as e:
        file.target_reader("moses")("9")
    assert e.value.reason == "bad_label"
    assert file.read_tree(DOG, "lowest").labels == tree_from_brackets(DOG).labels  # a parsed tree
    assert file.view_filter(tree_from_brackets(DOG), ["2"]) is None  # 5 classes: 2 is a class
    assert file.bpe_words(["4"]) == []  # classes are not words


def test_translation_bpe_and_binarize_columns(tmp_path):
    codec = TranslationCodec("xx")
    base = str(tmp_path / "train.00000")
    with open(base + ".parsed.tsv", "w") as f:
        f.write(parsed_row(1, DOG, tree_from_brackets(DOG), "der hund bellte")
                + parsed_row(2, "(S", None)
                + parsed_row(3, CAT, tree_from_brackets(CAT), "eine katze sass auf der matte"))
    errors = LineErrors("skip")
    kept, counts = codec.bpe(SHARD, base, PATHS, PieceTable(Segmenter(None)), 6, errors)
    # line 3's target has 6 tokens + EOS > 6: reported against the target file, the pair dropped
    assert kept == 1 and [(e["file"], e["line"], e["reason"]) for e in errors.skipped] == [("train.xx", 3, "too_long")]
    assert counts["tgt"] == {"der": 1, "hund": 1, "bellte": 1} and counts["src"]["dog"] == 1
    dicts = dicts_of(counts)
    prefixes = {k: str(tmp_path / k) for k in ("leaves", "nodes", "spans", "tgt")}
    out = codec.binarize(base, prefixes, dicts)
    assert out["stats"]["sentences"] == 1 and out["stats"]["target_tokens"] == 4 and set(out) == {"stats"}
    assert [dicts["src"][i] for i in load(prefixes["leaves"])[0]] == ["The", "dog", "barked"]
    assert [dicts["tgt"][i] for i in load(prefixes["tgt"])[0]] == ["der", "hund", "bellte", "</s>"]
    assert load(prefixes["spans"]) == [[x for s in tree_from_brackets(DOG).spans for x in s]]
    assert codec.split_report({"src": "a", "tgt": "b"}, out["stats"], {}, []) == {"target_tokens": 4, "target_unk": 0}
    assert codec.split_report({"src": "a"}, out["stats"], {}, []) == {}


def test_classification_bpe_and_binarize_rows(tmp_path):
    codec = ClassificationCodec.from_config(PreprocessConfig(task="classification", labels="nodes"))
    base = str(tmp_path / "train.00000")
    trees = [labelled_tree_from_brackets(t, codec.scheme.names) for t in (SST, NEUTRAL)]
    with open(base + ".parsed.tsv", "w") as f:
        f.write(parsed_row(1, SST, trees[0]) + parsed_row(2, "((", None) + parsed_row(3, NEUTRAL, trees[1]))
    errors = LineErrors("skip")
    kept, counts = codec.bpe(SHARD, base, PATHS, PieceTable(Segmenter(None)), 5, errors)
    # leaves + nodes: 3 + 2 = 5 (kept), 3 + 2 = 5 (kept); then with 4, both too long
    assert kept == 2 and not errors.skipped and counts["labels"] == {"X": 4} and "tgt" in counts
    errors = LineErrors("skip")
    assert codec.bpe(SHARD, str(tmp_path / "train.00000"), PATHS, PieceTable(Segmenter(None)), 4, errors)[0] == 0
    assert [e["reason"] for e in errors.skipped] == ["too_long", "too_long"]
    codec.bpe(SHARD, base, PATHS, PieceTable(Segmenter(None)), 5, LineErrors("fail"))
    dicts = dicts_of(counts)
    prefixes = {k: str(tmp_path / k) for k in ("leaves", "nodes", "spans", *codec.target_keys)}
    out = codec.binarize(base, prefixes, dicts)
    assert out["class_counts"] == {"3": 1, "2": 1} and out["stats"]["labelled_nodes"] == 4
    assert load(prefixes["target"]) == [[3], [2]]
    assert load(prefixes["node_target"]) == [[4, 3], [2, 2]]
    assert load(prefixes["leaf_target"]) == [[2, 3, 2], [2, 2, 2]]
    report = codec.split_report({}, out["stats"], out, [{"reason": "neutral_root", "line": 7}])
    assert report == {"sentences_per_class": {"2": 1, "3": 1}, "labelled_nodes": 4, "labelled_leaves": 6,
                      "filtered": 1, "filtered_by_reason": {"neutral_root": 1}, "filtered_lines": [7]}
    codec.write_scheme(str(tmp_path))
    scheme = json.loads((tmp_path / "classification.json").read_text())
    assert scheme["classes"] == ["0", "1", "2", "3", "4"] and scheme["labels"] == "nodes"


def test_segmenter_prepares_each_word_type_once(tmp_path):
    """``Segmenter.prepare`` segments only the word types it has not cached (one batch per call); the empty
    string is left to the per-word path; a word of one piece is kept as the word."""
    codes = tmp_path / "codes"
    codes.write_text("#version: 0.2\nc a\nca t</w>\n", encoding="utf-8")
    seg = Segmenter(str(codes))
    seg.prepare(["cat", "cats", "cat"])
    assert seg.cache == {"cat": ["cat"], "cats": ["ca@@", "t@@", "s"]}
    batches = []
    encode = seg.batch.encode
    seg.batch.encode = lambda words: batches.append(sorted(words)) or encode(words)
    seg.prepare(["cat", "cow", "", "cats"])
    assert batches == [["cow"]] and seg.cache["cow"] == ["c@@", "o@@", "w"] and "" not in seg.cache
