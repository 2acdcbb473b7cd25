"""fairseq-tree-report anchor (fairseq_tree/cli/report_anchor.py) as the recipe calls it, with no
``--bootstrap-samples``: the paired bootstrap draws sacreBLEU's 1000 samples. A bug of one line that
tests/unit/test_report_anchor.py let through (it always passes the flag: scripts/mutation/, docs/development.md)."""

from test_report_anchor import SENTENCES, make_run

from fairseq_tree.cli import report_anchor
from fairseq_tree.evaluation.translation_runs import paired_p


def test_the_default_bootstrap_is_sacrebleus_1000_samples(tmp_path, capsys):
    worse = ["ein hund .", "zwei männer spielen .", "eine frau liest ."]
    make_run(tmp_path, "transformer", 1, 40.0, 40.2, worse)
    make_run(tmp_path, "tree2seq_lal", 1, 41.5, 41.3, SENTENCES)
    refs = tmp_path / "test.de"
    refs.write_text("\n".join(SENTENCES) + "\n")
    assert report_anchor.main([str(tmp_path), "--reference", str(refs), "--seeds", "1",
                               "--runs", "transformer", "tree2seq_lal"]) == 0
    row = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| tree2seq_lal − ")][0]
    expected = paired_p(worse, SENTENCES, SENTENCES, samples=1000, lowercase=True)  # sacrebleu --paired-bs
    assert row.split(" | ")[6] == f"{expected:.3f}"
