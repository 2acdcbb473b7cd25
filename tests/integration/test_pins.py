"""Four one-line bugs the rest of the suite let through (mutation testing, issue 28 item 8), pinned before code moves:
each test fails on its mutation and states the hand-computed value."""

import json
import math
import subprocess

from conftest import BIN

from fairseq_tree.evaluation.bracket_f1 import bracket_f1
from fairseq_tree.trees import tree_from_brackets


def preprocess(*args):
    proc = subprocess.run([str(BIN / "fairseq-tree-preprocess"), *map(str, args)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def test_tree_classification_loss_is_logged_in_bits():
    """fairseq's criterions log base 2: 10 ln 2 nats summed over 5 units -> 2.000 bits per unit (mutation: the
    `/ math.log(2)` dropped logs 1.386)."""
    from fairseq.logging import metrics

    from fairseq_tree.criterions.tree_classification import TreeClassificationCriterion

    with metrics.aggregate() as agg:
        TreeClassificationCriterion.reduce_metrics(
            [{"loss": 6 * math.log(2), "sample_size": 3, "nsentences": 1, "ncorrect": 1},
             {"loss": 4 * math.log(2), "sample_size": 2, "nsentences": 1, "ncorrect": 0}])
        values = agg.get_smoothed_values()
    assert values["loss"] == 2.0 and values["accuracy"] == 50.0


def test_target_of_exactly_max_positions_tokens_is_too_long(tmp_path):
    """--max-positions 4: "es regnete ." is 3 tokens + EOS = 4 (kept); "der hund bellte ." is 4 + EOS = 5 (dropped,
    reported at train.xx:1). Both sources are "It rained ." (3 leaves + the S node = 4 positions: within the
    limit), so only the target decides (mutation: `tgt_len >` for `tgt_len + 1 >` keeps both)."""
    src = "(S (NP (PRP It)) (VP (VBD rained)) (. .))"
    (tmp_path / "train.en").write_text(f"{src}\n{src}\n")
    (tmp_path / "train.xx").write_text("der hund bellte .\nes regnete .\n")
    preprocess("-s", "en", "-t", "xx", "--trainpref", tmp_path / "train", "--parser", "given", "--destdir",
               tmp_path / "bin", "--max-positions", "4", "--on-error", "skip")
    report = json.loads((tmp_path / "bin" / "preprocess.json").read_text())["splits"]["train"]
    assert (report["lines"], report["sentences"], report["skipped"]) == (2, 1, 1)
    (entry,) = report["skipped_lines"]
    assert entry["line"] == 1 and entry["reason"] == "too_long" and entry["file"].endswith("train.xx")
    assert "5 tokens (with EOS)" in entry["message"]


def test_classification_length_counts_words_and_nodes(tmp_path):
    """--max-positions 5: "(3 (2 a) (3 (2 b) (2 c)))" is 3 words + 2 nodes = 5 (kept); "(2 (2 a) (2 (2 b) (2 (2 c)
    (2 d))))" is 4 words (within 5) + 3 nodes = 7 (dropped) (mutation: the length check counting words only keeps
    both)."""
    (tmp_path / "train.txt").write_text("(3 (2 a) (3 (2 b) (2 c)))\n(2 (2 a) (2 (2 b) (2 (2 c) (2 d))))\n")
    preprocess("--task", "classification", "--labels", "nodes", "-s", "txt", "--trainpref", tmp_path / "train",
               "--destdir", tmp_path / "bin", "--max-positions", "5", "--on-error", "skip")
    report = json.loads((tmp_path / "bin" / "preprocess.json").read_text())["splits"]["train"]
    assert (report["lines"], report["sentences"], report["skipped"]) == (2, 1, 1)
    (entry,) = report["skipped_lines"]
    assert entry["line"] == 2 and entry["reason"] == "too_long" and "7 leaves + nodes" in entry["message"]


def test_evalb_len40_block_keeps_sentences_of_exactly_40_words():
    """EVALB's `len<=40` block: a sentence of 40 words is in it, one of 41 is not (mutation: `<` for `<=` drops the
    40-word one)."""
    def flat(n):
        return "(S " + " ".join(f"(NN w{i})" for i in range(n)) + ")"

    trees = [tree_from_brackets(flat(n), "join", one_word=True) for n in (40, 41, 3)]
    result = bracket_f1(trees, trees)
    assert result["sentences"] == 3 and result["len<=40"]["sentences"] == 2
