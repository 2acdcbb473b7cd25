"""Scores read from fairseq's own output files (fairseq_tree/evaluation/translation_runs.py), on a fairseq-generate
log written out by hand in fairseq's format, and the table cells of ``mean ± sd``: bugs of one line that
tests/unit/test_translation_runs.py let through (scripts/mutation/, docs/development.md)."""

import pytest

from fairseq_tree.evaluation.translation_runs import (
    RunError,
    detokenize,
    fairseq_bleu,
    generate_lines,
    mean_sd,
    sacrebleu_score,
)

# fairseq-generate prints the sentences of a batch as they finish, not in id order
GEN = """2026-11-27 10:00:00 | INFO | fairseq_cli.generate | loading model(s) from ckpt/checkpoint_best.pt
S-1\ttwo men play football .
T-1\tzwei männer spielen fußball .
H-1\t-0.3120\tzwei männer spielen fußball .
D-1\t-0.3120\tzwei männer spielen fußball .
P-1\t-0.1 -0.2 -0.3 -0.4 -0.5 -0.6
S-0\ta dog runs .
T-0\tein hund läuft .
H-0\t-0.5000\tein hund rennt .
D-0\t-0.5000\tein hund rennt .
P-0\t-0.4 -0.5 -0.6 -0.7 -0.8
2026-11-27 10:00:01 | INFO | fairseq_cli.generate | Translated 2 sentences (11 tokens) in 0.1s
Generate test with beam=5: BLEU4 = 35.20, 66.9/42.3/28.6/19.6 (BP=1.000, ratio=1.010, syslen=11, reflen=11)
"""


def test_the_lines_of_a_generate_log_in_sentence_order(tmp_path):
    gen = tmp_path / "test.gen"
    gen.write_text(GEN, encoding="utf-8")
    assert generate_lines(gen, "H") == ["ein hund rennt .", "zwei männer spielen fußball ."]
    assert generate_lines(gen, "D") == generate_lines(gen, "H")
    assert generate_lines(gen, "T") == ["ein hund läuft .", "zwei männer spielen fußball ."]
    assert generate_lines(gen, "S") == ["a dog runs .", "two men play football ."]
    assert fairseq_bleu(gen) == 35.20
    gen.write_text(GEN.replace("H-0\t", "H-2\t"), encoding="utf-8")  # a sentence missing, another numbered 2
    with pytest.raises(RunError, match=r"H- lines for 2 sentences, not ids 0\.\.1"):
        generate_lines(gen, "H")
    with pytest.raises(RunError, match=r"no X- lines"):
        generate_lines(gen, "X")
    with pytest.raises(RunError, match=r"missing \(the run has not finished"):
        generate_lines(tmp_path / "none.gen", "H")


def test_sacrebleu_needs_one_hypothesis_per_reference():
    refs = ["Ein Hund läuft.", "Zwei Männer spielen Fußball."]
    score, signature = sacrebleu_score(refs, refs)
    assert score == pytest.approx(100.0) and "nrefs:1" in signature
    with pytest.raises(RunError, match=r"^1 hypotheses for 2 references$"):
        sacrebleu_score(refs[:1], refs)


def test_detokenization_follows_the_language():
    """Moses' rules differ by language: French elisions join the next word, English clitics the previous one."""
    assert detokenize(["l' homme dit « bonjour » ."], "fr") == ["l'homme dit « bonjour »."]
    assert detokenize(["it 's a man ."], "en") == ["it's a man."]
    assert detokenize(["ein Mann , der läuft ."], "de") == ["ein Mann, der läuft."]


def test_mean_and_sample_sd_as_the_tables_print_them():
    assert mean_sd([41.0, 40.0]) == "40.50 ± 0.71"
    assert mean_sd([0.2, 0.7], signed=True) == "+0.45 ± 0.35"
    assert mean_sd([-0.9, -0.2, -0.58], signed=True) == "-0.56 ± 0.35"
    assert mean_sd([41.24]) == "41.24 (one seed)"
