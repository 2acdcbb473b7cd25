"""fairseq_tree.evaluation.induction_runs: the table of the induction recipe's runs, against hand-computed means."""

import json

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
