"""A new user's first hour, quiet and complete (issue 50, items 5, 6, 7), through the real commands:
``fairseq-tree-user-dir`` imports neither torch nor fairseq (and fairseq still registers everything from the
directory it prints); fairseq-generate, fairseq-interactive, ``fairseq-tree-parse --plot`` and a hub load print no
DEBUG line and no hydra deprecation warning (``-v``, ``LOGLEVEL`` or the process's own logging for more);
``fairseq-tree-induce --input --plot`` draws."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import BIN, REPO, SHARED
from test_lal_cli import _train as train_lal
from test_lal_cli import treebank_slice
from test_tree2seq import data_bin  # noqa: F401  (the fixture: 64 PTB trees -> their lower-cased words)
from test_tree_induction import _train as train_induction
from test_tree_induction import corpus  # noqa: F401  (the fixture: induction text, its data-bin, a gold slice)

pytestmark = pytest.mark.slow(minutes=2)

USER_DIR = str(REPO / "fairseq_tree")
PTB = SHARED / "data" / "ptb_sample"
PNG = b"\x89PNG\r\n\x1a\n"
#: the five hydra deprecation warnings fairseq's config conversion raised on every run (compat.py, item 7)
HYDRA_WARNINGS = re.compile(r"no longer experimental|version_base parameter|deprecated keyword in package header|"
                            r"validated against ConfigStore schema|strict flag in the compose API")


def sh(*cmd, stdin=None, cwd=None, env=None):
    """Run a command (one thread) -> CompletedProcess; AssertionError with the stderr tail when it fails."""
    env = dict({k: v for k, v in os.environ.items() if k != "LOGLEVEL"}, OMP_NUM_THREADS="1", **(env or {}))
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, input=stdin, cwd=cwd, env=env,
                          timeout=600)
    assert proc.returncode == 0, f"{cmd[:2]} exited {proc.returncode}:\n{proc.stderr[-3000:]}"
    return proc


def noise(text: str) -> dict:
    """The counts issue 50 item 6 asks to be 0: DEBUG lines (any format) and hydra's deprecation warnings."""
    return {"debug": len(re.findall(r"^DEBUG:|\| DEBUG \|", text, re.M)), "hydra": len(HYDRA_WARNINGS.findall(text))}


# ------------------------------------------------------------------------------------------ item 5: user-dir
def imported_modules(importtime_stderr: str) -> set:
    """The modules a ``-X importtime`` run imported (its ``import time: self | cumulative | name`` lines)."""
    return {line.split("|")[-1].strip() for line in importtime_stderr.splitlines() if line.startswith("import time:")}


def test_user_dir_imports_neither_torch_nor_fairseq(tmp_path):
    proc = sh(BIN / "fairseq-tree-user-dir", cwd=tmp_path, env={"PYTHONPROFILEIMPORTTIME": "1"})
    modules = imported_modules(proc.stderr)
    assert "argparse" in modules  # the importtime report is there
    tops = {m.split(".")[0] for m in modules}
    assert not tops & {"torch", "fairseq", "fairseq_tree", "numpy"}, sorted(tops & {"torch", "fairseq", "numpy"})
    printed = Path(proc.stdout.strip())
    assert proc.stdout.count("\n") == 1 and printed == (REPO / "fairseq_tree").resolve()


def test_the_printed_user_dir_registers_everything_through_fairseq(tmp_path):
    """fairseq's own import of the printed directory (``utils.import_user_module``) runs the package's
    registration: every task, architecture and criterion of the plugin."""
    user_dir = sh(BIN / "fairseq-tree-user-dir", cwd=tmp_path).stdout.strip()
    script = ("import argparse, json, sys\n"
              "from fairseq import utils\n"
              "from fairseq.criterions import CRITERION_REGISTRY\n"
              "from fairseq.models import ARCH_MODEL_REGISTRY\n"
              "from fairseq.tasks import TASK_REGISTRY\n"
              "utils.import_user_module(argparse.Namespace(user_dir=sys.argv[1]))\n"
              "print(json.dumps([sorted(TASK_REGISTRY), sorted(ARCH_MODEL_REGISTRY), sorted(CRITERION_REGISTRY)]))\n")
    task_names, archs, criterions = json.loads(sh(sys.executable, "-c", script, user_dir, cwd=tmp_path).stdout)
    assert {"tree_translation", "tree_induction", "constituency_parsing", "tree_classification"} <= set(task_names)
    assert {"tree2seq", "lal_parser", "constituent_transformer", "structformer", "tree_classifier"} <= set(archs)
    assert {"span_hinge_dependency", "tree_classification"} <= set(criterions)


# ------------------------------------------------------------------------------------------ item 6: logging
ROOT = "import logging; r = logging.getLogger(); print(r.level, len(r.handlers))"


@pytest.mark.parametrize("first, env, expected", [
    ("import fairseq_tree", {}, "30 0"),  # the process's root logger as it was: WARNING, no handler
    ("import fairseq; import fairseq_tree", {}, "20 1"),  # fairseq's CLIs: LOGLEVEL's default, INFO
    ("import fairseq; import fairseq_tree", {"LOGLEVEL": "DEBUG"}, "10 1"),  # asked for
    ("import logging; logging.basicConfig(level=logging.INFO); import fairseq_tree", {}, "20 1"),  # the user's
])
def test_importing_the_plugin_leaves_the_root_logger_as_the_process_set_it(first, env, expected, tmp_path):
    assert sh(sys.executable, "-c", f"{first}\n{ROOT}", env=env, cwd=tmp_path).stdout.strip() == expected


@pytest.mark.parametrize("verbose, expected", [(0, "30 20"), (1, "20 20"), (2, "10 10")])
def test_cli_logging_is_quiet_by_default_and_v_adds_every_librarys_lines(verbose, expected, tmp_path):
    """fairseq-tree's CLIs (``setup_logging``): WARNING from every library, INFO from fairseq-tree; -v, -vv."""
    script = (f"from fairseq_tree.cli.logs import setup_logging; setup_logging({verbose})\n"
              "import logging; print(logging.getLogger().level, logging.getLogger('fairseq_tree').level)")
    assert sh(sys.executable, "-c", script, cwd=tmp_path).stdout.strip() == expected


@pytest.fixture(scope="module")
def tree2seq_ckpt(data_bin, tmp_path_factory):  # noqa: F811
    save = tmp_path_factory.mktemp("quiet") / "ckpt"
    sh(BIN / "fairseq-train", data_bin, "--user-dir", USER_DIR, "--task", "tree_translation", "--arch",
       "tree2seq_tiny", "--share-all-embeddings", "--optimizer", "adam", "--lr", "5e-3", "--max-tokens", "4000",
       "--max-update", "3", "--criterion", "cross_entropy", "--cpu", "--num-workers", "0", "--disable-validation",
       "--no-epoch-checkpoints", "--save-dir", save)
    return save / "checkpoint_last.pt"


def test_fairseq_generate_and_interactive_with_the_plugin_print_no_debug_and_no_hydra_warning(data_bin,  # noqa: F811
                                                                                                 tree2seq_ckpt):
    common = [data_bin, "--user-dir", USER_DIR, "--task", "tree_translation", "--path", tree2seq_ckpt, "--cpu",
              "--beam", "2", "--max-len-b", "5"]
    gen = sh(BIN / "fairseq-generate", *common, "--gen-subset", "valid", "--batch-size", "64")
    tree = (PTB / "valid.mrg").read_text().splitlines()[0]
    inter = sh(BIN / "fairseq-interactive", *common, stdin=tree + "\n")
    for proc in (gen, inter):
        assert noise(proc.stdout + proc.stderr) == {"debug": 0, "hydra": 0}, (proc.stdout + proc.stderr)[-3000:]
    # fairseq's own INFO lines stay (LOGLEVEL's default), and the translations
    assert "Translated 64 sentences" in gen.stderr and sum(x.startswith("H-") for x in gen.stdout.splitlines()) == 64
    assert "Type the input sentence" in inter.stderr and "\nD-0\t" in "\n" + inter.stdout


def test_a_hub_load_is_quiet_unless_the_process_asks_for_info(data_bin, tree2seq_ckpt, tmp_path):  # noqa: F811
    script = ("import logging, sys\n"
              "if sys.argv[4] == 'info':\n"
              "    logging.basicConfig(level=logging.INFO)\n"
              "from fairseq_tree.models.tree2seq_transformer import Tree2SeqModel\n"
              "hub = Tree2SeqModel.from_pretrained(sys.argv[1], sys.argv[2], sys.argv[3])\n"
              "print(len(hub.translate(['(NP (DT the) (NN dog))'], beam=1)))\n")
    args = [str(tree2seq_ckpt.parent), tree2seq_ckpt.name, str(data_bin)]
    quiet = sh(sys.executable, "-c", script, *args, "quiet", cwd=tmp_path)
    assert quiet.stdout.strip() == "1"
    assert not re.findall(r"^(INFO|DEBUG)", quiet.stderr, re.M), quiet.stderr
    info = sh(sys.executable, "-c", script, *args, "info", cwd=tmp_path)
    assert len(re.findall(r"^INFO:fairseq_tree.tasks.tree_translation:\[dict", info.stderr, re.M)) == 3


@pytest.fixture(scope="module")
def lal_ckpt(tmp_path_factory):
    d = treebank_slice(tmp_path_factory.mktemp("lal20"), 20)
    return d, train_lal(d, d / "ckpt", 2)


def test_parse_plot_prints_no_matplotlib_debug_lines_unless_vv(lal_ckpt, tmp_path):
    d, ckpt = lal_ckpt
    cmd = [BIN / "fairseq-tree-parse", "--path", ckpt, "--input", d / "t.mrg", "--output", tmp_path / "t", "--plot"]
    quiet = sh(*cmd)
    assert (tmp_path / "t.attention.png").read_bytes()[:8] == PNG
    assert noise(quiet.stderr) == {"debug": 0, "hydra": 0}, quiet.stderr[-2000:]
    assert len(quiet.stderr.splitlines()) <= 3, quiet.stderr  # the dictionaries, the progress line
    loud = sh(*cmd, "-vv")
    assert len(re.findall(r"\| DEBUG \| matplotlib", loud.stderr)) > 10


# ------------------------------------------------------------------------------------------ item 7: induce --plot
def test_induce_input_plot_draws_the_sentences_of_two_words_or_more(corpus, tmp_path):  # noqa: F811
    save = tmp_path / "ck"
    train_induction(corpus, "constituent_transformer_tiny", save, 4)
    text = tmp_path / "raw.txt"
    text.write_text("Hello .\nThe cat sat on the mat .\nDogs bark at night .\nIt rains .\n", encoding="utf-8")
    out = tmp_path / "out"
    proc = sh(BIN / "fairseq-tree-induce", "--path", save / "checkpoint_last.pt", "--input", text, "--out", out,
              "--plot", "2", "--dump-attention", out / "att.jsonl", "--no-perplexity")
    pngs = sorted(p.name for p in (out / "plots").iterdir())
    assert pngs == ["sent2_prior.png", "sent2_tree.png", "sent3_prior.png", "sent3_tree.png"]
    assert all((out / "plots" / p).read_bytes()[:8] == PNG for p in pngs)
    scores = json.loads((out / "scores.json").read_text())
    assert sorted(Path(p).name for p in scores["plots"]) == pngs and "4 PNG files" in proc.stderr
    items = [json.loads(x) for x in (out / "att.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [x["words"] for x in items] == [["The", "cat", "sat", "on", "the", "mat"], ["Dogs", "bark", "at", "night"]]
    assert [re.findall(r"([^()\s]+)\)", x["tree"]) for x in items] == [x["words"] for x in items]  # over its words
