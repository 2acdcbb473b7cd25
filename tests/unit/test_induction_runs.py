"""fairseq_tree.evaluation.induction_runs: the table of the induction recipe's runs, against hand-computed means."""

import json

import pytest

from fairseq_tree.evaluation.induction_runs import collect, table


def _run(work, corpus, name, saves, scores=None, done=True):
    run = work / corpus / name
    run.mkdir(parents=True)
    lines = [f"Saved checkpoint {run}/checkpoint_1_{u}.pt (epoch 1 @ {u} updates, score {s}) (writing took 0.1 s)"
             for u, s in saves]
    lines.append(f"epoch 001 | loss 5 | num_updates {saves[-1][0] + 7}")
    (run / "train.log").write_text("\n".join(lines) + "\n", encoding="utf-8")
    if done:
        (run / ".done").touch()
    for key, (uf1, uas) in (scores or {}).items():
        (run / key).mkdir()
        base = {"right": {"sentence_f1": 38.3}, "left": {"sentence_f1": 11.0}, "random": {"sentence_f1": 20.5},
                "right_chain": {"uas": 30.1, "uuas": 46.7}, "left_chain": {"uas": 20.0, "uuas": 46.7}}
        model = {"sentence_f1": uf1, "attachment": {"uas": uas, "uuas": uas + 10}}
        (run / key / "scores.json").write_text(json.dumps({"model": model, "baselines": base}), encoding="utf-8")


def test_table_means_and_sd_over_seeds(tmp_path):
    _run(tmp_path, "wsj", "structformer_small_s1", [(1000, 30.0), (2000, 41.0), (3000, 40.0)],
         {"induce_wsj22": (41.0, 20.0), "induce_ptbvalid": (42.0, 0), "induce_wsj22_joint": (41.0, 25.0)})
    _run(tmp_path, "wsj", "structformer_small_s2", [(1000, 39.0), (2000, 39.0)],
         {"induce_wsj22": (45.0, 24.0), "induce_ptbvalid": (44.0, 0), "induce_wsj22_joint": (45.0, 27.0)})
    _run(tmp_path, "wsj", "structformer_small_s3", [(1000, 10.0)], done=False)  # still training: no scores
    rows = collect(tmp_path)
    assert [r["seed"] for r in rows[("wsj", "structformer_small")]] == [1, 2, 3]
    assert [r["best"] for r in rows[("wsj", "structformer_small")]] == [(2000, 41.0), (1000, 39.0), (1000, 10.0)]
    out = table(rows)
    # wsj22 UF1 41, 45 -> 43.0 ± 2.8 (sd sqrt(8)); ptbvalid 43.0 ± 1.4; UAS 22.0 ± 2.8; joint 26.0 ± 1.4;
    # UUAS 32.0 ± 2.8; best of s2 is the first of its equal scores (1000)
    assert ("| wsj | `structformer_small` | 1,2,3 | 2000/3007 / 1000/2007 / 1000/1007* | 43.0 ± 2.8 | 43.0 ± 1.4 | "
            "22.0 ± 2.8 | 26.0 ± 1.4 | 32.0 ± 2.8 |") in out
    assert "| | right-branching | | | 38.3 | 38.3 | | | |" in out
    assert "| | right chain | | | | | 30.1 | 30.1 | 46.7 |" in out


def test_report_induction_cli(tmp_path, capsys):
    from fairseq_tree.cli.report import main

    _run(tmp_path, "ptb", "constituent_transformer_small_s1", [(1000, 35.0)], {"induce_wsj22": (39.5, 0.0)})
    assert main(["induction", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "| ptb | `constituent_transformer_small` | 1 | 1000/1007 | 39.5 | - |" in out
    assert main(["induction", str(tmp_path / "nowhere")]) == 2
    assert "no such directory" in capsys.readouterr().err


def test_table_without_scores_marks_every_baseline_missing(tmp_path):
    _run(tmp_path, "wsj", "structformer_small_s1", [(1000, 30.0)], done=False)
    out = table(collect(tmp_path))
    assert "| | right-branching | | | - | - | | | |" in out
    assert "| | right chain | | | | | - | - | - |" in out and "| | left chain | | | | | - | - | - |" in out


def test_report_induction_help_names_its_argument_and_purpose(capsys):
    from fairseq_tree.cli.report import main

    with pytest.raises(SystemExit) as e:
        main(["induction", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert e.value.code == 0
    assert "usage: fairseq-tree-report induction [-h]" in out and "[--gold-dep CONLL] WORK" in out
    assert "the recipe's work directory (WORK/CORPUS/ARCH_sSEED runs)" in out
    assert "the trivial baselines once; with --png, wsj22 UF1 and UAS against" in out  # the whole first paragraph


def _valid(run, points):
    """Append fairseq's simple-format validation lines ({updates: (uf1, uas)}) to the run's train.log."""
    lines = [f"2026-11-28 03:50:31 | INFO | valid | epoch 023 | valid on 'valid' subset | loss 7.062 | ppl 133.58 | "
             f"uf1 {uf1} | corpus_uf1 41.51 | uas {uas} | uuas 51.8 | wps 800.2 | num_updates {u} | best_uf1 {uf1}"
             for u, (uf1, uas) in points.items()]
    with open(run / "train.log", "a", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


def _text(work, corpus, n):
    (work / corpus / "text").mkdir(parents=True, exist_ok=True)
    (work / corpus / "text" / "train.txt").write_text("".join(f"w{k} x\n" for k in range(n)) + "\n", encoding="utf-8")


def test_validations_every_metric_later_line_wins(tmp_path):
    from fairseq_tree.evaluation.translation_runs import validations

    run = tmp_path / "r"
    run.mkdir()
    (run / "train.log").write_text("epoch 001 | loss 5 | num_updates 900\n", encoding="utf-8")
    _valid(run, {1000: (30.5, 20.25), 2000: (31.0, 22.0)})
    _valid(run, {1000: (33.0, 21.0)})  # redone after a resume
    v = validations(run / "train.log")
    assert sorted(v) == [1000, 2000]
    assert v[1000]["uf1"] == 33.0 and v[1000]["uas"] == 21.0 and v[2000]["uas"] == 22.0
    assert v[2000]["loss"] == 7.062 and v[2000]["corpus_uf1"] == 41.51 and "num_updates" not in v[2000]


def test_size_points_at_updates_and_at_the_selected_checkpoint(tmp_path):
    from fairseq_tree.evaluation.induction_runs import size_points, size_table

    _text(tmp_path, "ptb", 3)  # 3 sentences (the trailing blank line is not one)
    _text(tmp_path, "wsj_brown", 7)
    for corpus, seed, at5k, scores in (("ptb", 1, (35.0, 20.0), (36.0, 21.0)), ("ptb", 2, (37.0, 24.0), None),
                                       ("wsj_brown", 1, (40.0, 30.0), (42.0, 33.0))):
        _run(tmp_path, corpus, f"structformer_small_code_s{seed}", [(1000, 1.0)],
             {"induce_wsj22": scores} if scores else None, done=scores is not None)
        _valid(tmp_path / corpus / f"structformer_small_code_s{seed}", {1000: (1.0, 2.0), 5000: at5k})
    _run(tmp_path, "wsj", "structformer_small_code_s1", [(1000, 1.0)], {"induce_wsj22": (50.0, 50.0)})  # no text/
    _run(tmp_path, "ptb", "structformer_small_code_s3", [(1000, 1.0)], done=False)  # no validation at 5000
    rows = collect(tmp_path)
    pts = size_points(rows, tmp_path, at=5000)["structformer_small_code"]
    assert [(p["corpus"], p["sentences"], p["seeds"]) for p in pts] == [("ptb", 3, [1, 2]), ("wsj_brown", 7, [1])]
    assert pts[0]["uf1"] == [35.0, 37.0] and pts[0]["uas"] == [20.0, 24.0] and pts[1]["uas"] == [30.0]
    sel = size_points(rows, tmp_path)["structformer_small_code"]  # scores.json: seed 2 has none
    assert [(p["corpus"], p["seeds"], p["uf1"], p["uas"]) for p in sel] == [("ptb", [1], [36.0], [21.0]),
                                                                           ("wsj_brown", [1], [42.0], [33.0])]
    out = size_table(size_points(rows, tmp_path, at=5000), 5000, {"right": {"sentence_f1": 38.3},
                                                                  "right_chain": {"uas": 30.1}})
    # ptb: UF1 36.0 ± 1.4 (sd of 35, 37 = sqrt(2)), UAS 22.0 ± 2.8 (sd of 20, 24 = sqrt(8))
    assert "| `structformer_small_code` | ptb | 3 | 1,2 | 36.0 ± 1.4 | 22.0 ± 2.8 |" in out
    assert "| `structformer_small_code` | wsj_brown | 7 | 1 | 40.0 | 30.0 |" in out
    assert "5,000 updates" in out and "| right-branching / right chain | | | | 38.3 | 30.1 |" in out


def test_size_series_means_and_sample_sd():
    from fairseq_tree.evaluation.plotting import size_series

    pts = {"a": [{"sentences": 3, "uf1": [35.0, 37.0], "uas": []}, {"sentences": 7, "uf1": [40.0], "uas": [30.0]}]}
    assert size_series(pts, "uf1") == [("a", [3, 7], [36.0, 40.0], [pytest.approx(2 ** 0.5), 0.0])]
    assert size_series(pts, "uas") == [("a", [7], [30.0], [0.0])]  # the corpus without UAS left out


def test_report_induction_corpus_size_cli(tmp_path, capsys):
    from fairseq_tree.cli.report import main

    _text(tmp_path, "ptb", 2)
    _run(tmp_path, "ptb", "constituent_transformer_small_s1", [(1000, 35.0)], done=False)
    _valid(tmp_path / "ptb" / "constituent_transformer_small_s1", {1000: (39.5, 10.0)})
    # two sentences: right-branching finds the gold (1, 3) of the second and misses the first's (0, 2): UF1 50.0
    gold = tmp_path / "gold.mrg"
    gold.write_text("(S (NP (DT the) (NN cat)) (VP (VBD sat)))\n(S (NP (PRP it)) (VP (VBD ran) (ADVP (RB fast))))\n",
                    encoding="utf-8")
    png = tmp_path / "size.png"
    assert main(["induction", str(tmp_path), "--at", "1000", "--png", str(png), "--gold", str(gold)]) == 0
    out = capsys.readouterr().out
    assert "the run stops.\n\nwsj22 against the training sentences" in out  # two tables, a blank line apart
    assert "| ptb | `constituent_transformer_small` | 1 | 1000/1000* | 39.5 † | - | 10.0 † | - | 51.8 † |" in out
    assert "| `constituent_transformer_small` | ptb | 2 | 1 | 39.5 | 10.0 |" in out
    assert "| right-branching / right chain | | | | 50.0 | - |" in out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main(["induction", str(tmp_path), "--at", "2000"]) == 2  # no validation there
    assert "no run under" in capsys.readouterr().err


def test_report_induction_main_returns_0_and_prefers_a_scored_runs_baselines(tmp_path, capsys):
    """--gold is the fallback: a run scored on wsj22 gives the baselines (38.3 here), not the gold file (50.0)."""
    from fairseq_tree.cli import report_induction

    _text(tmp_path, "ptb", 2)
    _run(tmp_path, "ptb", "structformer_small_s1", [(1000, 35.0)], {"induce_wsj22": (40.0, 20.0)})
    gold = tmp_path / "gold.mrg"
    gold.write_text("(S (NP (DT the) (NN cat)) (VP (VBD sat)))\n(S (NP (PRP it)) (VP (VBD ran) (ADVP (RB fast))))\n",
                    encoding="utf-8")
    assert report_induction.main([str(tmp_path), "--png", str(tmp_path / "f.png"), "--gold", str(gold)]) == 0
    out = capsys.readouterr().out
    assert "|---|---|---|---|---:|---:|---:|---:|---:|" in out  # the main table: 4 text columns, 5 numbers
    assert "| right-branching / right chain | | | | 38.3 | 30.1 |" in out


def test_curve_is_required_unless_asked(tmp_path):
    from fairseq_tree.evaluation.curves import curve

    run = tmp_path / "r"
    run.mkdir()
    (run / "train.log").write_text("epoch 001 | loss 5 | num_updates 900\n", encoding="utf-8")
    _valid(run, {1000: (30.5, 20.0)})
    assert curve(run / "train.log", "uf1") == {1000: 30.5}
    assert curve(run / "train.log", "bleu", required=False) == {}
    with pytest.raises(SystemExit, match="no validation line with 'bleu'"):
        curve(run / "train.log", "bleu")


def test_fisher_less_by_hand_and_against_scipy():
    from fairseq_tree.evaluation.induction_runs import fisher_less

    # 0 of 2 against 2 of 2: of the C(4, 2) = 6 ways to draw group 1's two runs from 2 counted + 2 not, one has none
    assert fisher_less(0, 2, 2, 2) == pytest.approx(1 / 6)
    # 1 of 3 against 2 of 3: (C(3,0) C(3,3) + C(3,1) C(3,2)) / C(6,3) = (1 + 9) / 20
    assert fisher_less(1, 3, 2, 3) == pytest.approx(0.5)
    assert fisher_less(3, 3, 0, 3) == pytest.approx(1.0)  # the most counted possible: P(X <= 3) is everything
    stats = pytest.importorskip("scipy.stats")
    for k1, n1, k2, n2 in ((1, 16, 9, 26), (0, 10, 3, 8), (2, 8, 3, 8), (4, 9, 1, 7)):
        want = stats.fisher_exact([[k1, n1 - k1], [k2, n2 - k2]], alternative="less")[1]
        assert fisher_less(k1, n1, k2, n2) == pytest.approx(want, rel=1e-12)


def test_report_seeds_counts_runs_under_the_threshold_at_the_update(tmp_path, capsys):
    from fairseq_tree.cli.report import main

    # group a: UAS at 500 of 3.0, 30.0, 16.0 (two under 16.7), a run without 500 listed; group b: 25.0 and 31.0
    a = []
    for seed, at500 in ((1, 3.0), (2, 30.0), (3, 16.0)):
        run = tmp_path / "a" / f"r_s{seed}"
        run.mkdir(parents=True)
        _valid(run, {500: (20.0, at500), 1000: (20.0, 1.0)})
        a.append(str(run))
    late = tmp_path / "a" / "r_s4"
    late.mkdir()
    _valid(late, {1000: (20.0, 2.0)})
    b = []
    for seed, at500 in ((1, 25.0), (2, 31.0)):
        run = tmp_path / "b" / f"r_s{seed}"
        run.mkdir(parents=True)
        _valid(run, {500: (20.0, at500)})
        b.append(str(run / "train.log"))
    ref = tmp_path / "scores_500.txt"  # a reference recipe's fairseq-tree-score output: the last line is its JSON
    ref.write_text("uf1 ...\n" + json.dumps({"uf1": 26.0, "uas": 12.5}) + "\n", encoding="utf-8")
    argv = ["seeds", "--below", "16.7", "--at", "500", "--group", "a", *a, str(late), "--group", "b", *b, str(ref)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0] == ("| runs | seeds | under 16.7 | their uas | the others' uas at 500 updates | "
                        "p (fewer under than a) |")
    assert lines[2] == "| a | 3 | 2 | 3.0, 16.0 | 30.0 | - |"
    # b: 12.5 under (1 of 3) against a's 2 of 3: p = (C(3,0) C(3,3) + C(3,1) C(3,2)) / C(6,3) = 0.5
    assert "| b | 3 | 1 | 12.5 | 28.0 ± 4.2 | 0.500 |" in out
    assert f"a: no uas at 500 updates: {late}" in out
    from fairseq_tree.cli import report_seeds

    assert report_seeds.main(["--below", "16.7", "--group", "a", a[0]]) == 0  # no --at: the last validation (1.0)
    assert "| a | 1 | 1 | 1.0 | - | - |" in capsys.readouterr().out
    assert main(["seeds", "--below", "1", "--group", "a", str(tmp_path / "nowhere")]) == 2
    assert "nowhere: no such file" in capsys.readouterr().err


def test_report_seeds_arguments(capsys):
    from fairseq_tree.cli import report_seeds

    with pytest.raises(SystemExit) as e:
        report_seeds.main(["--help"])
    assert e.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "how often a setting fails, e.g. StructFormer's inverted heights" in out  # the whole first paragraph
    assert "the validation metric (default: uas)" in out and "a run counts when its metric is under this" in out
    assert "each log's validation at this many updates" in out
    for argv in (["--below", "1"], ["--group", "a", "x"], ["--below", "1", "--group", "a", "x", "--group", "b"]):
        with pytest.raises(SystemExit) as e:  # no group; no threshold; a group without runs
            report_seeds.main(argv)
        assert e.value.code == 2
    assert "each --group needs a name and at least one run" in capsys.readouterr().err


def test_kept_fail_rate_by_hand():
    from fairseq_tree.evaluation.induction_runs import kept_fail_rate

    # (loss, failed): keeping the lower loss of 2, the 6 pairs keep run 2 (failed) in {2,3} and {2,4}: 2 / 6
    runs = [(8.8, False), (8.9, True), (9.0, False), (9.1, True)]
    assert kept_fail_rate(runs, 2) == pytest.approx(2 / 6)
    # the higher of 2: run 2 in {1,2}, run 4 in {1,4} {2,4} {3,4}: 4 / 6
    assert kept_fail_rate(runs, 2, lowest=False) == pytest.approx(4 / 6)
    assert kept_fail_rate(runs, 1) == pytest.approx(0.5)  # one seed: the failure rate
    assert kept_fail_rate(runs, 4) == 0.0 and kept_fail_rate(runs, 4, lowest=False) == 1.0  # all: the best one
    assert kept_fail_rate(runs[::-1], 3) == pytest.approx(1 / 4)  # order-free: of 4 triples, {2,3,4} keeps run 2
    # a tie: {1,2} keeps either (1/2 failed), {1,3} keeps 1 (failed), {2,3} keeps 2: (1/2 + 1 + 0) / 3
    assert kept_fail_rate([(8.8, True), (8.8, False), (9.0, False)], 2) == pytest.approx(0.5)
    assert kept_fail_rate(runs, 5) is None and kept_fail_rate(runs, 0) is None and kept_fail_rate([], 1) is None


def test_report_seeds_select_by_loss_reads_fairseq_and_reference_logs(tmp_path, capsys):
    from fairseq_tree.cli.report import main

    runs = []
    for seed, (loss, uas) in enumerate(((8.8, 30.0), (8.9, 3.0), (9.0, 31.0), (9.1, 2.0)), 1):
        run = tmp_path / f"r_s{seed}"
        run.mkdir()
        (run / "train.log").write_text(
            f"2026-11-28 03:50:31 | INFO | valid | epoch 002 | valid on 'valid' subset | loss {loss} | ppl 1 | "
            f"uf1 20.0 | uas {uas} | num_updates 500\n", encoding="utf-8")
        runs.append(str(run))
    # the authors' StructFormer stages: scores_500.txt with train_500.log beside it (loss = its last valid bpc)
    ref = []
    for seed, (bpc, uas) in enumerate(((8.528, 5.0), (8.4, 30.0), (8.45, 29.0)), 1):
        d = tmp_path / f"ref_s{seed}"
        d.mkdir()
        (d / "scores_500.txt").write_text("UAS ...\n" + json.dumps({"uas": uas}) + "\n", encoding="utf-8")
        (d / "train_500.log").write_text(
            "| end of epoch   1 | time: 316.96s | valid loss  6.26 | valid ppl   521.49 | valid bpc    1.000\n"
            f"| end of epoch   2 | time: 315.62s | valid loss  5.91 | valid ppl   369.17 | valid bpc    {bpc}\n",
            encoding="utf-8")
        ref.append(str(d / "scores_500.txt"))
    nolog = tmp_path / "ref_s9" / "scores_500.txt"
    nolog.parent.mkdir()
    nolog.write_text(json.dumps({"uas": 28.0}) + "\n", encoding="utf-8")
    argv = ["seeds", "--below", "16.7", "--at", "500", "--select-by", "loss", "--keep", "2",
            "--group", "a", *runs, "--group", "theirs", *ref, str(nolog)]
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith("| under, the lowest loss of 2 kept |") and lines[1].endswith("|---:|---:|")
    assert lines[2] == "| a | 4 | 2 | 3.0, 2.0 | 30.5 ± 0.7 | - | 0.333 |"  # kept_fail_rate's first case
    # theirs: s1 (8.528, failed) is the highest of three bpc: never the lower of a pair; s9 has no log, not chosen
    assert lines[3].startswith("| theirs | 4 | 1 | 5.0 |") and lines[3].endswith("| 0.000 |")
    assert lines[4] == f"theirs: no loss at 500 updates: {nolog}"
    assert main([*argv[:5], "--select-max", *argv[5:]]) == 0  # the highest loss of 2: a's 4 / 6; theirs' s1 2 of 3
    out = capsys.readouterr().out.splitlines()
    assert out[2].endswith("| 0.667 |") and out[3].endswith("| 0.667 |")
    assert main(argv[:7] + ["--keep", "5"] + argv[9:]) == 0  # more seeds kept from than a group has: no rate
    assert capsys.readouterr().out.splitlines()[2].endswith("| - | - |")
    # defaults: the lowest of 3; a run exactly at the threshold is not under it (as the count's "under")
    (tmp_path / "r_s3" / "train.log").write_text((tmp_path / "r_s3" / "train.log").read_text().replace(
        "uas 31.0", "uas 16.7"), encoding="utf-8")
    assert main(argv[:7] + argv[9:]) == 0  # of the 4 triples, {2,3,4} keeps run 2 (failed): 1 / 4
    out = capsys.readouterr().out.splitlines()
    assert out[0].endswith("| under, the lowest loss of 3 kept |") and out[2].endswith("| 0.250 |")
    from fairseq_tree.evaluation.induction_runs import seed_rows, seed_table

    rows = seed_rows([("a", runs)], "uas", 16.7, 500, select_by="loss")
    assert rows[0]["kept"] == pytest.approx(0.25)
    assert "| under, the lowest loss of 3 kept |" in seed_table(rows, "uas", 16.7, 500, select_by="loss")
    assert main(argv[:8] + ["1"] + argv[9:]) == 0  # one seed kept: the failure rate, 2 of 4
    assert capsys.readouterr().out.splitlines()[2].endswith("| 0.500 |")
    from fairseq_tree.cli import report_seeds

    with pytest.raises(SystemExit) as e:
        report_seeds.main(["--below", "1", "--select-by", "loss", "--keep", "0", "--group", "a", runs[0]])
    assert e.value.code == 2 and "--keep must be at least 1, got 0" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        report_seeds.main(["--help"])
    assert "--select-by keeps the highest value (default: lowest)" in " ".join(capsys.readouterr().out.split())


def test_table_of_runs_still_training_shows_their_best_validation(tmp_path):
    s1 = tmp_path / "wsj" / "structformer_small_s1"
    _run(tmp_path, "wsj", "structformer_small_s1", [(1000, 30.0), (2000, 35.0), (3000, 34.0)], done=False)
    _valid(s1, {1000: (30.0, 20.0), 2000: (35.0, 25.0), 3000: (34.0, 40.0)})
    _run(tmp_path, "wsj", "structformer_small_s2", [(1000, 33.0)], done=False)
    _valid(tmp_path / "wsj" / "structformer_small_s2", {1000: (33.0, 31.0)})
    _run(tmp_path, "wsj", "structformer_small_s3", [(1000, 10.0)], done=False)  # saved, its validation not logged
    out = table(collect(tmp_path))
    # last logged: the validation lines come last; the selected validations: s1 at 2,000 (35.0, UAS 25.0; not the
    # last one's 40.0), s2 at 1,000 (33.0, 31.0): UF1 34.0 ± 1.4, UAS 28.0 ± 4.2 (sd 6 / sqrt 2), UUAS 51.8 both;
    # no ptb_sample/valid, no Algorithm 3
    assert ("| wsj | `structformer_small` | 1,2,3 | 2000/3000* / 1000/1000* / 1000/1007* | 34.0 ± 1.4 † | - | "
            "28.0 ± 4.2 † | - | 51.8 ± 0.0 † |") in out
    assert out.rstrip().endswith("and Algorithm 3 come when the run stops.")
    _run(tmp_path, "wsj", "structformer_small_s4", [(1000, 20.0)], {"induce_wsj22": (41.0, 20.0)})
    out = table(collect(tmp_path))  # one seed scored: the row is its scores alone, nothing marked
    assert "| 41.0 | - | 20.0 | - | 30.0 |" in out and "†" not in out


def test_report_induction_baselines_from_gold_when_no_run_is_scored(tmp_path, capsys):
    from fairseq_tree.cli.report import main

    _run(tmp_path, "wsj", "structformer_small_s1", [(1000, 30.0)], done=False)
    gold = tmp_path / "gold.mrg"  # gold brackets beyond words and the sentence: (the old man) only
    gold.write_text("(S (NP (DT the) (JJ old) (NN man)) (VP (VBD sat)))\n", encoding="utf-8")
    assert main(["induction", str(tmp_path), "--gold", str(gold)]) == 0
    out = capsys.readouterr().out
    # right-branching's (old man sat), (man sat): F1 0; left-branching's (the old), (the old man): P 1/2, R 1 -> 66.7
    assert "| | right-branching | | | 0.0 | - | | | |" in out
    assert "| | left-branching | | | 66.7 | - | | | |" in out
    assert "| | random trees | | | - | - | | | |" in out  # random trees only from runs' scores (their seeds)
    assert main(["induction", str(tmp_path)]) == 0
    assert "| | right-branching | | | - | - | | | |" in capsys.readouterr().out


def test_report_curves_puts_a_reference_recipes_scores_beside_a_fairseq_log(tmp_path, capsys, monkeypatch):
    from fairseq_tree.cli import report_curves
    from fairseq_tree.cli.report_curves import main
    from fairseq_tree.evaluation.curves import curve

    run = tmp_path / "ours"
    run.mkdir()
    (run / "train.log").write_text("epoch 001 | loss 5 | num_updates 900\n", encoding="utf-8")
    _valid(run, {1000: (26.0, 31.0), 2000: (30.25, 35.5)})
    ref = tmp_path / "reference"
    ref.mkdir()
    for u, uf1, uas in ((1000, 26.3, 31.2), (3000, 29.7, 37.4)):
        (ref / f"scores_{u}.txt").write_text("a table first\n" + json.dumps(
            {"uf1": uf1, "corpus_f1": 24.0, "uas": uas, "uuas": 42.3}) + "\n", encoding="utf-8")
    (ref / "scores_best.txt").write_text(json.dumps({"uf1": 99.0}) + "\n", encoding="utf-8")  # not an update count
    assert curve(ref, "uf1") == {1000: 26.3, 3000: 29.7}
    assert curve(ref, "corpus_uf1") == {1000: 24.0, 3000: 24.0}  # fairseq's name, the scorer's corpus_f1
    assert curve(ref, "ppl", required=False) == {}
    with pytest.raises(SystemExit, match="no scores_U.txt with 'ppl'"):
        curve(ref, "ppl")
    plotted = []
    monkeypatch.setattr(report_curves, "plot", lambda *a: plotted.append(a))  # the figure's inputs, not its pixels
    main([str(run / "train.log"), str(ref), "--names", "ours", "theirs", "--metric", "uf1", "ppl", "uas",
          "--png", "c.png", "--baseline", "38.3"])
    out = capsys.readouterr().out.splitlines()
    assert out[:2] == ["| updates | ours | theirs |", "|---:|---:|---:|"]
    # ppl: 133.58 in every validation line of ours, none in the reference's scores (only the first metric is required)
    assert out[2:] == ["| 1,000 | 26.0 / 133.6 / 31.0 | 26.3 / - / 31.2 |", "| 2,000 | 30.2 / 133.6 / 35.5 |  |",
                       "| 3,000 |  | 29.7 / - / 37.4 |"]
    assert plotted == [(["ours", "theirs"], [{1000: 26.0, 2000: 30.25}, {1000: 26.3, 3000: 29.7}], "uf1", "c.png",
                        38.3)]
    main([str(ref)])  # the defaults: UF1, the run named after its path
    assert capsys.readouterr().out.splitlines() == ["| updates | reference |", "|---:|---:|", "| 1,000 | 26.3 |",
                                                    "| 3,000 | 29.7 |"]
    with pytest.raises(SystemExit, match="no scores_U.txt with 'ppl'"):
        main([str(ref), "--metric", "ppl", "uf1"])  # the first metric is required
    with pytest.raises(SystemExit) as e:
        main([str(run / "train.log"), str(ref), "--names", "ours"])
    assert e.value.code == 2 and "--names gives 1 names for 2 runs" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "--metric METRIC [METRIC ...] one or more (a cell per run: 'a / b / c')" in help_text
    assert "--png PNG the first metric's curves" in help_text and "scored by our scorer" in help_text


def test_curves_plot_zooms_on_the_lowest_value_and_writes_a_6_by_3_5_inch_figure_at_120_dpi(tmp_path, monkeypatch):
    import struct

    from matplotlib.figure import Figure

    from fairseq_tree.cli.report_curves import plot

    limits, save = [], Figure.savefig
    monkeypatch.setattr(Figure, "savefig", lambda fig, *a, **k: (limits.append(fig.axes[0].get_ylim()),
                                                                  save(fig, *a, **k)))
    png = tmp_path / "c.png"
    # the lowest value over both curves is 3.0 (the second's minimum): y from 3.0 - 0.05 x 0.5 to 3.0 + 0.5
    plot(["a", "b"], [{1: 5.0, 2: 4.0}, {1: 6.0, 2: 3.0}], "loss", str(png), zoom=0.5)
    assert limits == [(pytest.approx(2.975), pytest.approx(3.5))]
    width, height = struct.unpack(">II", png.read_bytes()[16:24])  # the PNG's IHDR: 6 x 3.5 inches at 120 dpi
    assert (width, height) == (720, 420)
    plot(["a"], [{1: 5.0, 2: 4.0}], "loss", str(png))  # no zoom: matplotlib's own limits, around the data
    assert limits[1][0] < 4.0 and limits[1][1] > 5.0 and limits[1][1] - limits[1][0] < 1.5
