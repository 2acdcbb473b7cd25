"""fairseq-tree-preprocess --task classification (fairseq_tree/preprocess/codecs.py) on SST dev, run in this process
and read back: each sentence's leaves are its words (no EOS), its nodes one per labelled span, its target the root's
class. A bug of one line that tests/unit/test_preprocess_codecs.py let through (scripts/mutation/,
docs/development.md)."""

import pytest
from conftest import SHARED
from fairseq.data import Dictionary, data_utils

from fairseq_tree.trees import labelled_tree_from_brackets

SST = SHARED / "data" / "sst" / "dev.txt"
CLASSES = ("0", "1", "2", "3", "4")


def load(prefix):
    ds = data_utils.load_indexed_dataset(str(prefix), None, dataset_impl="mmap")
    return [ds[i].tolist() for i in range(len(ds))]


@pytest.mark.skipif(not SST.is_file(), reason="no shared SST")
def test_sst_sentences_read_back_as_their_words_nodes_and_classes(tmp_path):
    from fairseq_tree.cli.preprocess import cli_main

    lines = [line for line in SST.read_text(encoding="utf-8").splitlines() if line.strip()][:40]
    (tmp_path / "train.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert cli_main(["--task", "classification", "--labels", "nodes", "-s", "txt", "--trainpref",
                     str(tmp_path / "train"), "--destdir", str(tmp_path / "bin"), "--shard-size", "15"]) == 0
    bin_ = tmp_path / "bin"
    src = Dictionary.load(str(bin_ / "dict.txt.txt"))
    prefix = bin_ / "train.txt-None.txt"
    trees = [labelled_tree_from_brackets(line, CLASSES) for line in lines]
    assert [[src[i] for i in row] for row in load(prefix)] == [t.words for t in trees]
    assert [len(row) for row in load(f"{prefix}.nodes")] == [len(t.labels) for t in trees]
    assert [row[0] for row in load(f"{prefix}.target")] == [int(t.labels[-1]) for t in trees]


@pytest.mark.skipif(not SST.is_file(), reason="no shared SST")
def test_a_one_word_sentence_has_no_node_and_counts_none_in_the_node_dictionary(tmp_path):
    """``(3 good)``: one word, its class on the word itself, no labelled node. Its nodes row is empty, its target is
    3, and the node dictionary counts one entry per labelled node of the corpus (none for it)."""
    from fairseq_tree.cli.preprocess import cli_main

    lines = [line for line in SST.read_text(encoding="utf-8").splitlines() if line.strip()][:20]
    lines += ["(3 good)", "(4 (3 good) (4 fun))"]
    (tmp_path / "train.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert cli_main(["--task", "classification", "--labels", "nodes", "-s", "txt", "--trainpref",
                     str(tmp_path / "train"), "--destdir", str(tmp_path / "bin")]) == 0
    prefix = tmp_path / "bin" / "train.txt-None.txt"
    assert [len(row) for row in load(f"{prefix}.nodes")][-2:] == [0, 1]
    assert [row[0] for row in load(f"{prefix}.target")][-2:] == [3, 4]
    nodes = sum(len(labelled_tree_from_brackets(line, CLASSES).labels) for line in lines)
    assert (tmp_path / "bin" / "dict.txt.labels.txt").read_text() == f"X {nodes}\n"
