"""The first hour of a new user (issue 50, items 2, 3, 4 and 10), with the real CLIs on small real data:

* a checkpoint records its data directory as an absolute path and loads from any working directory; one that
  recorded a relative path (before) still loads from where it did, and elsewhere the advice names each tool's own
  flag (``--data``, ``--parser-data``); ``--parser lal`` given an induction checkpoint names ``--parser induced``;
* the stanza recipe runs the active environment's console script; "no stanza model" names the installed
  ``fairseq-tree-train-stanza``;
* Ctrl-C during fairseq-tree-preprocess prints one line with the command that resumes (exit 130); a finished
  preprocessing run again says so and does nothing, unless an input or an option changed;
* every console script's ``--help`` is plain text (no reST markup)."""

import contextlib
import io
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
import time

import pytest
import tomllib
import torch
from conftest import BIN, REPO, SHARED
from tiny_models import RAW, USER_DIR, build_models, ok, sh

M30K = SHARED / "data" / "multi30k"
PTB = SHARED / "data" / "ptb_sample"


# ------------------------------------------------------------------ checkpoints trained from a relative path
@pytest.fixture(scope="module")
def rel(tmp_path_factory):
    """A lal_parser (--no-pos-tags) and a structformer trained from their data-bins' directory with the relative
    paths a user types (``fairseq-train lal_bin ...``), and copies of both whose recorded data directory is
    relative again, as every checkpoint trained before this fix: -> the directory."""
    d = tmp_path_factory.mktemp("first_hour")
    build_models(d, families=("lal_notags", "structformer"), train_models=False)  # lal_bin, ind_bin, raw.txt
    common = ["--user-dir", USER_DIR, "--cpu", "--seed", "1", "--no-epoch-checkpoints", "--disable-validation",
              "--num-workers", "0"]
    ok(BIN / "fairseq-train", "lal_bin", "--save-dir", "ck_lal", *common, "--task", "constituency_parsing",
       "--arch", "lal_parser_tiny", "--criterion", "span_hinge_dependency", "--optimizer", "adam", "--lr", "4e-3",
       "--batch-size", "10", "--max-epoch", "1", "--no-pos-tags", cwd=d)
    ok(BIN / "fairseq-train", "ind_bin", "--save-dir", "ck_sf", *common, "--task", "tree_induction", "--arch",
       "structformer_tiny", "--criterion", "masked_lm", "--optimizer", "adam", "--lr", "1e-3", "--max-tokens",
       "1500", "--max-update", "2", cwd=d)
    from fairseq_tree import safe_loading

    for ck, data in (("ck_lal", "lal_bin"), ("ck_sf", "ind_bin")):
        state = safe_loading.load(d / ck / "checkpoint_last.pt")
        state["cfg"]["task"]["data"] = data
        torch.save(state, d / ck / "old.pt")
    (d / "raw.en").write_text("\n".join(RAW) + "\n", encoding="utf-8")  # raw text for --trainpref raw -s en
    (d / "elsewhere").mkdir()
    return d


def run(*cmd, env):
    """A command with its own environment (one thread) -> CompletedProcess; never raises on a non-zero exit."""
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=600,
                          env=dict(env, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1"))


def test_checkpoints_record_their_data_directory_absolute_and_load_from_anywhere(rel):
    from fairseq_tree import safe_loading

    for ck, data in (("ck_lal", "lal_bin"), ("ck_sf", "ind_bin")):
        assert safe_loading.load(rel / ck / "checkpoint_last.pt")["cfg"]["task"]["data"] == str(rel / data)
    away = rel / "elsewhere"
    ok(BIN / "fairseq-tree-parse", "--path", rel / "ck_lal" / "checkpoint_last.pt", "--input", rel / "raw.txt",
       "--output", away / "p", "--cpu", cwd=away)
    assert len((away / "p.trees").read_text().splitlines()) == len(RAW)
    ok(BIN / "fairseq-tree-induce", "--path", rel / "ck_sf" / "checkpoint_last.pt", "--input", rel / "raw.txt",
       "--out", away / "ind", "--cpu", "--no-perplexity", cwd=away)
    assert len((away / "ind" / "trees.txt").read_text().splitlines()) == len(RAW)


def test_an_old_relative_checkpoint_loads_where_it_did(rel, monkeypatch):
    from fairseq_tree.inference.induce import load
    from fairseq_tree.inference.parse import LALParser

    monkeypatch.chdir(rel)  # the training's working directory: its relative data-bins are there
    assert LALParser(str(rel / "ck_lal" / "old.pt"), device="cpu").parse([["The", "dog", "barks", "."]])
    model, task = load(str(rel / "ck_sf" / "old.pt"), device="cpu")
    assert task.cfg.data == str(rel / "ind_bin")  # read from this directory, as the relative path said


def test_elsewhere_the_advice_names_each_tools_own_flag(rel):
    away = rel / "elsewhere"
    parse = sh(BIN / "fairseq-tree-parse", "--path", rel / "ck_lal" / "old.pt", "--input", rel / "raw.txt",
               "--cpu", cwd=away)
    assert parse.returncode != 0 and "'lal_bin', which is not there" in parse.stderr
    assert "fairseq-tree-parse --data DIR" in parse.stderr and "Traceback" not in parse.stderr
    induce = sh(BIN / "fairseq-tree-induce", "--path", rel / "ck_sf" / "old.pt", "--input", rel / "raw.txt",
                "--out", away / "i", "--cpu", cwd=away)
    assert induce.returncode != 0 and "fairseq-tree-induce --data DIR" in induce.stderr
    prep = sh(BIN / "fairseq-tree-preprocess", "-s", "en", "--only-source", "--trainpref", rel / "raw",
              "--parser", "lal", "--parser-model", rel / "ck_lal" / "old.pt", "--device", "cpu", "--destdir",
              away / "bin", cwd=away)
    assert prep.returncode == 1 and "'lal_bin', which is not there" in prep.stderr
    assert "(--parser-data DIR)" in prep.stderr and "--data DIR" not in prep.stderr
    # the flag named works
    ok(BIN / "fairseq-tree-induce", "--path", rel / "ck_sf" / "old.pt", "--input", rel / "raw.txt", "--out",
       away / "i", "--cpu", "--no-perplexity", "--data", rel / "ind_bin", cwd=away)


def test_a_parser_backend_given_another_parsers_checkpoint_names_its_parser(rel):
    from fairseq_tree.inference.checkpoint import WrongCheckpoint
    from fairseq_tree.parsers import build_parser

    with pytest.raises(WrongCheckpoint) as e:
        build_parser("lal", model=str(rel / "ck_sf" / "checkpoint_last.pt"), device="cpu")
    assert "'tree_induction' checkpoint (arch structformer_tiny)" in str(e.value)
    assert "--parser lal takes constituency_parsing checkpoints: give it with --parser induced" in str(e.value)
    assert "fairseq-tree-induce" not in str(e.value)
    with pytest.raises(WrongCheckpoint, match="--parser induced takes tree_induction checkpoints: give it with "
                                              "--parser lal"):
        build_parser("induced", model=str(rel / "ck_lal" / "checkpoint_last.pt"), device="cpu")
    prep = sh(BIN / "fairseq-tree-preprocess", "-s", "en", "--only-source", "--trainpref", rel / "raw", "--parser",
              "lal", "--parser-model", rel / "ck_sf" / "checkpoint_last.pt", "--device", "cpu", "--destdir",
              rel / "elsewhere" / "bin_sf")
    assert prep.returncode == 1 and "give it with --parser induced" in prep.stderr
    assert "fairseq-tree-induce" not in prep.stderr


# ------------------------------------------------------------------ recipes and messages: the installed tools
RECIPE = REPO / "scripts" / "recipes" / "train_stanza_parser.sh"


def test_the_stanza_recipe_runs_the_active_environments_console_script(tmp_path):
    """PYTHON unset: the ``python`` first on PATH (an activated environment) is the one whose
    fairseq-tree-train-stanza runs, not the checkout's .venv: one that lacks it is named, not bypassed."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHON", "VIRTUAL_ENV")}
    proc = run("bash", RECIPE, tmp_path / "tb", tmp_path / "out", "--help", env=dict(env, PATH=f"{BIN}:/usr/bin:/bin"))
    assert proc.returncode == 0 and proc.stdout.startswith("usage: fairseq-tree-train-stanza"), proc.stderr
    bare = tmp_path / "bare"  # an environment without the package (a real venv, no pip needed)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    proc = run("bash", RECIPE, tmp_path / "tb", tmp_path / "out", "--help",
               env=dict(env, PATH=f"{bare / 'bin'}:/usr/bin:/bin"))
    assert proc.returncode == 2 and proc.stdout == ""
    assert f"fairseq-tree-train-stanza is not installed beside python ({bare / 'bin'})" in proc.stderr
    assert list(REPO.glob("scripts/recipes/*.sh")) and not [
        p.name for p in REPO.glob("scripts/**/*.sh") if ".venv/bin" in re.sub(r"#.*", "", p.read_text())]


def test_no_stanza_model_names_the_installed_trainer(tmp_path, monkeypatch):
    empty = tmp_path / "stanza_resources"
    empty.mkdir()
    for f in ("train.en", "train.de"):
        (tmp_path / f).write_text("".join((M30K / f).read_text().splitlines(keepends=True)[:3]))
    proc = run(BIN / "fairseq-tree-preprocess", "-s", "en", "-t", "de", "--trainpref", tmp_path / "train",
               "--parser", "stanza", "--destdir", tmp_path / "bin",
               env=dict(os.environ, STANZA_RESOURCES_DIR=str(empty)))
    assert proc.returncode == 1
    assert "    fairseq-tree-train-stanza TREEBANK_DIR OUTDIR --size small" in proc.stderr
    assert "scripts/" not in proc.stderr
    # fairseq-tree-classify's raw-text parser: the same backend, built from its own options
    from fairseq_tree.cli import classify
    from fairseq_tree.parsers.raw_text import RawTextParser
    from fairseq_tree.preprocess.pipeline import parser_options

    monkeypatch.setenv("STANZA_RESOURCES_DIR", str(empty))
    args = classify.get_parser().parse_args(["--path", "CKPT", "--input", "text.txt", "--input-format", "raw",
                                             "--cpu"])
    with pytest.raises(FileNotFoundError) as e:
        RawTextParser(args.parser, args.tokenize, "en", **parser_options(args)).backend  # noqa: B018
    assert "fairseq-tree-train-stanza TREEBANK_DIR OUTDIR" in str(e.value) and "scripts/" not in str(e.value)


# ------------------------------------------------------------------ Ctrl-C and a finished run
def _lines(path, n):
    return "".join(path.read_text(encoding="utf-8").splitlines(keepends=True)[:n])


def test_ctrl_c_prints_one_line_with_the_resume_command(rel, tmp_path):
    """SIGINT to the command's process group (what Ctrl-C in a terminal does) while its 2 worker processes
    parse: the run stops with exit 130, and after the signal exactly one line comes: the command that resumes.
    That command then finishes the run."""
    for lang in ("en", "de"):
        (tmp_path / f"train.{lang}").write_text(_lines(M30K / f"train.{lang}", 1500), encoding="utf-8")
    cmd = [str(BIN / "fairseq-tree-preprocess"), "-s", "en", "-t", "de", "--trainpref", str(tmp_path / "train"),
           "--parser", "lal", "--parser-model", str(rel / "ck_lal" / "checkpoint_last.pt"), "--device", "cpu",
           "--workers", "2", "--shard-size", "100", "--bpe-merges", "50", "--destdir", str(tmp_path / "bin")]
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            cwd=tmp_path, start_new_session=True)
    lines = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout))
    reader.start()
    deadline = time.time() + 300
    # each worker logs its parser's dictionaries once loaded: then both are parsing (a pass of 3-15 s on these
    # machines, by their load; a fixed wait after the pass's first line once outlasted it)
    while (sum("constituency_parsing | dictionaries" in line for line in lines) < 2 and proc.poll() is None
           and time.time() < deadline):
        time.sleep(0.1)
    time.sleep(0.5)
    assert proc.poll() is None, "".join(lines)
    before = len(lines)
    os.killpg(proc.pid, signal.SIGINT)
    rc = proc.wait(timeout=120)
    reader.join()
    after = lines[before:]
    assert rc == 130, "".join(lines)
    assert len(after) == 1 and "Traceback" not in "".join(lines), "".join(after)
    prefix = "fairseq-tree-preprocess: interrupted; the shards done are kept, and the same command resumes: "
    assert after[0].startswith(prefix)
    resume = shlex.split(after[0][len(prefix):])
    assert resume == ["fairseq-tree-preprocess", *cmd[1:]]
    done = sh(BIN / resume[0], *resume[1:], cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "bin" / "train.en-de.en.bin").exists() and not (tmp_path / "bin" / ".work").exists()


def test_a_finished_run_is_done_unless_an_input_or_option_changed(tmp_path):
    for name, lines in (("train.en", PTB / "valid.mrg"), ("train.xx", PTB / "valid.txt")):
        (tmp_path / name).write_text(_lines(lines, 100), encoding="utf-8")
    args = ["-s", "en", "-t", "xx", "--trainpref", tmp_path / "train", "--parser", "given", "--bpe-merges", "100",
            "--destdir", tmp_path / "bin"]
    first = ok(BIN / "fairseq-tree-preprocess", *args)
    assert "parsing 100 lines" in first.stderr
    outputs = {p: p.stat().st_mtime_ns for p in (tmp_path / "bin").iterdir()}
    # the same inputs and options (the workers do not change the outputs): done, nothing rewritten
    again = ok(BIN / "fairseq-tree-preprocess", *args, "--workers", "2")
    assert f"{tmp_path / 'bin'} is already preprocessed from the same inputs and options" in again.stderr
    assert "parsing" not in again.stderr
    assert {p: p.stat().st_mtime_ns for p in (tmp_path / "bin").iterdir()} == outputs
    # an option of a later pass (the dictionaries): made again
    small = ok(BIN / "fairseq-tree-preprocess", *args, "--nwordssrc", "20")
    assert "already preprocessed" not in small.stderr
    words = [w for w in (tmp_path / "bin" / "dict.en.txt").read_text().splitlines() if "madeupword" not in w]
    assert len(words) == 20 - 4  # and fairseq's 4 special symbols
    # an input changed (its time): made again
    stamp = (tmp_path / "train.en").stat().st_mtime + 60
    os.utime(tmp_path / "train.en", (stamp, stamp))
    touched = ok(BIN / "fairseq-tree-preprocess", *args, "--nwordssrc", "20")
    assert "parsing 100 lines" in touched.stderr and "already preprocessed" not in touched.stderr


def test_the_signature_follows_what_the_outputs_are_made_of(tmp_path):
    """An input's or a named file's time changes the signature; the workers, and the outputs appearing in DESTDIR,
    do not."""
    from fairseq_tree.preprocess.config import PreprocessConfig
    from fairseq_tree.preprocess.pipeline import output_signature

    (tmp_path / "train.en").write_text("a b\n")
    codes = tmp_path / "bpe.codes"
    codes.write_text("#version: 0.2\na b\n")
    dest = tmp_path / "bin"
    dest.mkdir()
    cfg = PreprocessConfig(source_lang="en", trainpref=str(tmp_path / "train"), bpe_codes=str(codes),
                           destdir=str(dest))
    files = {"train": {"src": str(tmp_path / "train.en")}}
    first = output_signature(cfg, files)
    (dest / "dict.en.txt").write_text("a 1\n")
    assert output_signature(PreprocessConfig(**{**vars(cfg), "workers": 4}), files) == first
    for changed in (codes, tmp_path / "train.en"):
        stamp = changed.stat().st_mtime + 60
        os.utime(changed, (stamp, stamp))
        assert output_signature(cfg, files) != first
        first = output_signature(cfg, files)


def test_the_stamp_is_the_report_of_complete_outputs(tmp_path):
    """preprocess.json's ``finished``: done when the signature and every output's size agree (the work folder
    aside); otherwise the stamp is removed before any work, so an interrupted run never looks finished."""
    import json

    from fairseq_tree.preprocess.pipeline import finished_report

    (tmp_path / "train.bin").write_bytes(b"abc")
    (tmp_path / ".work").mkdir()
    (tmp_path / ".work" / "train.00000.parsed.json").write_text("{}")
    report = {"finished": {"signature": "s", "outputs": {"train.bin": 3}}}
    (tmp_path / "preprocess.json").write_text(json.dumps(report))
    assert finished_report(str(tmp_path), "s", keep_work=True) == report
    assert (tmp_path / ".work").is_dir()
    (tmp_path / "train.bin").write_bytes(b"abcd")  # an output changed
    assert finished_report(str(tmp_path), "s") is None and not (tmp_path / "preprocess.json").exists()
    (tmp_path / "train.bin").write_bytes(b"abc")
    (tmp_path / "preprocess.json").write_text(json.dumps(report))
    assert finished_report(str(tmp_path), "other options") is None
    assert not (tmp_path / "preprocess.json").exists()


# ------------------------------------------------------------------ --help: plain text
SCRIPTS = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
MARKUP = re.compile(r"``\S(?:[^`]*?\S)?``|:(?:[a-z]+:)?[a-z]+:`|`[^`]+`__?(?!\w)|\*\*\S")


def _help(name, *sub):
    """``NAME [SUB] --help`` through the console script's entry point, in this process -> its output."""
    import importlib

    module, func = SCRIPTS[name].split(":")
    out = io.StringIO()
    argv = [*sub, "--help"]
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out), \
            pytest.MonkeyPatch.context() as mp, pytest.raises(SystemExit):
        mp.setattr(sys, "argv", [name, *argv])
        entry = getattr(importlib.import_module(module), func)
        try:
            entry(argv)
        except TypeError:  # an entry point that reads sys.argv
            entry()
    return out.getvalue()


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_help_is_plain_text(name):
    text = _help(name)
    assert text.startswith("usage:"), text[:500]
    helps = {name: text}
    commands = re.search(r"^positional arguments:\n\s+\{([\w,-]+)\}", text, flags=re.M)
    for sub in commands.group(1).split(",") if commands else ():  # subcommands: each one's own help
        helps[f"{name} {sub}"] = _help(name, sub)
    for where, text in helps.items():
        marked = [line for line in text.splitlines() if MARKUP.search(line)]
        assert not marked, f"{where} --help: {marked}"
