"""fairseq-tree-report anchor (cli/report_anchor.py): the per-run rows and the same-seed comparisons of the
Multi30k anchor recipe's runs, on hand-made result.json and test.gen files with hand-computed differences and
t-test p-values (Student's t with 1 and 2 degrees of freedom in closed form)."""

import json
import math

import pytest

from fairseq_tree.cli import report_anchor

SENTENCES = ["ein hund läuft .", "zwei männer spielen fußball .", "eine frau liest ein buch ."]


def make_run(work, name, seed, fairseq_bleu, sacrebleu, hyps):
    run = work / "ckpt" / "de" / f"{name}_s{seed}"
    run.mkdir(parents=True)
    (run / "result.json").write_text(json.dumps({
        "run": str(run), "test_fairseq_bleu": fairseq_bleu, "test_sacrebleu": sacrebleu, "updates": 5146,
        "epochs": 83, "stopped_by_patience": True, "train_minutes": 641.1, "device": "cpu",
        "valid_fairseq_bleu": 41.94}))
    (run / "train.log").write_text("".join(f"epoch {e:03d} | valid on 'valid' subset | loss {5 - e / 10} | "
                                           f"num_updates {62 * e}\n" for e in (1, 2)))
    (run / "test.gen").write_text("".join(f"S-{i}\tx\nH-{i}\t-0.5\t{h}\n" for i, h in enumerate(hyps)))


def test_rows_and_same_seed_comparisons(tmp_path, capsys):
    make_run(tmp_path, "transformer", 1, 41.0, 41.1, SENTENCES)
    make_run(tmp_path, "transformer", 2, 40.0, 40.2, ["ein hund .", "zwei männer spielen .", "eine frau liest ."])
    make_run(tmp_path, "tree2seq_lal", 1, 41.5, 41.3, SENTENCES)
    make_run(tmp_path, "tree2seq_lal", 2, 41.0, 40.9, SENTENCES)
    make_run(tmp_path, "tree2seq_trivial", 1, 41.2, 41.0, SENTENCES)
    refs = tmp_path / "test.de"
    refs.write_text("\n".join(s.capitalize() for s in SENTENCES) + "\n")
    png = tmp_path / "curves.png"
    assert report_anchor.main([str(tmp_path), "--reference", str(refs), "--lang", "de", "--seeds", "1", "2",
                               "--bootstrap-samples", "50", "--png", str(png)]) == 0
    out = capsys.readouterr()
    lines = {line.split(" | ")[0]: line for line in out.out.splitlines() if line.startswith("| ")}
    assert "| 41.00 / 40.00 | 40.50 ± 0.71 | 41.10 / 40.20 | 40.65 ± 0.64 |" in lines["| transformer"]
    assert "83 / 5146 (patience); 83 / 5146 (patience)" in lines["| transformer"]
    assert "tree2seq_trivial_s2: no result.json" in out.err
    # LAL − transformer over seeds 1 and 2: ΔBLEU4 +0.5, +1.0; ΔsacreBLEU +0.2, +0.7 (mean 0.45, sd 0.3536):
    # t = 0.45 / (0.3536 / sqrt 2) = 1.8 with 1 degree of freedom, p = 1 - 2/pi atan(1.8)
    lal = lines["| tree2seq_lal − transformer"]
    assert "| 1 2 | +0.50 / +1.00 | +0.75 ± 0.35 | +0.20 / +0.70 | +0.45 ± 0.35 |" in lal
    assert f"| {1 - 2 / math.pi * math.atan(1.8):.3f} | " in lal
    assert 0 < float(lal.split(" | ")[-1].rstrip(" |")) < 1  # Welch's p over the two seeds of each
    bootstrap = [float(p) for p in lal.split(" | ")[6].split(" / ")]
    assert len(bootstrap) == 2 and all(0 <= p <= 1 for p in bootstrap)
    # LAL − trivial: the one seed both have
    assert "| 1 | +0.30 | +0.30 (one seed) | +0.30 | +0.30 (one seed) |" in lines["| tree2seq_lal − tree2seq_trivial"]
    assert lines["| tree2seq_lal − tree2seq_trivial"].endswith("| — (one seed) | — |")  # no Welch on one seed
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"  # the validation-loss curves of the five runs


def test_t_test_p_two_degrees_of_freedom():
    # diffs 1, 2, 3: t = 2 / (1 / sqrt 3); with 2 degrees of freedom p = 1 - t / sqrt(2 + t^2)
    t = 2 * math.sqrt(3)
    assert abs(report_anchor.t_test_p([1.0, 2.0, 3.0]) - (1 - t / math.sqrt(2 + t * t))) < 1e-9


def test_welch_p_equal_variances_two_seeds_each():
    # 1, 3 against 4, 6: variances 2 and 2, t = 3 / sqrt(2 / 2 + 2 / 2); Welch-Satterthwaite df = 2, where
    # p = 1 - t / sqrt(2 + t^2); the same values in either order
    t = 3 / math.sqrt(2)
    assert abs(report_anchor.welch_p([1.0, 3.0], [4.0, 6.0]) - (1 - t / math.sqrt(2 + t * t))) < 1e-9
    assert abs(report_anchor.welch_p([4.0, 6.0], [1.0, 3.0]) - (1 - t / math.sqrt(2 + t * t))) < 1e-9
    # 1, 3 against 5, 5, 5 (no spread): se = sqrt(2 / 2 + 0), t = -3 on df = 1 (Student's pooled test: df 3, p 0.03)
    assert abs(report_anchor.welch_p([1.0, 3.0], [5.0, 5.0, 5.0]) - (1 - 2 / math.pi * math.atan(3))) < 1e-9


def saved(run_dir, scores):
    """A train.log of fairseq's checkpoint saves, one per (epoch, loss) (62 updates an epoch)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "train.log").write_text("".join(
        f"INFO | fairseq.checkpoint_utils | Saved checkpoint {run_dir}/checkpoint{e}.pt (epoch {e} @ {62 * e} "
        f"updates, score {loss}) (writing took 0.1 seconds)\n" for e, loss in scores))


def test_runs_in_progress_against_the_same_seed_transformer(tmp_path, capsys):
    make_run(tmp_path, "transformer", 1, 41.0, 41.1, SENTENCES)
    ckpt = tmp_path / "ckpt" / "de"
    saved(ckpt / "transformer_s1", [(1, 9.0), (2, 7.5), (3, 6.25)])  # the finished baseline's log
    saved(ckpt / "tree2seq_lal_s1", [(1, 8.9), (2, 7.0), (3, 7.25)])  # best at epoch 2, last at 3
    saved(ckpt / "transformer_s2", [(1, 9.5)])  # a baseline in progress: no baseline of its own
    saved(ckpt / "tree2seq_trivial_s2", [(1, 9.25), (2, 8.0)])  # the seed-2 baseline has no epoch 2 yet
    refs = tmp_path / "test.de"
    refs.write_text("\n".join(SENTENCES) + "\n")
    assert report_anchor.main([str(tmp_path), "--reference", str(refs), "--seeds", "1", "2"]) == 0
    out = capsys.readouterr().out
    assert "No comparison yet: it needs two finished runs with a common seed." in out
    rows = [line for line in out.splitlines() if line.startswith("| tree2seq") or line.startswith("| transformer | 2")]
    assert rows == ["| transformer | 2 | 1 / 62 | 9.500 | 9.500 (1) | — |",
                    "| tree2seq_trivial | 2 | 2 / 124 | 8.000 | 8.000 (2) | — |",
                    "| tree2seq_lal | 1 | 3 / 186 | 7.250 | 7.000 (2) | 6.250 |"]


def test_validation_curves_leave_out_a_run_that_has_not_validated(tmp_path):
    make_run(tmp_path, "transformer", 1, 41.0, 41.1, SENTENCES)  # valid losses 4.9 and 4.8 at 62 and 124 updates
    started = tmp_path / "ckpt" / "de" / "tree2seq_lal_s2"
    started.mkdir(parents=True)
    (started / "train.log").write_text("epoch 001:     10 / 61 loss=12.1, num_updates=10\n")  # no validation yet
    curves = report_anchor.validation_curves(tmp_path, "de", ["transformer", "tree2seq_lal"], ["1", "2"])
    assert curves == {"transformer_s1": {62: 4.9, 124: 4.8}}
    refs = tmp_path / "test.de"
    refs.write_text("\n".join(SENTENCES) + "\n")
    png = tmp_path / "curves.png"
    assert report_anchor.main([str(tmp_path), "--reference", str(refs), "--png", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_runs_in_progress_before_any_run_has_finished(tmp_path, capsys):
    ckpt = tmp_path / "ckpt" / "de"
    saved(ckpt / "transformer_s3", [(1, 9.0), (2, 7.5)])
    with open(ckpt / "transformer_s3" / "train.log", "a") as log:  # the validations the curves are drawn from
        log.write("".join(f"epoch {e:03d} | valid on 'valid' subset | loss {x} | num_updates {62 * e}\n"
                          for e, x in ((1, 9.0), (2, 7.5))))
    refs = tmp_path / "test.de"
    refs.write_text("\n".join(SENTENCES) + "\n")
    png = tmp_path / "curves.png"
    assert report_anchor.main([str(tmp_path), "--reference", str(refs), "--png", str(png)]) == 0
    out = capsys.readouterr().out
    assert "no finished run yet" in out
    assert "| transformer | 3 | 2 / 124 | 7.500 | 7.500 (2) | — |" in out.splitlines()
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_nothing_finished_or_validated_is_an_error(tmp_path):
    (tmp_path / "ckpt" / "de" / "transformer_s1").mkdir(parents=True)
    with pytest.raises(SystemExit, match="has finished or validated"):
        report_anchor.main([str(tmp_path), "--reference", str(tmp_path / "absent.de")])


def test_transcribed_records_count_in_the_means_and_the_t_test_without_a_bootstrap(tmp_path, capsys):
    # seed 1's transformer folder was lost: its record holds the scores first reported, and no test.gen
    make_run(tmp_path, "transformer", 1, 41.0, 41.1, SENTENCES)
    lost = tmp_path / "ckpt" / "de" / "transformer_s1"
    record = json.loads((lost / "result.json").read_text())
    (lost / "result.json").write_text(json.dumps({**record, "transcribed": "RESULTS.md of 2026-11-26"}))
    (lost / "test.gen").unlink()
    make_run(tmp_path, "transformer", 2, 40.0, 40.2, SENTENCES)
    make_run(tmp_path, "tree2seq_lal", 1, 40.0, 40.5, SENTENCES)
    make_run(tmp_path, "tree2seq_lal", 2, 41.0, 41.0, SENTENCES)
    refs = tmp_path / "test.de"
    refs.write_text("\n".join(SENTENCES) + "\n")
    assert report_anchor.main([str(tmp_path), "--reference", str(refs), "--seeds", "1", "2",
                               "--bootstrap-samples", "20"]) == 0
    out = capsys.readouterr().out.splitlines()
    lines = {line.split(" | ")[0]: line for line in out if line.startswith("| ")}
    assert lines["| transformer"].startswith("| transformer | 1† 2 | 41.00 / 40.00 | 40.50 ± 0.71 |")
    assert lines["| transformer"].endswith("| 641 / 641 | cpu / cpu |")  # per seed, as the other columns
    assert "† RESULTS.md of 2026-11-26" in out
    # ΔsacreBLEU −0.6, +0.8: mean +0.10, sd 0.99; t = 0.1 / (0.98995 / sqrt 2), 1 degree of freedom
    lal = lines["| tree2seq_lal − transformer"]
    assert "| 1† 2 | -1.00 / +1.00 | +0.00 ± 1.41 | -0.60 / +0.80 | +0.10 ± 0.99 |" in lal
    t = 0.1 / (math.sqrt(0.98) / math.sqrt(2))
    assert f" | {1 - 2 / math.pi * math.atan(t):.3f} | " in lal
    bootstrap = lal.split(" | ")[6].split(" / ")  # seed 1 has no hypotheses; seed 2 is resampled
    assert bootstrap[0] == "—" and 0 <= float(bootstrap[1]) <= 1
