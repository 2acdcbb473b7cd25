"""The package as a user installs it (issue 27): a wheel built by ``pip wheel`` from the checkout (not editable),
installed into a virtualenv that already has torch and fairseq; then, from a directory outside the repository,
every console script answers, ``fairseq-tree-user-dir`` gives fairseq's ``--user-dir``, and fairseq-train,
fairseq-generate and the hub run."""

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from conftest import REPO, SHARED

SCRIPTS = ["fairseq-tree-user-dir", "fairseq-tree-preprocess", "fairseq-tree-parse", "fairseq-tree-induce",
           "fairseq-tree-score", "fairseq-tree-classify", "fairseq-tree-average"]


def run(*cmd, cwd, env, ok=True, **kw):
    proc = subprocess.run([str(c) for c in cmd], cwd=str(cwd), env=env, capture_output=True, text=True, timeout=900,
                          **kw)
    if ok and proc.returncode != 0:
        raise AssertionError(f"{cmd[:3]} exited {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
    return proc


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    """A new virtualenv that sees this environment's torch, fairseq and the rest through a .pth line (as a user's
    environment has them), but not the checkout's editable fairseq_tree; the package installed into it from a
    wheel built out of the checkout."""
    root = tmp_path_factory.mktemp("installed")
    venv = root / "venv"
    run(sys.executable, "-m", "venv", venv, cwd=root, env=dict(os.environ))
    py = venv / "bin" / "python"
    site = run(py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])", cwd=root,
               env=dict(os.environ)).stdout.strip()
    (Path(site) / "user_env.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(PATH=f"{venv / 'bin'}:{os.environ.get('PATH', '')}", OMP_NUM_THREADS="1")
    # built from a copy of the project's files (pip builds in the source tree: the checkout stays as it is)
    src = root / "src"
    shutil.copytree(REPO / "fairseq_tree", src / "fairseq_tree", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md", "LICENSE", "fairseq_tree_user_dir.py"):
        shutil.copy(REPO / name, src / name)
    # the wheel is built by this environment's setuptools (>= 77, pyproject.toml's build-system: the new venv's
    # bundled one is older), then installed into the new venv
    run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "--no-index", str(src),
        "-w", root / "dist", cwd=root, env=dict(os.environ))
    (wheel,) = (root / "dist").glob("fairseq_tree-*.whl")
    run(py, "-m", "pip", "install", "-q", "--no-deps", "--no-index", wheel, cwd=root, env=env)
    return root, py, env


def test_installed_package_outside_the_repository(venv, tmp_path):
    """From a directory outside the checkout: the console scripts of the installed copy, a tree2seq model trained
    by fairseq-train with --user-dir "$(fairseq-tree-user-dir)", decoded by fairseq-generate, and the hub."""
    root, py, env = venv
    work = tmp_path / "elsewhere"
    work.mkdir()
    user_dir = run(py.parent / "fairseq-tree-user-dir", cwd=work, env=env).stdout.strip()
    assert Path(user_dir).is_dir() and (Path(user_dir) / "__init__.py").is_file()
    assert REPO not in Path(user_dir).resolve().parents, user_dir  # the installed copy, not the checkout
    for script in SCRIPTS[1:]:
        assert "usage:" in run(py.parent / script, "--help", cwd=work, env=env).stdout
    ptb = SHARED / "data" / "ptb_sample"
    trees = (ptb / "valid.mrg").read_text().splitlines()[:16]
    (work / "train.en").write_text("\n".join(trees) + "\n")
    (work / "train.xx").write_text("\n".join(t.lower() for t in (ptb / "valid.txt").read_text().splitlines()[:16])
                                   + "\n")
    run(py.parent / "fairseq-tree-preprocess", "-s", "en", "-t", "xx", "--trainpref", "train", "--validpref",
        "train", "--parser", "given", "--bpe-merges", "100", "--joined-dictionary", "--destdir", "bin",
        "--workers", "1", cwd=work, env=env)
    log = run(py, "-m", "fairseq_cli.train", "bin", "--user-dir", user_dir, "--task", "tree_translation", "--arch",
              "tree2seq_tiny", "--share-all-embeddings", "--optimizer", "adam", "--lr", "1e-3", "--max-tokens",
              "2000", "--cpu", "--num-workers", "0", "--max-update", "2", "--no-epoch-checkpoints",
              "--disable-validation", "--save-dir", "ck", cwd=work, env=env)
    assert "done training" in log.stdout + log.stderr
    gen = run(py, "-m", "fairseq_cli.generate", "bin", "--user-dir", user_dir, "--task", "tree_translation",
              "--path", "ck/checkpoint_last.pt", "--gen-subset", "valid", "--beam", "2", "--max-len-b", "3", "--cpu",
              "--batch-size", "16", cwd=work, env=env)
    assert sum(line.startswith("H-") for line in gen.stdout.splitlines()) == 16
    code = ("import fairseq_tree, sys\n"
            "from fairseq_tree.models.tree2seq_transformer import Tree2SeqModel\n"
            "hub = Tree2SeqModel.from_pretrained('ck', 'checkpoint_last.pt', 'bin')\n"
            "out = hub.translate(sys.stdin.readline().strip(), beam=1, max_len_b=3)\n"
            "print(fairseq_tree.__file__, isinstance(out, str))")
    out = run(py, "-c", code, cwd=work, env=env, input=trees[0] + "\n").stdout.split()
    assert Path(out[0]).resolve().parent == Path(user_dir).resolve() and out[-1] == "True"
