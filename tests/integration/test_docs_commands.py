"""Every command in the fenced ``bash`` blocks of README.md, RESULTS.md and docs/ (the dated log aside) is one a
user can run as written: fairseq's CLIs parse it with the plugin loaded and compose its hydra config (what
``fairseq-generate --tokenizer moses`` without ``-s/-t`` failed at), fairseq-tree's console scripts parse it with
their own parser, scripts and recipes exist and take the flags given, and make targets exist. Paths in the
commands are not opened (they name the reader's data)."""

import functools
import re
import shlex
import subprocess

import pytest
import tomllib
from conftest import BIN, REPO

DOCS = [REPO / "README.md", REPO / "RESULTS.md", *sorted((REPO / "docs").glob("*.md"))]
DOCS = [p for p in DOCS if p.name != "results-log.md"]  # the dated log: commands as they were run then
FAIRSEQ = {"fairseq-train": "get_training_parser", "fairseq-generate": "get_generation_parser",
           "fairseq-interactive": "get_interactive_generation_parser", "fairseq-preprocess": "get_preprocessing_parser"}


def commands():
    """-> [(file, line, tokens)] of every command line of every fenced bash block (continuations joined, comments,
    env assignments, redirections and pipes removed)."""
    out = []
    for path in DOCS:
        for block in re.findall(r"```bash\n(.*?)```", path.read_text(encoding="utf-8"), flags=re.S):
            for line in block.replace("\\\n", " ").splitlines():
                line = re.split(r"\s#\s", line.strip())[0]
                if not line or line.startswith("#"):
                    continue
                line = line.replace('"$(fairseq-tree-user-dir)"', str(REPO / "fairseq_tree"))
                line = line.replace("$SLURM_ARRAY_TASK_ID", "0")  # set by SLURM in a job array
                line = re.sub(r"--device cuda\S*", "--device cpu", line)  # checked at parse time: this machine's
                line = re.split(r"\s[|>]|\s<|\s2>|&&", line)[0]
                toks = shlex.split(line)
                while toks and re.match(r"^[A-Z_][A-Z0-9_]*=", toks[0]):
                    toks.pop(0)
                if toks:
                    out.append((path.name, line, toks))
    return out


COMMANDS = commands()


def entry_points():
    with open(REPO / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]["scripts"]


def flags(toks):
    return [t.split("=")[0] for t in toks if re.match(r"^--[a-z]", t)]


@functools.cache
def help_text(*argv):
    """The command ``argv``'s output (stdout + stderr), each program once per session (32 documented commands call
    14 programs; a subprocess costs ~3 s of imports)."""
    proc = subprocess.run([str(a) for a in argv], capture_output=True, text=True, cwd=str(REPO), timeout=300)
    return proc.stdout + proc.stderr


def test_the_docs_have_commands():
    progs = {toks[0] for _, _, toks in COMMANDS}
    assert {"fairseq-train", "fairseq-generate", "fairseq-tree-preprocess", "make"} <= progs, progs


@pytest.mark.parametrize("where,line,toks", [c for c in COMMANDS if c[2][0] in FAIRSEQ],
                         ids=lambda x: x if isinstance(x, str) and len(x) < 40 else None)
def test_fairseq_commands_parse_and_compose(where, line, toks):
    from fairseq import options
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    parser = getattr(options, FAIRSEQ[toks[0]])()
    if toks[0] == "fairseq-preprocess":
        parser.parse_args(toks[1:])
        return
    args = options.parse_args_and_arch(parser, input_args=toks[1:])
    convert_namespace_to_omegaconf(args)  # hydra's composition: where a missing -s/-t with --tokenizer moses fails


@pytest.mark.parametrize("where,line,toks", [c for c in COMMANDS if c[2][0].startswith("fairseq-tree-")],
                         ids=lambda x: x if isinstance(x, str) and len(x) < 40 else None)
def test_fairseq_tree_commands_parse(where, line, toks):
    target = entry_points().get(toks[0])
    assert target, f"{where}: {toks[0]} is not a console script of pyproject.toml"
    module = __import__(target.split(":")[0], fromlist=["_"])
    if hasattr(module, "get_parser") and not (len(toks) > 1 and toks[1] in getattr(module, "TABLES", {})):
        module.get_parser().parse_args(toks[1:])  # argparse exits (SystemExit 2) on an unknown flag or choice
    else:  # subcommands and wrappers: their --help names every flag used
        text = help_text(BIN / toks[0], *[t for t in toks[1:2] if not t.startswith("-")], "--help")
        assert all(f in text for f in flags(toks)), f"{where}: {line}"


@pytest.mark.parametrize("where,line,toks", [c for c in COMMANDS if c[2][0] in ("python", "bash", "make")
                                             or c[2][0].startswith("scripts/")],
                         ids=lambda x: x if isinstance(x, str) and len(x) < 40 else None)
def test_scripts_and_make_targets_exist(where, line, toks):
    if toks[0] == "make":
        targets = re.findall(r"^([\w-]+):", (REPO / "Makefile").read_text(), flags=re.M)
        assert all(t in targets for t in toks[1:] if "=" not in t), f"{where}: {line}"
        return
    script = toks[1] if toks[0] in ("python", "bash") else toks[0]
    if toks[0] == "python" and script == "-m":
        pytest.fail(f"{where}: {line}: use the console script, not python -m")
    assert (REPO / script).is_file(), f"{where}: {line}: no {script}"
    if script.endswith(".py"):
        text = help_text(BIN / "python", REPO / script, "--help")
        assert all(f in text for f in flags(toks)), f"{where}: {line}"


def test_no_python_m_in_the_docs():
    assert [f"{w}: {line}" for w, line, toks in COMMANDS if toks[:2] == ["python", "-m"]] == []
