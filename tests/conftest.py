"""Shared test fixtures. Data comes from ../shared (never copied into the repo)."""

import os
import sys
from pathlib import Path

# triton reads TRITON_INTERPRET when it is first imported (by any test: torch's inductor imports it too): set here,
# before every test module, so a machine without CUDA runs the fused tree kernels' parity tests in triton's
# interpreter whatever ran first in the worker (the kernels stay off unless a test asks: --tree-kernels eager)
if "TRITON_INTERPRET" not in os.environ:
    import torch

    if not torch.cuda.is_available():
        os.environ["TRITON_INTERPRET"] = "1"

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
BIN = Path(sys.executable).parent  # the venv's console scripts (fairseq-train, fairseq-tree-preprocess)

sys.path.insert(0, str(Path(__file__).resolve().parent))


def load_script(path: Path):
    """A script of scripts/ (not a package) as a module, for tests of its functions."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def run_command(*cmd):
    """Run a CLI from the repo root with one thread; -> CompletedProcess, AssertionError (stderr tail) on failure."""
    import subprocess

    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    proc = subprocess.run([str(c) for c in cmd], cwd=str(REPO), env=env, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, cmd))} failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    return proc


def assert_safe_checkpoint(path):
    """A checkpoint the code under test wrote names no global beyond torch's defaults and fairseq-tree's allowlist,
    and loads with weights_only=True (fairseq_tree.safe_loading): -> its state dict."""
    import torch

    from fairseq_tree import safe_loading

    allowed = {f"{g.__module__}.{g.__qualname__}" for g in safe_loading.allowlist() if isinstance(g, type)}
    allowed |= {name for g in safe_loading.allowlist() if isinstance(g, tuple) for name in g[1:]}
    extra = set(torch.serialization.get_unsafe_globals_in_checkpoint(str(path))) - allowed
    assert not extra, f"{path} holds {sorted(extra)}"
    state = safe_loading.load(path)
    assert isinstance(state.get("model"), dict) and state["model"]
    return state


# ---------------------------------------------------------------- stanza (tests/test_stanza_backend.py)

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def tiny_stanza_models(tmp_path_factory):
    """Tiny stanza tagger + parser (junk trees, valid models) trained ONCE per session, offline, through
    scripts/recipes/train_stanza_parser.sh on a slice of ../shared/data/ptb_sample; returns the OUTDIR Path. Under
    pytest-xdist (`make test`) the workers share one training: the first to take the lock trains, the others
    wait for it and reuse its models (marked complete by a stamp file: a failed training is redone, not reused)."""
    import shutil

    from filelock import FileLock

    ptb = SHARED / "data" / "ptb_sample"
    if not (ptb / "train.mrg").is_file():
        pytest.skip(f"{ptb} not found")
    if "PYTEST_XDIST_WORKER" not in os.environ:
        return _train_tiny_stanza(ptb, tmp_path_factory.mktemp("stanza_tiny"))
    shared = tmp_path_factory.getbasetemp().parent  # the session's directory, common to its workers
    root = shared / "stanza_tiny"
    with FileLock(str(shared / "stanza_tiny.lock")):
        if not (root / "complete").is_file():
            shutil.rmtree(root, ignore_errors=True)  # what a failed training left
            root.mkdir()
            _train_tiny_stanza(ptb, root)
            (root / "complete").touch()
        return root / "models"


def _train_tiny_stanza(ptb: Path, root: Path) -> Path:
    """scripts/recipes/train_stanza_parser.sh --size tiny on the first trees of ``ptb`` in the empty directory
    ``root`` -> root/models."""
    import subprocess

    treebank, out = root / "treebank", root / "models"
    treebank.mkdir()
    # the first 200 train / 30 valid trees (reading all 3,396 would cost ~5 s); valid.mrg is the dev file
    for name, n in (("train.mrg", 200), ("valid.mrg", 30)):
        with open(ptb / name, encoding="utf-8") as f:
            (treebank / name).write_text("".join(line for _, line in zip(range(n), f)), encoding="utf-8")
    # PYTHON: the recipe runs the console script of the active environment, this one whatever PATH says
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHON=sys.executable)
    script = REPO / "scripts" / "recipes" / "train_stanza_parser.sh"
    proc = subprocess.run(["bash", str(script), str(treebank), str(out),
                           "--size", "tiny", "-q"], cwd=str(REPO), env=env, capture_output=True, text=True,
                          timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"tiny stanza training failed ({proc.returncode}):\n{proc.stderr[-5000:]}")
    return out


# ---------------------------------------------------------------- order (make test: pytest-xdist, --dist loadfile)

def pytest_collection_modifyitems(config, items):
    """The files marked ``pytestmark = pytest.mark.slow(minutes=M)`` first, longest first, then the rest of
    tests/integration, then tests/unit; a stable sort keeps every file's own order. With --no-loadscope-reorder (the
    Makefile's), xdist's --dist loadfile hands files to its workers in this order (by default it reorders them by
    their number of tests, and the 7-8 minute recipe test then ran alone at the end)."""
    def rank(item):
        slow = item.get_closest_marker("slow")
        if slow is not None:
            return (0, -float(slow.kwargs.get("minutes", 1)))
        return (1 if "integration" in item.path.parts else 2, 0.0)

    items.sort(key=rank)
