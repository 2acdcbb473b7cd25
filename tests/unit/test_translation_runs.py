"""evaluation.translation_runs.patience_stop: where one uninterrupted ``fairseq-train --patience`` run stops, read
from the log of a resumed one (fairseq's own ``should_stop_early`` is the reference), and its CLI."""

import random

import pytest
from omegaconf import OmegaConf

from fairseq_tree.cli import report
from fairseq_tree.evaluation.translation_runs import Stop, devices, patience_stop, saved_scores, segments_seconds


def saved(epoch: int, updates: int, score) -> str:
    """The line fairseq 0.12's checkpoint_utils.save_checkpoint logs after writing an epoch checkpoint."""
    return (f"2026-11-26 09:07:15 | INFO | fairseq.checkpoint_utils | Saved checkpoint /w/ckpt/checkpoint{epoch}.pt "
            f"(epoch {epoch} @ {updates} updates, score {score}) (writing took 0.05 seconds)")


def write_log(tmp_path, scores, resume_after=(), extra=()):
    """A train.log of one validation per epoch (62 updates each); a resume's header after the epochs named."""
    lines = ["== 2026-11-25T21:08:05Z start/resume"]
    for epoch, score in enumerate(scores, 1):
        lines.append(f"epoch {epoch:03d} | valid on 'valid' subset | loss {score} | num_updates {62 * epoch}")
        lines.append(saved(epoch, 62 * epoch, score))
        if epoch in resume_after:
            lines.append("== 2026-11-26T05:55:07Z start/resume")
    lines.extend(extra)
    log = tmp_path / "train.log"
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return log


def fairseq_stop(scores, patience, maximize=False):
    """The 1-based epoch at which fairseq_cli.train.should_stop_early, called once per validation of one
    uninterrupted run, returns True (None: never)."""
    from fairseq_cli.train import should_stop_early

    cfg = OmegaConf.create({"checkpoint": {"patience": patience, "maximize_best_checkpoint_metric": maximize}})
    for attr in ("best", "num_runs"):  # a fresh process: the count lives in the function's attributes
        if hasattr(should_stop_early, attr):
            delattr(should_stop_early, attr)
    try:
        for epoch, score in enumerate(scores, 1):
            if should_stop_early(cfg, score):
                return epoch
        return None
    finally:
        for attr in ("best", "num_runs"):
            if hasattr(should_stop_early, attr):
                delattr(should_stop_early, attr)


def test_patience_stop_by_hand_across_a_resume(tmp_path):
    # best 4.0 at epoch 2; epochs 3, 4, 5 are not strictly better (4.0 ties): the third of them stops a patience-3
    # run at epoch 5. The run was resumed after epoch 4, so fairseq itself counted afresh and went on to epoch 7
    log = write_log(tmp_path, [5.0, 4.0, 4.1, 4.0, 4.05, 3.9, 3.95], resume_after=(4,))
    assert patience_stop(log, 3) == Stop(5, 310)
    assert patience_stop(log, 4) is None  # epoch 6 improves on 4.0 before a 4th run without improvement
    assert patience_stop(log, 0) is None  # fairseq: patience <= 0 never stops


def test_patience_stop_equals_fairseqs_should_stop_early(tmp_path):
    rng = random.Random(0)
    for trial in range(200):
        # scores on a coarse grid, so that ties (not an improvement) occur as they do in fairseq's rounded losses
        scores = [round(6 - 0.02 * e + rng.choice([-0.1, -0.05, 0, 0.05, 0.1, 0.2]), 2) for e in range(40)]
        patience, maximize = rng.choice([1, 2, 3, 5, 10]), trial % 4 == 0
        expected = fairseq_stop(scores, patience, maximize)
        got = patience_stop(write_log(tmp_path, scores, resume_after=(7, 19)), patience, maximize)
        assert (got.epoch if got else None) == expected, (scores, patience, maximize)


def test_a_validation_saved_twice_counts_once_the_later_and_none_scores_are_skipped(tmp_path):
    # epoch 3's save was redone after a resume at a worse score (the later line wins); a save without validation
    # logs score None and is no validation
    log = write_log(tmp_path, [5.0, 4.0, 3.0], extra=[saved(3, 186, 4.5), saved(4, 200, "None"), saved(4, 248, 4.2)])
    assert saved_scores(log) == [(Stop(1, 62), 5.0), (Stop(2, 124), 4.0), (Stop(3, 186), 4.5), (Stop(4, 248), 4.2)]
    assert patience_stop(log, 2) == Stop(4, 248)


def test_report_patience_prints_the_stop_or_nothing(tmp_path, capsys):
    log = write_log(tmp_path, [5.0, 4.0, 4.1, 4.2])
    assert report.main(["patience", str(log), "--patience", "2"]) == 0
    assert capsys.readouterr().out == "4 248\n"
    assert report.main(["patience", str(log), "--patience", "3"]) == 0
    assert capsys.readouterr().out == ""
    assert report.main(["patience", str(tmp_path / "missing.log"), "--patience", "3"]) == 2
    assert "missing.log: missing" in capsys.readouterr().err


@pytest.mark.parametrize("walls, seconds", [([10, 20, 30], 30), ([400, 100, 200], 600), ([5, 1, 2, 1, 9], 16)])
def test_segments_seconds(walls, seconds):
    assert segments_seconds(walls) == seconds


def config_line(cpu: bool) -> str:
    """The start of the config dict fairseq 0.12's fairseq-train logs at each start."""
    return f"2026-11-27 03:43:40 | INFO | fairseq_cli.train | {{'_name': None, 'common': {{'cpu': {cpu}, 'tpu': False"


def test_devices_of_the_segments_in_order():
    assert devices(config_line(True)) == "cpu"
    assert devices(config_line(False)) == "gpu"
    assert devices("\n".join([config_line(False), config_line(False), config_line(True)])) == "gpu+cpu"
    assert devices("\n".join([config_line(True), config_line(False)])) == "cpu+gpu"
