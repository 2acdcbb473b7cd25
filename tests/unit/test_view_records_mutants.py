"""What fairseq-tree-view's records put on the page (fairseq_tree/view/records.py): the SST view's root accuracy
over several sentences, and an attention dump's weights as the heat map's tooltip prints them. Bugs of one line that
tests/unit/test_view.py let through (its accuracy case is 1 of 2 right, which a count of the wrong ones gives too)
(scripts/mutation/, docs/development.md)."""

import json

from fairseq_tree.view import records


def test_the_sst_views_accuracy_is_the_share_of_right_roots(tmp_path):
    """4 trees, roots 3 1 4 0; predicted 3 1 4 2: 3 of 4 right -> 75.00."""
    trees, preds = tmp_path / "sst.txt", tmp_path / "pred.txt"
    trees.write_text("(3 (2 A) (3 good))\n(1 (2 No) (1 fun))\n(4 (4 lovely) (2 film))\n(0 (0 awful) (2 .))\n")
    preds.write_text("3\n1\n4\n2\n")
    sents, summary = records.sst_records(str(trees), str(preds))
    assert [s["bad"] for s in sents] == [0, 0, 0, 1]
    assert summary[0] == ["accuracy", "75.00"]


def test_attention_weights_keep_four_decimals(tmp_path):
    """The heat map's tooltip prints the record's weight: 1/3 -> 0.3333 and a weight of 0.00042 stays 0.0004 (not
    0.0, which would read as no attention at all)."""
    path = tmp_path / "att.jsonl"
    path.write_text(json.dumps({"words": ["a", "b"], "maps": {"m": [[1 / 3, 0.00042], [0.66666, 1]]}}) + "\n")
    (rec,), _ = records.attention_records(str(path))
    assert rec["att"][0]["v"] == [[0.3333, 0.0004], [0.6667, 1.0]]
