"""The inference library (:mod:`fairseq_tree.inference`): the one length-sorted batching helper, used by the
parser, the inducer, the classifier and the preprocessing parser backends (hand-written expected batches), and
the rule that library code (hub, backends, tasks, inference/) imports no CLI module."""

import re
from pathlib import Path

import pytest

from fairseq_tree.inference.batching import length_batches, restore_order

LENGTHS = [5, 2, 8, 2, 3, 9, 1]  # by length (stable): 6(1) 1(2) 3(2) 4(3) 0(5) 2(8) 5(9)


def test_batches_by_count_and_token_budget():
    batches = length_batches(LENGTHS, batch_size=3, max_tokens=12)
    # [6 1 3]: 3 items (count cap); [4 0]: 2 x 5 = 10 tokens (+ item 2 would be 3 x 8 = 24);
    # [2]: 8 (+ item 5 would be 2 x 9 = 18); [5]: 9
    assert batches == [[6, 1, 3], [4, 0], [2], [5]]
    for b in batches:
        lens = [LENGTHS[i] for i in b]
        assert lens == sorted(lens) and len(b) * max(lens) <= 12
    assert sorted(i for b in batches for i in b) == list(range(len(LENGTHS)))


def test_count_only_and_unsorted():
    assert length_batches(LENGTHS, 3) == [[6, 1, 3], [4, 0, 2], [5]]
    # input order; the budget counts the batch's longest item, not the newest one
    assert length_batches([5, 2, 8], 10, sort=False, max_tokens=12) == [[0, 1], [2]]
    assert length_batches([20, 1], 4, max_tokens=12) == [[1], [0]]  # over budget alone: still a batch
    assert length_batches([], 4) == []
    with pytest.raises(ValueError):
        length_batches([1], 0)


def test_restore_order():
    batches = length_batches(LENGTHS, batch_size=3, max_tokens=12)
    results = [[f"s{i}:{LENGTHS[i]}" for i in b] for b in batches]
    assert restore_order(batches, results) == [f"s{i}:{n}" for i, n in enumerate(LENGTHS)]
    with pytest.raises(ValueError):
        restore_order(batches, [r[:-1] for r in results])


def test_library_imports_no_cli():
    root = Path(__file__).resolve().parents[2] / "fairseq_tree"
    library = [p for p in root.rglob("*.py") if "cli" not in p.relative_to(root).parts]
    cli_import = re.compile(r"^\s*(from|import)\s+fairseq_tree\.cli\b", re.M)
    assert [str(p.relative_to(root)) for p in library if cli_import.search(p.read_text(encoding="utf-8"))] == []
