"""Every documented command of the user-facing tools RUNS as written (issue 28, item 6): the fenced ``bash``
commands of README.md, RESULTS.md and docs/*.md (the dated log aside) that call a fairseq-tree console script or
fairseq-preprocess/-train/-generate/-interactive are executed, block after block in the order of their page, on
tiny real data, and must exit 0 (and leave the file or folder they name as output).

How a command is adapted, and nothing else:

* the page's placeholder inputs (``raw/train``, ``wsj22.mrg``, ``sst/dev.txt``, ``GOLD.mrg``, ``models/stanza_en``,
  ``ckpt/lal/checkpoint_best.pt`` ...) are files seeded under those names in a fresh working directory per page:
  slices of ../shared, the session's tiny stanza model (tests/conftest.py) and tiny checkpoints
  (tests/tiny_models.py); what a page's earlier command writes, its later commands read;
* the schedule and size flags: ``--max-update``/``--max-epoch`` 1 (``--max-update 1`` where neither is given,
  OVERRIDES for the two chains that need more checkpoints), ``--bpe-merges 100``, ``--workers 1``, smaller
  dimensions for the architectures that take minutes an update here (SIZE), ``--max-len-a 0 --max-len-b 8`` for
  fairseq-generate (a model of one update seldom ends a sentence: beam search would go on to 200 tokens),
  ``--plot 1`` for fairseq-tree-induce (each plotted sentence is several figures),
  ``--cpu`` for fairseq's CLIs and ``--device cpu`` for ``--device cuda``;
* ``"$(fairseq-tree-user-dir)"`` is the plugin's directory; ``< file`` and ``> file`` are honoured.

Each command runs in this process through its console script's entry point (pyproject.toml, fairseq's
``fairseq_cli.*:cli_main``) with ``sys.argv``, the working directory, stdin and stdout set as the shell would:
a subprocess each costs ~7 s of imports on this machine. ``DOCS_RUN_SUBPROCESS=1`` runs the real console
scripts instead. What cannot run here stays parse-only (tests/integration/test_docs_commands.py) and is named in
SKIP with its reason; ``test_every_documented_command_is_run_or_skipped`` fails on a command that is neither.
"""

import contextlib
import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib
from conftest import BIN, REPO, SHARED
from tiny_models import RAW, USER_DIR, build_models

pytestmark = pytest.mark.slow(minutes=3)  # 160 s measured (-n 0, the busy 2-core box, 2026-11-27), 40 of them setup

DOCS = [REPO / "README.md", REPO / "RESULTS.md", *sorted((REPO / "docs").glob("*.md"))]
DOCS = [p for p in DOCS if p.name != "results-log.md"]  # the dated log: commands as they were run then
FAIRSEQ = {"fairseq-train": "fairseq_cli.train:cli_main", "fairseq-generate": "fairseq_cli.generate:cli_main",
           "fairseq-interactive": "fairseq_cli.interactive:cli_main",
           "fairseq-preprocess": "fairseq_cli.preprocess:cli_main"}

#: (page, a substring of the command, why it is not run here). A command's first word alone ("pip", ...) skips
#: every command of that program on every page.
SKIP = [
    ("*", "pip", "installs packages from the network"),
    ("*", "make", "runs the suite, lint, benchmarks or the demo themselves (their targets: test_docs_commands.py; "
                  "the quick demo runs in CI after make test)"),
    ("*", "scripts/recipes/", "multi-hour recipes (train_stanza_parser.sh runs with --size tiny for the "
                              "session's stanza model, tests/conftest.py; the recipes' own tests are "
                              "test_tree2seq_recipe.py, test_multi30k_anchor_recipe.py)"),
    ("*", "python scripts/benchmarks/", "benchmarks (minutes; some need CUDA or recipe outputs): their flags are "
                                        "checked by test_docs_commands.py"),
    ("RESULTS.md", "fairseq-tree-induce --path work/induction_wsj/", "scores a checkpoint of induction_wsj.sh (a "
                                                                    "recipe; fairseq-tree-induce: induction.md's "
                                                                    "commands and test_tree_induction.py)"),
    ("*", "fairseq-tree-report tree2seq work/", "reads the output folder of train_tree2seq_multi30k.sh (a recipe)"),
    ("*", "fairseq-tree-report sst work/sst", "reads the output folder of train_sst.sh (a recipe)"),
    ("*", "fairseq-tree-report anchor work/anchor", "reads the output folder of multi30k_anchor.sh (a recipe; its "
                                                   "test runs this table)"),
    ("induction.md", "fairseq-tree-report curves work/induction/", "reads the log of train_induction_ptb.sh "
                                                                  "(a recipe)"),
    ("*", "fairseq-tree-report curves work/induction_wsj/", "reads the logs of induction_wsj.sh and "
                                                           "reference_structformer.sh runs (recipes; report curves: "
                                                           "test_induction_runs.py)"),
    ("*", "python scripts/diagnostics/dependents_by_pos.py", "reads a run's predicted heads (a recipe's output; the "
                                                            "script: test_dependents_by_pos.py)"),
    ("*", "work/induction_wsj/wsj/structformer_small_code_model_s*", "reads the logs of induction_wsj.sh runs (a "
                                                                     "recipe; report seeds: test_induction_runs.py)"),
    ("*", "fairseq-tree-report induction work/", "reads the output folder of induction_wsj.sh (a recipe; "
                                                           "its test runs this table)"),
    ("README.md", "fairseq-tree-train-stanza", "trains a stanza parser at --size small (~12 minutes); the session's "
                                               "tiny model is trained by the same command with --size tiny "
                                               "(tests/conftest.py)"),
    ("tree2seq.md", "fairseq-hydra-train", "trains on the demo's data-bin: test_hydra_train.py runs this command "
                                           "for 3 updates"),
    ("preprocessing.md", "--launcher slurm", "submits to SLURM"),
    ("install.md", "apt-get", "installs a system package (root, network)"),
    ("install.md", "export", "sets the shell's environment (jemalloc for what it starts; no command of ours)"),
    ("lal.md", "--pretrained-encoder xlnet-large-cased", "downloads xlnet-large-cased (no network here)"),
    ("lal.md", "--path ckpt/lal_xlnet/", "needs the xlnet parser of the command above"),
]

#: --arch -> size flags appended (the documented architecture, with fewer/smaller layers: one update of
#: tree2seq_iwslt_de_en or fairseq's transformer takes ~10 s here and each checkpoint ~370 MB)
SMALL = ["--encoder-layers", "2", "--decoder-layers", "2", "--encoder-embed-dim", "64", "--decoder-embed-dim",
         "64", "--encoder-ffn-embed-dim", "128", "--decoder-ffn-embed-dim", "128", "--encoder-attention-heads",
         "2", "--decoder-attention-heads", "2"]
SIZE = {"tree2seq_iwslt_de_en": SMALL, "transformer": SMALL,
        "constituent_transformer_small": ["--encoder-embed-dim", "64", "--encoder-ffn-embed-dim", "128"]}

#: (page, a substring of the command) -> flag values set instead of --max-update/--max-epoch 1: the checkpoints
#: that tree2seq.md's fairseq-tree-average commands average (five epoch ones, five update ones)
OVERRIDES = {
    ("tree2seq.md", "--dropout 0.3 --save-dir ckpt"): {"--max-epoch": "5"},
    # it resumes the run above (same --save-dir); update checkpoints are saved within an epoch only, so smaller
    # batches give an epoch several updates
    ("tree2seq.md", "--save-interval-updates 500"): {"--max-update": "16", "--max-tokens": "256",
                                                     "--save-interval-updates": "1"},
}

#: (page, a substring of the command) -> its stdin where the page gives none (the user types at the prompt)
STDIN = {("tree2seq.md", "--tree-input raw"): "\n".join(RAW) + "\n"}


# ------------------------------------------------------------------------------------------- the commands
ASSIGNMENT = re.compile(r"[A-Z_][A-Z0-9_]*=\S*")  # NAME=value: a line of its own is a block's variable


def commands():
    """-> [(page, line, toks, stdin file, stdout file, the block's variables)] of every command line of every fenced
    bash block, in page order (continuations joined, comments and env assignments removed;
    ``"$(fairseq-tree-user-dir)"`` and ``$SLURM_ARRAY_TASK_ID`` expanded; a line ``NAME=value`` alone is kept as
    the block's variable for shell_words)."""
    out = []
    for path in DOCS:
        for block in re.findall(r"```bash\n(.*?)```", path.read_text(encoding="utf-8"), flags=re.S):
            variables = []
            for line in block.replace("\\\n", " ").splitlines():
                line = re.split(r"\s#\s", line.strip())[0].strip()
                if not line or line.startswith("#"):
                    continue
                if ASSIGNMENT.fullmatch(line):
                    variables.append(line)
                    continue
                line = line.replace('"$(fairseq-tree-user-dir)"', USER_DIR).replace("$SLURM_ARRAY_TASK_ID", "0")
                stdin = re.search(r"\s<\s*(\S+)", line)
                stdout = re.search(r"\s>\s*(\S+)", line)
                toks = shlex.split(re.split(r"\s[|>]|\s<|\s2>|&&", line)[0])
                while toks and ASSIGNMENT.match(toks[0]):
                    toks.pop(0)
                if toks:
                    out.append((path.name, line, toks, stdin and stdin.group(1), stdout and stdout.group(1),
                                tuple(variables)))
    return out


def shell_words(toks, variables, cwd):
    """``toks`` as bash expands them in ``cwd`` after the block's ``variables``: ``$R/a_s{1,2}.log`` and
    ``$R/a_s*.log`` become the files a reader's shell would pass (a glob that matches nothing stays as written,
    so the command fails on it as it would there). Words without ``$``, braces or glob characters are kept."""
    expands = [bool(re.search(r"[$*?]|\{[^{}]*,[^{}]*\}", t)) for t in toks]
    if not any(expands):
        return toks
    words = " ".join(t if e else shlex.quote(t) for t, e in zip(toks, expands))
    script = "".join(f"{v}\n" for v in variables) + f"set -- {words}\nprintf '%s\\0' \"$@\""
    proc = subprocess.run(["bash", "-c", script], cwd=cwd, capture_output=True, text=True, check=True)
    return proc.stdout.split("\0")[:-1]


COMMANDS = commands()


def runs(toks):
    return toks[0] in FAIRSEQ or toks[0].startswith("fairseq-tree-")


def skip_reason(page, line, toks):
    for where, what, why in SKIP:
        if where in ("*", page) and (toks[0] == what or (" " in what or "/" in what) and what in line):
            return why
    return None


def looked_up(table, page, line):
    return next((v for (where, what), v in table.items() if where == page and what in line), None)


def test_every_documented_command_is_run_or_skipped():
    """A new documented command is either run below or named in SKIP with its reason; every SKIP entry still
    names a documented command."""
    unchecked = [f"{p}: {line}" for p, line, toks, *_ in COMMANDS
                 if skip_reason(p, line, toks) is None and not runs(toks)]
    assert unchecked == [], "neither run here nor in SKIP"
    stale = [s for s in SKIP if not any(skip_reason(p, line, toks) == s[2] for p, line, toks, *_ in COMMANDS)]
    assert stale == []
    for table in (OVERRIDES, STDIN):
        assert all(any(p == k[0] and k[1] in line for p, line, *_ in COMMANDS) for k in table), table


def test_the_pages_have_commands_to_run():
    ran = {p for p, line, toks, *_ in COMMANDS if runs(toks) and skip_reason(p, line, toks) is None}
    assert {"README.md", "tree2seq.md", "lal.md", "induction.md", "classification.md", "view.md"} <= ran


# ------------------------------------------------------------------------------------------- adapting
def set_flag(toks, flag, value):
    if flag in toks:
        toks[toks.index(flag) + 1] = value
    else:
        toks += [flag, value]


def adapt(page, line, toks):
    """The documented command with its schedule and size flags capped and the CPU chosen (module docstring)."""
    toks = list(toks)
    prog = toks[0]
    if prog == "fairseq-train":
        override = looked_up(OVERRIDES, page, line) or {}
        if not any(f in override for f in ("--max-update", "--max-epoch")):
            if "--max-epoch" in toks:
                set_flag(toks, "--max-epoch", "1")
            if "--max-update" in toks or "--max-epoch" not in toks:
                set_flag(toks, "--max-update", "1")
        else:
            for f in ("--max-update", "--max-epoch"):
                if f in toks and f not in override:
                    del toks[toks.index(f):toks.index(f) + 2]
        for flag, value in override.items():
            set_flag(toks, flag, value)
        if "--arch" in toks:
            toks += SIZE.get(toks[toks.index("--arch") + 1], [])
    if prog == "fairseq-generate":
        set_flag(toks, "--max-len-a", "0")
        set_flag(toks, "--max-len-b", "8")
    if prog in ("fairseq-train", "fairseq-generate", "fairseq-interactive"):
        toks.append("--cpu")
    if prog == "fairseq-tree-induce" and "--plot" in toks:
        set_flag(toks, "--plot", "1")
    for flag, value in (("--bpe-merges", "100"), ("--workers", "1")):
        if flag in toks:
            set_flag(toks, flag, value)
    if "--device" in toks and toks[toks.index("--device") + 1].startswith("cuda"):
        set_flag(toks, "--device", "cpu")
    return toks


def outputs(toks):
    """The outputs a command names (folders, files, prefixes): -> [path] to find after it ran."""
    names = [toks[toks.index(f) + 1] for f in ("--destdir", "--save-dir", "--out", "--output") if f in toks]
    if toks[0] == "fairseq-tree-view":
        names.append(toks[1])
    if toks[0] in ("fairseq-tree-export", "fairseq-tree-positions-matched"):
        names.append(toks[2])
    return names


def entry_point(prog):
    if prog in FAIRSEQ:
        return FAIRSEQ[prog]
    with open(REPO / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]["scripts"][prog]


def execute(toks, cwd, stdin=None, stdout=None):
    """Run one command in ``cwd`` -> (exit status, stderr tail). In this process through its entry point (module
    docstring), or as a subprocess with DOCS_RUN_SUBPROCESS=1."""
    if os.environ.get("DOCS_RUN_SUBPROCESS") == "1":
        env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
        with open(stdout or os.devnull, "w") as out:
            proc = subprocess.run([str(BIN / toks[0]), *toks[1:]], cwd=cwd, env=env, input=stdin or "",
                                  stdout=out, stderr=subprocess.PIPE, text=True, timeout=600)
        return proc.returncode, proc.stderr[-4000:]
    if toks[0] == "fairseq-train":
        reset_fairseq_train()
    module, func = entry_point(toks[0]).split(":")
    main = getattr(__import__(module, fromlist=["_"]), func)
    old = sys.argv, os.getcwd(), sys.stdin
    err = io.StringIO()
    out = open(stdout, "w", encoding="utf-8") if stdout else io.StringIO()
    try:
        sys.argv, sys.stdin = [toks[0], *toks[1:]], io.StringIO(stdin or "")
        os.chdir(cwd)
        with out, contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main()
            except SystemExit as e:
                code = e.code
    finally:
        sys.argv, sys.stdin = old[0], old[2]
        os.chdir(old[1])
    status = code if isinstance(code, int) else (0 if code is None else 1)
    return status, (err.getvalue() + ("" if status == 0 or isinstance(code, (int, type(None))) else str(code)))[-4000:]


def run_here(*cmd):
    """tests/tiny_models.py's ``run``: a console script (``BIN/NAME``) with its arguments, through :func:`execute`
    in this process; it must exit 0."""
    toks = [Path(str(cmd[0])).name, *map(str, cmd[1:])]
    status, err = execute(toks, os.getcwd())
    assert status == 0, f"{shlex.join(toks)}\nexit {status}:\n{err}"


def reset_fairseq_train():
    """What fairseq-train keeps between runs in one process (a new process starts without it): the best
    validation score so far, on which checkpoint_best.pt is written, and the early-stopping counter."""
    import fairseq_cli.train
    from fairseq import checkpoint_utils

    for func, names in ((checkpoint_utils.save_checkpoint, ("best",)),
                        (fairseq_cli.train.should_stop_early, ("best", "num_runs"))):
        for name in names:
            if hasattr(func, name):
                delattr(func, name)


# ------------------------------------------------------------------------------------------- tiny data
def head(src, dst, n, sep="\n"):
    """The first ``n`` lines (or blank-line-separated blocks with sep="\\n\\n") of ``src`` into ``dst``."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    items = [x for x in src.read_text(encoding="utf-8").split(sep) if x.strip()][:n]
    dst.write_text(sep.join(items) + sep + ("\n" if sep == "\n\n" else ""), encoding="utf-8")


def link(target, name):
    name.parent.mkdir(parents=True, exist_ok=True)
    name.symlink_to(target)


@pytest.fixture(scope="module")
def world(tmp_path_factory, tiny_stanza_models):
    """What every page's placeholders point at: ../shared slices in ``data``, the tiny stanza model, tiny
    checkpoints of tree2seq, lal (no tags) and StructFormer, and a Multi30k en-de data-bin with stanza trees."""
    d = tmp_path_factory.mktemp("docs_world")
    data = d / "data"
    m30k, ptb, wsj, sst = (SHARED / "data" / x for x in ("multi30k", "ptb_sample", "wsj22", "sst"))
    for split, n in (("train", 40), ("valid", 8), ("test", 8)):
        for lang in ("en", "de"):
            head(m30k / f"{split}.{lang}", data / "raw" / f"{split}.{lang}", n)
    for split, n in (("train", 30), ("valid", 10)):
        head(ptb / f"{split}.mrg", data / f"{split}.mrg", n)
        head(ptb / f"{split}.conllu", data / f"{split}.conllu", n, sep="\n\n")
    head(wsj / "wsj22.mrg", data / "wsj22.mrg", 12)
    head(wsj / "wsj22.sd.conll", data / "wsj22.sd.conll", 12, sep="\n\n")
    head(sst / "train.txt", data / "sst" / "train.txt", 60)
    head(sst / "dev.txt", data / "sst" / "dev.txt", 20)
    models = build_models(d / "models", families={"tree2seq", "lal_notags", "structformer"}, run=run_here)
    world = {"data": data, "stanza": tiny_stanza_models, "models": models}
    toks = adapt("README.md", "", shlex.split(
        "fairseq-tree-preprocess -s en -t de --trainpref raw/train --validpref raw/valid --testpref raw/test "
        f"--parser stanza --stanza-model-dir {tiny_stanza_models} --bpe-merges 100 --joined-dictionary --workers 1 "
        f"--destdir {d / 'multi30k.en-de'}"))
    status, err = execute(toks, data)
    assert status == 0, err
    world["multi30k"] = d / "multi30k.en-de"
    return world


def seed(page, cwd, world):
    """A fresh working directory for ``page`` with its placeholder inputs."""
    data, models = world["data"], world["models"]
    for name in ("raw", "sst"):
        shutil.copytree(data / name, cwd / name)
    for name in ("train.mrg", "train.conllu", "valid.mrg", "valid.conllu", "wsj22.mrg", "wsj22.sd.conll"):
        shutil.copy(data / name, cwd / name)
    link(world["stanza"], cwd / "models" / "stanza_en")
    link(world["stanza"], cwd / "DIR")
    for src, names in ((data / "wsj22.mrg", ["GOLD.mrg", "PRED.trees", "parsed.trees", "WORK/trees/lal/test.en.trees",
                                             "WORK/trees/stanza/test.en.trees"]),
                       (data / "wsj22.sd.conll", ["G.conll", "P.conllu"]),
                       (data / "valid.mrg", ["wsj23.mrg"]),
                       # lal.md's release PTB files (PTB-style brackets and Stanford dependencies)
                       (data / "train.mrg", ["02-21.10way.clean"]),
                       (data / "train.conllu", ["ptb_train_3.3.0.sd.clean"]),
                       (data / "wsj22.mrg", ["22.auto.clean"]), (data / "wsj22.sd.conll", ["ptb_dev_3.3.0.sd.clean"]),
                       (data / "valid.mrg", ["23.auto.clean"]), (data / "valid.conllu", ["ptb_test_3.3.0.sd.clean"]),
                       (data / "raw" / "train.en", ["raw.en", "FP.en"])):
        for name in names:
            (cwd / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(src, cwd / name)
    trees = (data / "valid.mrg").read_text(encoding="utf-8").splitlines()
    (cwd / "trees.txt").write_text("\n".join(trees[:3]) + "\n", encoding="utf-8")
    (cwd / "valid.txt").write_text(" ".join(RAW).lower() + "\n" + "\n".join(RAW) + "\n", encoding="utf-8")
    (cwd / "raw.txt").write_text("\n".join(RAW) + "\n", encoding="utf-8")
    (cwd / "text.txt").write_text("\n".join(RAW) + "\n", encoding="utf-8")
    (cwd / "text.label").write_text("2\n3\n", encoding="utf-8")
    n = len((cwd / "FP.en").read_text(encoding="utf-8").splitlines())
    (cwd / "FP.label").write_text("".join(f"{i % 5}\n" for i in range(n)), encoding="utf-8")  # classification.md
    (cwd / "classes.txt").write_text("2\n" * 20, encoding="utf-8")
    (cwd / "bleu.json").write_text(json.dumps({"bleu": 1.0}), encoding="utf-8")
    link(world["multi30k"], cwd / "data-bin" / "multi30k.en-de")  # pages that train without preprocessing first
    link("ckpt/checkpoint_best.pt", cwd / "CKPT")  # classification.md: the checkpoint its fairseq-train wrote
    ckpts = {"hub.md": {"ckpt/tree2seq/checkpoint_best.pt": "tree2seq", "ckpt/lal/checkpoint_best.pt": "lal_notags"},
             "induction.md": {"ckpt/structformer/checkpoint_best.pt": "structformer"},
             "view.md": {"ckpt/checkpoint_best.pt": "structformer", "ckpt/lal/checkpoint_best.pt": "lal_notags"}}
    for name, family in ckpts.get(page, {}).items():
        link(models[family][0], cwd / name)
    if page == "tree2seq.md":  # the trivial-tree data-bin of train_tree2seq_multi30k.sh: any tree data-bin
        link(world["multi30k"], cwd / "work" / "t2s_leaves" / "data-bin" / "trivial.en-de")
        for name, epoch in (("a.pt", 1), ("b.pt", 2), ("c.pt", 3)):  # the reader's checkpoints: the page's own
            link(f"ckpt/checkpoint{epoch}.pt", cwd / name)
    if page == "RESULTS.md":  # the kept records of the Multi30k anchor (the repository's own) and their references
        link(REPO / "results", cwd / "results")
        link(SHARED / "data" / "multi30k" / "test.de", cwd.parent / "shared" / "data" / "multi30k" / "test.de")
    if page in ("README.md", "preprocessing.md"):  # they write data-bin/multi30k.en-de themselves
        (cwd / "data-bin" / "multi30k.en-de").unlink()


# ------------------------------------------------------------------------------------------- the runs
PAGES = sorted({p for p, line, toks, *_ in COMMANDS if runs(toks) and skip_reason(p, line, toks) is None},
               key=[p.name for p in DOCS].index)


@pytest.mark.parametrize("page", PAGES)
def test_the_commands_of_a_page_run(page, world, tmp_path):
    """The page's commands, in order, in one working directory; the first failure is reported with its command
    as run (later commands of a page often read what it writes)."""
    seed(page, tmp_path, world)
    ran = 0
    for p, line, toks, stdin, stdout, variables in COMMANDS:
        if p != page or not runs(toks) or skip_reason(p, line, toks) is not None:
            continue
        argv = adapt(page, line, shell_words(toks, variables, tmp_path))
        text = (tmp_path / stdin).read_text(encoding="utf-8") if stdin else looked_up(STDIN, page, line)
        status, err = execute(argv, tmp_path, stdin=text, stdout=stdout and str(tmp_path / stdout))
        assert status == 0, f"{page}: {line}\nran as: {shlex.join(argv)}\nexit {status}:\n{err}"
        missing = [o for o in outputs(argv) if not list(tmp_path.glob(glob_escape(o) + "*"))]
        assert not missing, f"{page}: {line}\nran as: {shlex.join(argv)}\nwrote no {missing}"
        ran += 1
    assert ran


def glob_escape(path):
    return re.sub(r"([*?\[])", r"[\1]", path)


def test_commands_run_and_skipped_counts():
    """The tally of the report (printed with -s)."""
    run_n = sum(1 for p, line, toks, *_ in COMMANDS if runs(toks) and skip_reason(p, line, toks) is None)
    skipped = [(p, line) for p, line, toks, *_ in COMMANDS if skip_reason(p, line, toks) is not None]
    print(f"{run_n} documented commands run, {len(skipped)} parse-only")
    assert run_n + len(skipped) == len(COMMANDS)
    assert Path(USER_DIR).is_dir()
