"""scripts/recipes/train_tree2seq_multi30k.sh end to end on a Multi30k slice: a stanza-parsed en-de data-bin, the
trivial tree source, en-de and en-fr, the transformer beside tree2seq, checkpoint averaging, beam search, sacreBLEU, the
trees' quality and the results table."""

import re
import subprocess
import sys

import pytest
from conftest import REPO, SHARED, run_command

pytestmark = pytest.mark.slow(minutes=4)  # measured: 238 s (-n 0, the busy 2-core box, 2026-11-27)

M30K = SHARED / "data" / "multi30k"
#: EXTRA for every run: one layer each side, width 64 (the recipe's own 3+3 layers of width 256 write 68 MB
#: checkpoints, five per run; what this test checks is the recipe's steps, not the model)
SMALL = " ".join(f"--{side}-{flag} {value}" for side in ("encoder", "decoder") for flag, value in
                 (("layers", 1), ("embed-dim", 64), ("ffn-embed-dim", 128), ("attention-heads", 2)))


def _slice(dest, sizes):
    """The first ``sizes[split]`` lines of each Multi30k split, en / de / fr."""
    dest.mkdir()
    for split, n in sizes.items():
        for lang in ("en", "de", "fr"):
            with open(M30K / f"{split}.{lang}", encoding="utf-8") as f:
                (dest / f"{split}.{lang}").write_text("".join(line for _, line in zip(range(n), f)), encoding="utf-8")


def test_multi30k_recipe_trivial_trees_de_and_fr(tiny_stanza_models, tmp_path):
    """TREES=trivial, TGTS="de fr", one seed, 4 updates, the last 2 update checkpoints averaged, TREE_EXTRA for
    the tree2seq runs: every run trains to 4 updates and is scored; en-fr gets its own BPE and joint dictionary
    over DATA_BIN's stanza trees (though TREES has no stanza), shared by its transformer and tree2seq runs; the
    right-branching trees' UF1 is the literature's baseline (38.3 wsj22, 40.9 ptb_sample/valid:
    ../shared/notes/eval_protocol.md)."""
    data = tmp_path / "m30k"
    _slice(data, {"train": 300, "valid": 40, "test": 40})
    bin_ = tmp_path / "bin"
    run_command(sys.executable, "-m", "fairseq_tree.cli.preprocess", "-s", "en", "-t", "de", "--trainpref",
                data / "train", "--validpref", data / "valid", "--testpref", data / "test", "--joined-dictionary",
                "--parser", "stanza", "--stanza-model-dir", tiny_stanza_models, "--bpe-merges", "300",
                "--destdir", bin_)
    work = tmp_path / "work"
    settings = dict(PYTHON=sys.executable, TREES="trivial", TGTS="de fr", SEEDS="1", UPDATES="4", AVERAGE="2",
                    SAVE_EVERY="2", GEN_EXTRA="--max-len-a 0 --max-len-b 8",  # 4 updates: short outputs
                    TREE_EXTRA="--tree-batch-by leaves", EXTRA=SMALL)
    proc = run_command("env", *(f"{k}={v}" for k, v in settings.items()),
                       "bash", REPO / "scripts" / "recipes" / "train_tree2seq_multi30k.sh", bin_, work)

    fr = work / "data-bin" / "stanza.en-fr"
    assert (fr / "dict.fr.txt").read_text() == (fr / "dict.en.txt").read_text()  # joint
    assert (fr / "train.en.trees").read_text() == (bin_ / "train.en.trees").read_text()
    assert (work / "data-bin" / "trivial.en-fr" / "dict.en.txt").read_text() == (fr / "dict.en.txt").read_text()
    assert (fr / "bpe.codes").read_text() != (bin_ / "bpe.codes").read_text()  # learned on en + fr
    for tgt in ("de", "fr"):
        for name in ("transformer", "tree2seq_trivial"):
            run = work / "ckpt" / tgt / f"{name}_s1"
            kept = sorted(int(p.stem.rsplit("_", 1)[1]) for p in run.glob("checkpoint_*_*.pt"))
            assert kept == [2, 4]  # the update checkpoints that were averaged
            assert (run / "checkpoint_avg.pt").is_file()
            assert re.search(r"BLEU = [\d.]+", (run / "test.gen").read_text())
            # TREE_EXTRA reaches the tree2seq runs only (the translation task would reject the flag)
            assert ("'tree_batch_by': 'leaves'" in (run / "train.log").read_text()) == (name != "transformer")
            assert re.search(r"\bencoder_layers=1\b", (run / "train.log").read_text())  # EXTRA reaches every run

    table = (work / "results.md").read_text()
    assert proc.stdout.endswith(table)  # the table is printed last
    rows = [[c.strip() for c in r.split("|")[1:-1]] for r in table.splitlines() if r.startswith("| t")]
    assert [r[0] for r in rows] == ["transformer", "tree2seq_trivial"] * 2
    assert all(r[-3] == "4" and r[-1] == "cpu" for r in rows)
    assert rows[1][1:3] == ["— / 38.3", "— / 40.9"] and rows[0][1:3] == ["—", "—"]

    # a finished run is not retrained with other flags under its name: the rerun stops before any training
    script = ("bash", REPO / "scripts" / "recipes" / "train_tree2seq_multi30k.sh", bin_, work)
    other = {**settings, "TREE_EXTRA": ""}
    proc = subprocess.run(["env", *(f"{k}={v}" for k, v in other.items()), *map(str, script)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 2
    assert "ckpt/de/tree2seq_trivial_s1/flags.txt: this run was trained with other flags" in proc.stderr
    assert "--tree-batch-by leaves" in proc.stderr  # the "was:" line
    # more UPDATES continue a finished run from checkpoint_last.pt (to 6, not from scratch), rescored (the
    # transformer: the step is the same bash for every run, and TREES="" leaves tree2seq_trivial at 4)
    before = (work / "ckpt" / "de" / "transformer_s1" / "test.gen").stat().st_mtime
    run_command("env", *(f"{k}={v}" for k, v in {**settings, "TGTS": "de", "UPDATES": "6", "TREES": ""}.items()),
                *script)
    run = work / "ckpt" / "de" / "transformer_s1"
    log = (run / "train.log").read_text()
    assert re.search(r"Loaded checkpoint \S+checkpoint_last.pt \(epoch \d+ @ 4 updates\)", log)
    assert sorted(int(p.stem.rsplit("_", 1)[1]) for p in run.glob("checkpoint_*_*.pt")) == [4, 6]
    assert (run / "test.gen").stat().st_mtime > before
    assert "Loaded checkpoint" not in (work / "ckpt" / "de" / "tree2seq_trivial_s1" / "train.log").read_text()
    rows = [[c.strip() for c in r.split("|")[1:-1]] for r in (work / "results.md").read_text().splitlines()
            if r.startswith("| t")]
    assert [(r[0], r[-3]) for r in rows] == [("transformer", "6")]
    # MATCHED adds the positions-matched transformer of a tree source (its data-bin built from that source's),
    # batched by the leaves as TREE_EXTRA batches tree2seq; TREES may be empty; the finished transformer is kept
    before = (work / "ckpt" / "de" / "transformer_s1" / "test.gen").stat().st_mtime
    proc = run_command("env", *(f"{k}={v}" for k, v in {**settings, "TGTS": "de", "UPDATES": "6", "TREES": "",
                                                          "MATCHED": "trivial"}.items()), *script)
    pm = work / "ckpt" / "de" / "transformer_pm_trivial_s1"
    flags = (pm / "flags.txt").read_text()
    assert "pm_trivial.en-de --task positions_matched_translation --arch transformer" in flags
    assert "--pm-batch-by leaves" in flags and "'pm_batch_by': 'leaves'" in (pm / "train.log").read_text()
    assert (work / "data-bin" / "pm_trivial.en-de" / "positions_matched.json").is_file()
    assert re.search(r"BLEU = [\d.]+", (pm / "test.gen").read_text())
    assert (work / "ckpt" / "de" / "transformer_s1" / "test.gen").stat().st_mtime == before
    rows = [[c.strip() for c in r.split("|")[1:-1]] for r in (work / "results.md").read_text().splitlines()
            if r.startswith("| t")]
    assert [r[0] for r in rows] == ["transformer", "transformer_pm_trivial"]
    assert rows[1][1:3] == ["— / 38.3", "— / 40.9"] and rows[1][-3] == "6"
