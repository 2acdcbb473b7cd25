"""fairseq_tree.evaluation.curves and ``fairseq-tree-report curves --compare``: runs read at equal updates (straight
lines between validations), a reference recipe's stages at their true counts (whole epochs), groups of seeds side
by side; every expected number computed by hand in the comments."""

import json
import math
import struct

import pytest

from fairseq_tree.evaluation.curves import (
    batches_per_epoch,
    compare,
    compare_summary,
    compare_table,
    curve,
    groups_figure,
    value_at,
)


def _log(path, points):
    """A fairseq-train log (simple format) with a validation line per {updates: (uf1, uas)}."""
    path.write_text("".join(
        f"2026-11-29 15:46:49 | INFO | valid | epoch 001 | valid on 'valid' subset | loss 9.143 | uf1 {uf1} | "
        f"uas {uas} | uuas 39.52 | num_updates {u} | best_uf1 {uf1}\n" for u, (uf1, uas) in points.items()),
        encoding="utf-8")
    return path


def _reference(out, stages, batches=357):
    """A reference recipe's OUT: train_U.log with their progress line, scores_U.txt (the scorer's JSON last)."""
    out.mkdir()
    for u, (uf1, uas) in stages.items():
        (out / f"train_{u}.log").write_text(
            f"Args: Namespace(batch_size=820)\n| epoch   1 |   100/  {batches} batches | lr 0.00100 | loss  7.40 |\n",
            encoding="utf-8")
        (out / f"scores_{u}.txt").write_text("UAS = x\n" + json.dumps({"uf1": uf1, "uas": uas}) + "\n",
                                             encoding="utf-8")
    return out


def test_value_at_reads_between_validations_on_a_straight_line_and_never_extrapolates():
    c = {2000: 36.0, 1000: 30.0, 4000: 38.0}  # unsorted on purpose
    assert value_at(c, 1000) == 30.0
    assert value_at(c, 1500) == pytest.approx(33.0)  # halfway from 30 to 36
    assert value_at(c, 1071) == pytest.approx(30.426)  # 30 + 71/1000 x 6
    assert value_at(c, 3000) == pytest.approx(37.0)  # between 2,000 and 4,000, not 1,000 and 4,000 (34.67)
    assert value_at(c, 999) is None and value_at(c, 4001) is None
    assert value_at({}, 5) is None


def test_reference_stages_at_their_true_counts(tmp_path):
    ref = _reference(tmp_path / "ref", {1000: (25.9, 31.5), 3000: (34.3, 37.9), 7000: (43.8, 39.3)})
    assert batches_per_epoch(ref) == 357
    # ceil(U / 357) epochs of 357 batches: 3 x 357, 9 x 357, 20 x 357
    assert curve(ref, "uas", true_counts=True) == {1071: 31.5, 3213: 37.9, 7140: 39.3}
    assert curve(ref, "uas") == {1000: 31.5, 3000: 37.9, 7000: 39.3}  # the recipe's own counts by default
    (ref / "train_9000.log").write_text("| epoch   1 |   100/  358 batches |\n", encoding="utf-8")
    with pytest.raises(ValueError, match="disagree on the batches of an epoch"):
        batches_per_epoch(ref)
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "scores_1000.txt").write_text(json.dumps({"uas": 30.0}) + "\n", encoding="utf-8")
    assert batches_per_epoch(bare) is None
    assert curve(bare, "uas", true_counts=True) == {1000: 30.0}  # no stage logs: exact counts (Tree Transformer's)
    (bare / "train_1000.log").write_text("Args: Namespace()\n", encoding="utf-8")  # a stage log that states no B
    with pytest.raises(SystemExit, match="true update counts are unknown"):
        curve(bare, "uas", true_counts=True)


def test_compare_means_sds_and_differences_by_hand():
    # group a: two runs; group b: one run reaching 1,500 and one run with a single point at 1,500
    a = [[{1000: 30.0, 2000: 36.0}], [{1000: 32.0, 2000: 40.0}]]
    b = [[{1000: 35.0, 2000: 39.0}], [{1500: 40.0}]]
    rows = compare([("a", a), ("b", b)], [1500, 2000])
    # 1,500: a's runs 33 and 36 (mean 34.5, sd 3 / sqrt 2); b's 37 and 40 (mean 38.5, sd 3 / sqrt 2); b - a = 4
    (m, sd, n), = rows[0]["stats"][0]
    assert (m, sd, n) == (pytest.approx(34.5), pytest.approx(3 / math.sqrt(2)), 2)
    assert rows[0]["stats"][1][0] == (pytest.approx(38.5), pytest.approx(3 / math.sqrt(2)), 2)
    assert rows[0]["diff"] == [[pytest.approx(4.0)]] and rows[0]["complete"] == [True]
    # 2,000: a 36 and 40 (38, sd 2 sqrt 2); b only its first run (39, no sd, n 1): b - a = 1, not complete
    assert rows[1]["stats"][0][0] == (pytest.approx(38.0), pytest.approx(2 * math.sqrt(2)), 2)
    assert rows[1]["stats"][1][0] == (39.0, None, 1)
    assert rows[1]["diff"] == [[pytest.approx(1.0)]] and rows[1]["complete"] == [False]
    s = compare_summary(rows)  # only the complete count: 1,500
    assert s["diff"] == [[pytest.approx(4.0)]] and s["counts"] == [1]
    assert s["spread"] == [[pytest.approx(3 / math.sqrt(2))], [pytest.approx(3 / math.sqrt(2))]]


def test_compare_summary_averages_differences_and_spreads_over_complete_counts():
    # a at 1, 2, 3: runs 10/12, 12/16, 14/20: means 11, 14, 17; sds sqrt2, 2 sqrt2, 3 sqrt2
    a = [[{1: 10.0, 3: 14.0}], [{1: 12.0, 3: 20.0}]]
    b = [[{1: 13.0, 2: 13.0, 3: 13.0}]]  # b - a: +2, -1, -4
    s = compare_summary(compare([("a", a), ("b", b)], [1, 2, 3]))
    assert s["diff"] == [[pytest.approx(-1.0)]] and s["counts"] == [3]
    assert s["spread"][0] == [pytest.approx(2 * math.sqrt(2))] and s["spread"][1] == [None]
    # three groups: each later one against the first
    c = [[{1: 11.0, 3: 19.0}]]  # c - a: 0, +1 (15 - 14), +2
    s3 = compare_summary(compare([("a", a), ("b", b), ("c", c)], [1, 2, 3]))
    assert s3["diff"] == [[pytest.approx(-1.0)], [pytest.approx(1.0)]]
    # a first group of one run (no sd): the differences still taken from its mean; a - b: -2, +1, +4
    s_b = compare_summary(compare([("b", b), ("a", a)], [1, 2, 3]))
    assert s_b["diff"] == [[pytest.approx(1.0)]] and s_b["spread"] == [[None], [pytest.approx(2 * math.sqrt(2))]]


def test_compare_table_prints_groups_differences_and_partial_counts():
    a = [[{1000: 30.0, 2000: 36.0}, {1000: 40.0, 2000: 42.0}], [{1000: 32.0, 2000: 40.0}, {1000: 44.0, 2000: 44.0}]]
    b = [[{1500: 40.0, 2500: 41.0}, {1500: 50.0, 2500: 50.0}]]
    out = compare_table([("ours", a), ("theirs", b)], [1500, 2500], ["uf1", "uas"]).splitlines()
    assert out[2:4] == ["| updates | ours (2 runs) | theirs (1 run) | theirs - ours |", "|---:|---|---|---|"]
    # 1,500: ours uf1 33, 36 -> 34.5 ± 2.1; uas 41, 44 -> 42.5 ± 2.1; theirs 40 / 50; differences +5.5 / +7.5
    assert out[4] == "| 1,500 | 34.5 ± 2.1 / 42.5 ± 2.1 | 40.0 / 50.0 | +5.5 / +7.5 |"
    assert out[5] == "| 2,500 |  | 41.0 / 50.0 | - / - |"  # past ours' last validation: not extrapolated
    assert out[7] == "over the counts every run reaches (uf1 1, uas 1 of 2):"
    assert out[8] == "mean theirs - ours: uf1=+5.50  uas=+7.50"
    assert out[9] == "seed sd of ours (mean): uf1=2.12  uas=2.12"
    assert len(out) == 10  # theirs has one run: no spread line
    partial = compare_table([("ours", a), ("theirs", b + [[{1500: 44.0}, {1500: 52.0}]])], [1500, 2500], ["uf1", "uas"])
    assert "| 2,500 |  | 41.0 / 50.0 (n=1) | - / - |" in partial  # one of theirs two runs reaches 2,500
    # a run without one metric (no uas validations) still reaches the count: no (n=...), the uas mean is its own
    no_uas = compare_table([("ours", a), ("theirs", b + [[{1500: 44.0}, {}]])], [1500], ["uf1", "uas"])
    assert "| 1,500 | 34.5 ± 2.1 / 42.5 ± 2.1 | 42.0 ± 2.8 / 50.0 | +7.5 / +7.5 |" in no_uas  # uf1 40, 44


def test_groups_figure_a_colour_per_group_each_run_its_own_points():
    fig = groups_figure([("ours", [{2000: 36.0, 1000: 30.0}, {1000: 31.0}]), ("theirs", [{1071: 25.0, 3213: 36.0}])],
                        "uas", baseline=30.1)
    ax = fig.axes[0]
    runs, base = ax.lines[:3], ax.lines[3]
    assert [list(line.get_xdata()) for line in runs] == [[1000, 2000], [1000], [1071, 3213]]  # sorted, not read between
    assert [list(line.get_ydata()) for line in runs] == [[30.0, 36.0], [31.0], [25.0, 36.0]]
    assert [line.get_color() for line in runs] == ["C0", "C0", "C1"]
    assert list(base.get_ydata()) == [30.1, 30.1] and base.get_linestyle() == "--"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["ours", "theirs", "baseline"]
    assert ax.get_ylabel() == "uas" and ax.get_xlabel() == "updates" and base.get_color() == "gray"
    assert list(fig.get_size_inches()) == [6.0, 3.5]
    assert len(groups_figure([("a", [{1: 1.0}])], "uf1").axes[0].lines) == 1  # no baseline, no line for it


def test_report_curves_compare_end_to_end(tmp_path, capsys, monkeypatch):
    from fairseq_tree.cli import report_curves
    from fairseq_tree.cli.report_curves import main
    from fairseq_tree.evaluation.plotting import save

    s1 = _log(tmp_path / "s1.log", {1000: (26.0, 31.0), 2000: (30.0, 35.0), 4000: (40.0, 37.0)})
    s2 = _log(tmp_path / "s2.log", {1000: (28.0, 33.0), 2000: (32.0, 36.0), 4000: (42.0, 39.0)})
    ref = _reference(tmp_path / "ref", {1000: (25.0, 34.0), 3000: (36.0, 38.0)})
    assert main([str(s1), str(s2), str(ref), "--groups", "ours", "ours", "theirs", "--metric", "uf1", "uas",
                 "--compare"]) == 0
    out = capsys.readouterr().out.splitlines()
    # 1,071: s1 uf1 26 + 0.071 x 4 = 26.284, s2 28.284 -> 27.284 (27.3 ± 1.4); uas 31 + 0.071 x 4 = 31.284,
    #        33 + 0.071 x 3 = 33.213 -> 32.249 (sd 1.364); theirs 25 / 34: -2.284 / +1.751
    # 3,213: s1 uf1 30 + 0.6065 x 10 = 36.065, s2 38.065 -> 37.065; uas 35 + 0.6065 x 2 = 36.213, 36 + 0.6065 x 3 =
    #        37.8195 -> 37.016 (sd 1.136); theirs 36 / 38: -1.065 / +0.984
    assert out[4] == "| 1,071 | 27.3 ± 1.4 / 32.2 ± 1.4 | 25.0 / 34.0 | -2.3 / +1.8 |"
    assert out[5] == "| 3,213 | 37.1 ± 1.4 / 37.0 ± 1.1 | 36.0 / 38.0 | -1.1 / +1.0 |"
    assert out[8] == "mean theirs - ours: uf1=-1.67  uas=+1.37"  # (-2.284 - 1.065) / 2, (1.751 + 0.984) / 2
    main([str(s1), str(s2), str(ref), "--groups", "ours", "ours", "theirs", "--compare", "--at", "2000"])
    # theirs between its stages: 25 + (2,000 - 1,071) / (3,213 - 1,071) x 11 = 29.771; ours 30, 32 -> 31 (sd 1.414)
    assert capsys.readouterr().out.splitlines()[4] == "| 2,000 | 31.0 ± 1.4 | 29.8 | -1.2 |"
    # the counts come from the first metric (ppl: none in the reference's scores, only the first is required)
    main([str(s1), str(s2), str(ref), "--groups", "ours", "ours", "theirs", "--metric", "uf1", "ppl", "--compare"])
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| 1,071") or
            line.startswith("| 3,213")]
    assert len(rows) == 2 and rows[0].startswith("| 1,071 | 27.3 ± 1.4 / - |")
    png, drawn = tmp_path / "uas.png", []
    monkeypatch.setattr(report_curves, "save", lambda fig, path, **kw: drawn.append(fig) or save(fig, path, **kw))
    main([str(s1), str(s2), str(ref), "--groups", "ours", "ours", "theirs", "--metric", "uas", "uf1", "--compare",
          "--png", str(png), "--baseline", "30.1"])
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and capsys.readouterr().out.count("| 1,071 |") == 1
    assert struct.unpack(">II", png.read_bytes()[16:24]) == (720, 420)  # the IHDR: 6 x 3.5 inches at 120 dpi
    lines = drawn[0].axes[0].lines  # the first metric (uas); theirs at its true counts; then the baseline
    assert [(list(c.get_xdata()), list(c.get_ydata()), c.get_color()) for c in lines[:3]] == [
        ([1000, 2000, 4000], [31.0, 35.0, 37.0], "C0"), ([1000, 2000, 4000], [33.0, 36.0, 39.0], "C0"),
        ([1071, 3213], [34.0, 38.0], "C1")]
    assert list(lines[3].get_ydata()) == [30.1, 30.1]
    with pytest.raises(SystemExit):
        main(["--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "--png PNG the first metric's curves (with --compare: a colour per group)" in help_text
    assert "--at AT [AT ...] --compare's update counts (default: the last group's)" in help_text
    for argv, message in (([str(s1), str(ref), "--compare"], "--compare needs a --groups name per run: 0 for 2"),
                          ([str(s1), str(ref), "--groups", "a", "a", "--compare"], "two groups or more")):
        with pytest.raises(SystemExit) as e:
            main(argv)
        assert e.value.code == 2 and message in capsys.readouterr().err
