"""What every pass of fairseq-tree-preprocess reads and writes through fairseq_tree/preprocess/shards.py: a CRLF
corpus gives the bytes of its LF copy through the sharded pipeline, and the work directory's compact trees read back
as the trees written, on every tree of the PTB sample and of SST, and a shard's lines are read from its offset
(scripts/mutation/, docs/development.md)."""

import filecmp
import json
import os

import pytest
from conftest import SHARED

from fairseq_tree.preprocess.shards import compact_to_tree, tree_to_compact
from fairseq_tree.trees import labelled_tree_from_brackets, tree_from_brackets

PTB = SHARED / "data" / "ptb_sample"
SST = SHARED / "data" / "sst"


@pytest.mark.skipif(not (PTB / "valid.mrg").is_file() or not (SST / "dev.txt").is_file(), reason="no shared data")
def test_compact_trees_read_back_as_written():
    """tree_to_compact -> the four tab-separated fields of the work directory -> compact_to_tree: the same words,
    tags, labels and spans, for every tree of the PTB sample's valid split and of SST dev (class labels as tags and
    labels), and a one-word tree without a node."""
    trees = [tree_from_brackets(line) for line in (PTB / "valid.mrg").read_text(encoding="utf-8").splitlines()
             if line.strip()]
    trees += [labelled_tree_from_brackets(line, ("0", "1", "2", "3", "4"))
              for line in (SST / "dev.txt").read_text(encoding="utf-8").splitlines() if line.strip()]
    trees.append(tree_from_brackets("(S (UH Hi))"))  # one word: no node, empty label and span fields
    assert len(trees) == 273 + 1101 + 1 and trees[-1].labels == []
    for t in trees:
        row = tree_to_compact(t)
        assert row.count("\t") == 3
        assert compact_to_tree(row.split("\t")) == t


def _corpus(d, newline):
    trees = (PTB / "valid.mrg").read_text(encoding="utf-8").splitlines()[:30]
    text = [t.lower() for t in (PTB / "valid.txt").read_text(encoding="utf-8").splitlines()[:30]]
    d.mkdir()
    (d / "train.en").write_bytes((newline.join(trees) + newline).encode("utf-8"))
    (d / "train.xx").write_bytes((newline.join(text) + newline).encode("utf-8"))
    return d


@pytest.mark.skipif(not (PTB / "valid.mrg").is_file(), reason="no shared PTB sample")
def test_a_crlf_corpus_gives_the_bytes_of_its_lf_copy(tmp_path):
    """The same 30 trees and sentences with Windows line ends (CRLF), through fairseq-tree-preprocess in shards of
    7 lines and 2 worker processes: every output file equals the LF run's byte for byte (no ``\\r`` kept in a word,
    a tag or a target token), and nothing is skipped."""
    from fairseq_tree.cli.preprocess import cli_main

    out = {}
    for name, newline in (("lf", "\n"), ("crlf", "\r\n")):
        d = _corpus(tmp_path / name, newline)
        assert cli_main(["-s", "en", "-t", "xx", "--trainpref", str(d / "train"), "--parser", "given", "--destdir",
                         str(d / "bin"), "--bpe-merges", "100", "--shard-size", "7", "--workers", "2"]) == 0
        out[name] = d / "bin"
    names = sorted(f for f in os.listdir(out["lf"]) if (out["lf"] / f).is_file() and f != "preprocess.json")
    assert "train.en-xx.xx.bin" in names and sorted(os.listdir(out["crlf"])) == sorted(os.listdir(out["lf"]))
    assert [f for f in names if not filecmp.cmp(out["lf"] / f, out["crlf"] / f, shallow=False)] == []
    report = json.loads((out["crlf"] / "preprocess.json").read_text())["splits"]["train"]
    assert (report["sentences"], report["skipped"]) == (30, 0)
    assert "\r" not in (out["crlf"] / "dict.xx.txt").read_text(encoding="utf-8")


def test_a_shard_reads_its_lines_by_offset_and_no_further_than_the_file(tmp_path):
    """A shard's lines from its byte offset, line ends dropped (LF or CRLF); asking for more lines than the file
    has left gives the lines there are, not empty ones (which the parse stage would report as empty lines)."""
    from fairseq_tree.preprocess.shards import read_lines

    path = tmp_path / "train.en"
    path.write_bytes(b"one\r\ntwo words\nthree\r\n\xc3\xa9t\xc3\xa9")
    assert read_lines(str(path), 0, 2) == [b"one", b"two words"]
    assert read_lines(str(path), len(b"one\r\n"), 2) == [b"two words", b"three"]
    assert read_lines(str(path), len(b"one\r\ntwo words\n"), 10) == [b"three", "été".encode()]
