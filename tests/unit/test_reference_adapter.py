"""scripts/reference/authors_structformer.py, the data adapter of the authors' StructFormer runs: the batch count
their batchify makes (the recipe turns update counts into epochs with it), their nested-list trees written for
fairseq-tree-score, and our dictionary's words handed to their Dictionary in order."""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def adapter():
    spec = importlib.util.spec_from_file_location("authors_structformer",
                                                  ROOT / "scripts/reference/authors_structformer.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_batches_as_their_batchify(adapter):
    # sorted 1 2 3 4 5 6: batches close once they hold >= 5 words: [1 2 3] [4 5] [6] -> 3
    assert adapter.batches([6, 1, 5, 2, 4, 3], 5) == 3
    assert adapter.batches([5, 5], 5) == 2  # each sentence fills a batch alone
    assert adapter.batches([1, 1], 5) == 1  # a last batch that never fills still counts
    assert adapter.batches([], 5) == 0


def test_bracket_writes_gold_spelling(adapter):
    words = ["The", "cat", "sat", "down"]
    assert adapter.bracket([[0, 1], [2, 3]], words) == "(X (X The cat) (X sat down))"
    assert adapter.bracket([0, 1, [2, 3]], words) == "(X The cat (X sat down))"  # n-ary where distances tie


def test_fairseq_words_in_order_without_specials(adapter, tmp_path):
    d = tmp_path / "dict.txt"
    d.write_text("the 10\n<unk> 3\ncat 2\nmadeupword0000 0\n", encoding="utf-8")
    assert adapter.fairseq_words(d) == ["the", "cat"]
    d.write_text("the 10\nbroken\n", encoding="utf-8")
    with pytest.raises(SystemExit, match="dict.txt:2"):
        adapter.fairseq_words(d)
