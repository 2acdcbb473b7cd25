"""Scores read from fairseq's own output files (fairseq_tree/evaluation/translation_runs.py), on a fairseq-generate
log and a resumed fairseq-train log written out by hand in fairseq's format, and the table cells of ``mean ± sd``:
bugs of one line that tests/unit/test_translation_runs.py let through (scripts/mutation/, docs/development.md)."""

import pytest

from fairseq_tree.evaluation.translation_runs import (
    RunError,
    Training,
    detokenize,
    devices,
    fairseq_bleu,
    generate_lines,
    mean_sd,
    paired_p,
    sacrebleu_score,
    training,
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


def _segment(cpu, epochs, walls, done=None):
    """The lines of one fairseq-train start (--log-format simple): its config, per epoch a train_inner line, the
    validation and the epoch summary, and the closing line when it ended by itself."""
    out = [f"2026-11-27 10:00:00 | INFO | fairseq_cli.train | {{'_name': None, 'common': {{'_name': None, "
           f"'log_format': 'simple', 'cpu': {cpu}, 'tpu': False}}}}"]
    for (epoch, loss, bsz), wall in zip(epochs, walls):
        n = 62 * epoch
        out += [f"2026-11-27 | INFO | train_inner | epoch {epoch:03d}:     50 / 62 loss=9.1, bsz={bsz}, "
                f"num_updates={n - 12}, train_wall=30, wall={wall - 10}",
                f"2026-11-27 | INFO | valid | epoch {epoch:03d} | valid on 'valid' subset | loss {loss} | "
                f"nll_loss 8.3 | bsz 50 | num_updates {n}",
                f"2026-11-27 | INFO | train | epoch {epoch:03d} | loss 9.0 | bsz {bsz} | num_updates {n} | "
                f"train_wall 35 | wall {wall}"]
    if done is not None:
        out.append(f"2026-11-27 | INFO | fairseq_cli.train | done training in {done} seconds")
    return out


def test_a_resumed_training_log_summed_by_hand(tmp_path):
    """A run begun on a GPU and killed in epoch 2 (its wall meter at 400 s), resumed on the CPU from epoch 1's
    checkpoint: fairseq's meter restarts (150 s at the end of the resumed epoch 2, 300 s when it finishes) and the
    second start logs "done training in 300.0 seconds". Minutes: the killed segment's 400 s + the last 300 s
    (more than the 300 s fairseq reports for the last start alone); bsz: the mean of the three epoch summaries."""
    log = tmp_path / "train.log"
    log.write_text("\n".join(_segment(False, [(1, 8.5, 64)], [200]) + [
        "2026-11-27 | INFO | train_inner | epoch 002:     50 / 62 loss=8.1, bsz=64, num_updates=112, wall=400"]
        + _segment(True, [(2, 7.25, 60), (3, 7.0, 62)], [150, 300], done=300.0)) + "\n")
    assert training(log) == Training(updates=186, epochs=3, minutes=700 / 60, device="gpu+cpu",
                                     valid_losses=[8.5, 7.25, 7.0], sentences_per_update=62.0)


def test_the_device_of_a_log_that_printed_a_namespace():
    """fairseq < 0.10 logged its args as a Namespace (no config dict): cpu=True is a CPU run even where the
    command line itself is not in the log, --cpu on the logged command line too, and neither is a GPU run."""
    namespace = "2020-05-01 | INFO | fairseq_cli.train | Namespace(arch='transformer', {}, data='bin', seed=1)"
    assert devices(namespace.format("cpu=True")) == "cpu"
    assert devices("fairseq-train bin --arch transformer --cpu\n" + namespace.format("fp16=False")) == "cpu"
    assert devices(namespace.format("cpu=False")) == "gpu"


CASED = ["Ein Hund läuft über die Wiese.", "Zwei Männer spielen Fußball im Park.", "Eine Frau liest ein Buch.",
         "Der Junge isst einen Apfel."]


def test_sacrebleu_is_cased_unless_asked():
    lower = [r.lower() for r in CASED]
    assert sacrebleu_score(lower, CASED)[0] < 50.0  # every capital a miss
    score, signature = sacrebleu_score(lower, CASED, lowercase=True)
    assert score == pytest.approx(100.0) and "case:lc" in signature


def test_paired_bootstrap_follows_the_case_option():
    """The system differs from the references only by one lower-cased sentence: a tie with them when case is
    ignored (BLEU 100, better than the baseline's changed words), behind the baseline when it counts."""
    base = ["Ein Hund läuft über das Feld."] + CASED[1:]
    system = CASED[:1] + [CASED[1].lower()] + CASED[2:]
    cased, lowercased = paired_p(base, system, CASED, samples=200), paired_p(base, system, CASED, 200, True)
    assert 0.0 < cased <= 1.0 and 0.0 < lowercased <= 1.0 and cased != lowercased
