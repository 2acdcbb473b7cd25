"""scripts/recipes/induction_wsj.sh on a slice of the data (issue 49): the papers' protocol (training text =
ptb_sample/train + wsj_text, wsj22 never trained on, selection on wsj22 UF1), a slice of a run ended by STOP_AFTER,
the same call again resuming it from its checkpoint to its end, both parses of StructFormer scored, the table."""

import re
import subprocess
import sys

import pytest
from conftest import REPO, SHARED

pytestmark = pytest.mark.slow(minutes=4)  # + ~1 min for the plateau variant (2026-11-29)

D = SHARED / "data"
FIRST_WSJ = ("confidence in the pound is widely expected to take another sharp dive if trade figures for september "
             "due for release tomorrow fail to show a substantial improvement from july and august 's near-record "
             "deficits")


def _head(src, dst, n, sep="\n"):
    """The first n lines (sep '\\n') or blank-line blocks (sep '\\n\\n') of src, written to dst."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    parts = [p for p in src.read_text(encoding="utf-8").split(sep) if p.strip()][:n]
    dst.write_text(sep.join(parts) + sep, encoding="utf-8")


@pytest.fixture(scope="module")
def shared_slice(tmp_path_factory):
    if not (D / "wsj_text" / "wsj20.txt").is_file():
        pytest.skip(f"{D / 'wsj_text'} not found")
    root = tmp_path_factory.mktemp("shared")
    d = root / "data"
    _head(D / "ptb_sample" / "train.mrg", d / "ptb_sample" / "train.mrg", 40)
    _head(D / "ptb_sample" / "valid.mrg", d / "ptb_sample" / "valid.mrg", 20)
    _head(D / "ptb_sample" / "valid.conllu", d / "ptb_sample" / "valid.conllu", 20, "\n\n")
    _head(D / "wsj22" / "wsj22.mrg", d / "wsj22" / "wsj22.mrg", 25)
    _head(D / "wsj22" / "wsj22.sd.conll", d / "wsj22" / "wsj22.sd.conll", 25, "\n\n")
    for name in ("wsj15-18.txt", "wsj20.txt"):
        _head(D / "wsj_text" / name, d / "wsj_text" / name, 30)
    return root


def _recipe(shared, work, **env):
    base = dict(PYTHON=sys.executable, PATH="/usr/bin:/bin", RUNS="structformer_tiny", SEEDS="1", CORPUS="wsj",
                VALIDATE="3", PATIENCE="50", POLL="1", MAX_UPDATE="9")
    return subprocess.run(["bash", str(REPO / "scripts" / "recipes" / "induction_wsj.sh"), str(shared), str(work)],
                          env=dict(base, **env), capture_output=True, text=True, timeout=900)


def test_induction_recipe_slice_resume_and_scores(shared_slice, tmp_path):
    work = tmp_path / "work"
    run = work / "wsj" / "structformer_tiny_s1"
    first = _recipe(shared_slice, work, STOP_AFTER="3")
    assert first.returncode == 0, first.stderr[-3000:]
    text = (work / "wsj" / "text" / "train.txt").read_text(encoding="utf-8").splitlines()
    assert len(text) == 40 + 30 + 30  # every sentence of the slice has words
    assert text[40] == FIRST_WSJ  # the treebank's 40 sentences first, then wsj_text normalised (--tokenize ptb)
    wsj22 = (shared_slice / "data" / "wsj22" / "wsj22.mrg").read_text(encoding="utf-8")
    assert "influential members of the house" not in "\n".join(text) and "Influential" in wsj22  # not trained on
    assert not (run / ".done").exists() and not (run / "induce_wsj22").exists()
    assert "| wsj | `structformer_tiny` | 1 | 3/3* |" in first.stdout  # best at update 3 of 3 so far, training
    sliced = (run / "train.log").read_text(encoding="utf-8")
    repeat = _recipe(shared_slice, work, STOP_AFTER="3")  # the slice again: fairseq would train a 4th update
    assert repeat.returncode == 0 and (run / "train.log").read_text(encoding="utf-8") == sliced

    second = _recipe(shared_slice, work)
    assert second.returncode == 0, second.stderr[-3000:]
    log = (run / "train.log").read_text(encoding="utf-8")
    assert log.count("start/resume on cpu") == 2
    assert "Loaded checkpoint" in log and "num_updates 9" in log.replace("=", " ") and (run / ".done").is_file()
    for name in ("induce_wsj22", "induce_wsj22_joint", "induce_ptbvalid", "induce_ptbvalid_joint"):
        assert (run / name / "scores.json").is_file(), name
    row = next(line for line in second.stdout.splitlines() if "`structformer_tiny`" in line)
    assert "/9 |" in row and "*" not in row and row.count(" - ") == 0  # every cell scored
    assert "| | right-branching |" in second.stdout and "| | right chain |" in second.stdout

    again = _recipe(shared_slice, work)  # a finished run trains nothing more
    assert again.returncode == 0 and (run / "train.log").read_text(encoding="utf-8") == log


def test_code_variant_trains_as_the_authors_code(shared_slice, tmp_path):
    """VARIANTS=code: StructFormer and constituent attention with their authors' code's settings, each in its own
    run directory (the flags reach fairseq-train), scored like the paper's runs; an arch without a code variant is
    skipped with a message. VARIANTS=code_model: StructFormer's model and optimizer settings of their code with
    our training choices (init, dropouts, per-sentence calibration, masks, decoupled decay); StructFormer's alone."""
    work = tmp_path / "work"
    res = _recipe(shared_slice, work, RUNS="structformer_tiny constituent_transformer_tiny mlm_transformer_tiny",
                  VARIANTS="code code_model", MAX_UPDATE="3")
    assert res.returncode == 0, res.stderr[-3000:]
    assert "mlm_transformer_tiny: no code variant" in res.stderr
    assert "constituent_transformer_tiny: no code_model variant" in res.stderr
    assert "mlm_transformer_tiny: no code_model variant" in res.stderr
    assert not (work / "wsj" / "constituent_transformer_tiny_code_model_s1").exists()
    assert not (work / "wsj" / "constituent_transformer_tiny_s1").exists()
    assert not list((work / "wsj").glob("mlm_transformer_tiny*"))
    ca = work / "wsj" / "constituent_transformer_tiny_code_s1"
    log = (ca / "train.log").read_text(encoding="utf-8")
    for arg in ("ca_link_scale=256.0", "ca_code_diagonal=True", "ca_own_norm=True", "ca_parse_min_layer=2",
                "ca_parse_code_rule=True", "lm_head='untied'", "clip_norm=1.5", "warmup_updates=0",
                "batch_size=64", "max_tokens=8192", "lr=[0.0001]", "adam_eps=1e-09", "ca_bos_in_chain=True",
                "embed_init='xavier'", "ca_code_init=True", "unsorted_batches=True"):
        assert arg in log, arg
    assert "masking for constituent_transformer_tiny: MaskPolicy(prob=0.142857, leave_unmasked=0.1, " \
           "random_token=0.1, sampling='bernoulli', bos_unk=True)" in log
    assert (ca / "induce_wsj22" / "scores.json").is_file() and not (ca / "induce_wsj22_joint").exists()
    run = work / "wsj" / "structformer_tiny_code_s1"
    flags = (run / "flags.txt").read_text(encoding="utf-8")
    assert "--no-scale-embedding --lm-head linear" in flags and "--adam-betas (0.9,0.999)" in flags
    assert "inverse_sqrt" not in flags and "--clip-norm 0.25" in flags
    log = (run / "train.log").read_text(encoding="utf-8")
    their_training = ("sf_code_init=True", "embed_init='uniform'", "activation_dropout=0.1", "embed_dropout=0.0",
                      "sf_calibrate_batch=True", "optimizer='adam_l2'")
    for arg in ("no_scale_embedding=True", "lm_head='linear'", "sf_calibrate=True", "sf_parser_layernorm=True",
                "encoder_learned_pos=True", "clip_norm=0.25", "warmup_updates=0") + their_training:
        assert arg in log, arg
    assert "sampling='bernoulli'" in log
    assert (run / "induce_wsj22" / "scores.json").is_file()
    model = work / "wsj" / "structformer_tiny_code_model_s1"
    log = (model / "train.log").read_text(encoding="utf-8")
    for arg in ("no_scale_embedding=True", "lm_head='linear'", "sf_calibrate=True", "clip_norm=0.25",
                "optimizer='adam'", "sf_code_init=False", "sf_calibrate_batch=False", "activation_dropout=0.0"):
        assert arg in log, arg
    assert "sampling='bernoulli'" not in log and "embed_init='uniform'" not in log
    assert (model / "induce_wsj22" / "scores.json").is_file()
    assert "| wsj | `structformer_tiny_code_model` | 1 | 3/3 |" in res.stdout
    assert "| wsj | `structformer_tiny_code` | 1 | 3/3 |" in res.stdout


def test_code_variant_with_their_plateau_schedule_validates_every_epoch(shared_slice, tmp_path):
    """SCHEDULE=plateau VALIDATE=epoch: StructFormer's code variant with --lr-scheduler loss_plateau in place of
    the fixed rate, a validation (and a save) at the end of every epoch; without VALIDATE=epoch it refuses."""
    refused = _recipe(shared_slice, tmp_path / "w0", VARIANTS="code", SCHEDULE="plateau")
    assert refused.returncode == 2 and "set VALIDATE=epoch" in refused.stderr
    res = _recipe(shared_slice, tmp_path / "work", VARIANTS="code", SCHEDULE="plateau", VALIDATE="epoch")
    assert res.returncode == 0, res.stderr[-3000:]
    run = tmp_path / "work" / "wsj" / "structformer_tiny_code_s1"
    flags = (run / "flags.txt").read_text(encoding="utf-8")
    assert "--lr-scheduler loss_plateau" in flags and "--warmup-updates" not in flags and "fixed" not in flags
    log = (run / "train.log").read_text(encoding="utf-8")
    epochs = len(re.findall(r"end of epoch \d+ \(average epoch stats below\)", log))
    validations = re.findall(r"valid on 'valid' subset .*?num_updates (\d+)", log)
    assert epochs >= 2 and len(validations) == epochs  # one at each epoch's end (the last at MAX_UPDATE = 9)
    assert "'lr_scheduler': {'_name': 'loss_plateau', 'lr_shrink': 0.5, 'lr_patience': 2, 'lr_threshold': 0.0" in log


def test_gpu_lease_induction_phase_brings_back_the_curves(shared_slice, tmp_path):
    """scripts/recipes/gpu_checks.sh's `induction` phase (on the CPU here: RUNS_DEVICE=cpu): both runs train at once
    by the recipe's own command (here to IND_MAX_UPDATE=4, well before the deadline: the phase ends when they do; the
    deadline's kill is the `runs` phase's, tested in test_multi30k_anchor_recipe.py), no process is left, and their
    logs and their UF1 / UAS curves come back in OUTDIR."""
    import os
    from pathlib import Path

    out, work = tmp_path / "out", tmp_path / "work"
    work.mkdir()
    env = dict(PATH=f"{Path(sys.executable).parent}:/usr/bin:/bin", PHASES="induction", BUDGET="280", PACK_SECS="15",
               RUNS_DEVICE="cpu", IND_RUNS="structformer_tiny constituent_transformer_tiny", IND_VALIDATE="2",
               IND_MAX_UPDATE="4",
               IND_WORK=str(work), SHARED=str(shared_slice), OMP_NUM_THREADS="1", HOME=os.environ.get("HOME", "/"))
    res = subprocess.run(["bash", str(REPO / "scripts" / "recipes" / "gpu_checks.sh"), str(out)], cwd=REPO, env=env,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    summary = (out / "induction.log").read_text(encoding="utf-8")
    for arch in ("structformer_tiny", "constituent_transformer_tiny"):
        log = (out / f"induction_{arch}.log").read_text(encoding="utf-8")
        assert f"--arch {arch}" in (work / f"induction_{arch}" / "wsj" / f"{arch}_code_s1" / "flags.txt").read_text()
        valid = [line for line in log.splitlines() if "valid on 'valid' subset" in line]
        assert [line.split("| num_updates ")[1].split()[0] for line in valid] == ["2", "4"], log[-2000:]
        assert f"== {arch}: updates=4\n" in summary
    # the curves: UF1 of both runs, UAS of StructFormer's alone (constituent attention has no heads)
    uf1, uas = summary.split("| updates | ")[1:3]
    assert uf1.startswith("induction_structformer_tiny | induction_constituent_transformer_tiny |")
    assert uas.startswith("induction_structformer_tiny |\n") and "\n| 2 | " in uas and "\n| 4 | " in uas
    left = subprocess.run(["pgrep", "-f", str(work)], capture_output=True, text=True)
    assert left.stdout == "", left.stdout
