"""What a fairseq user expects of every CLI and hub (issue 29), on tiny real models of the four families trained
here: portable model folders (fairseq-tree-export) that load from anywhere with identical outputs, errors that
say what to do, raw text with any parser, one result type per hub call, devices, progress and quiet."""

import importlib
import json
import shutil
import sys

import pytest
from conftest import BIN
from tiny_models import RAW, SST, USER_DIR, build_models, ok, sh

pytestmark = pytest.mark.slow(minutes=2.5)  # 155 s measured (-n 0, the busy 2-core box, 2026-11-27)


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """Every family, trained through the console scripts' entry points in this process (the tests below run the
    CLIs as processes)."""
    from test_docs_commands_run import run_here

    return build_models(tmp_path_factory.mktemp("families"), run=run_here)


# ------------------------------------------------------------------------------------------ portable folders
#: a family -> (the model class, a script printing its outputs on fixed inputs as one JSON line)
OUTPUTS = {
    "lal": ("fairseq_tree.models.lal_parser:LALParserModel",
            "[str(t) for t in hub.parse([['The', 'dog', 'runs', '.'], ['Prices', 'fell']], "
            "[['DT', 'NN', 'VBZ', '.'], ['NNS', 'VBD']])]"),
    "tree2seq": ("fairseq_tree.models.tree2seq_transformer:Tree2SeqModel",
                 "[[str(t), round(t.score, 4)] for t in hub.translate(['(S (NP (DT The) (NN dog)) (VP (VBZ runs)))',"
                 " '(NP (NNS Prices))'], beam=2, max_len_b=4)]"),
    "classifier": ("fairseq_tree.models.tree_classifier:TreeClassifierModel",
                   "[[str(c), {k: round(v, 5) for k, v in c.probabilities.items()}] for c in hub.classify("
                   "['(3 (2 The) (3 (3 good) (2 film)))', '(1 (1 dull) (2 .))'])]"),
    "structformer": ("fairseq_tree.models.structformer:StructFormerModel",
                     "[x.to_json() for x in hub.induce(['the dog runs fast', 'prices fell'])]"),
}


def outputs(family, folder, *args, cwd=None):
    """The family's hub outputs on its fixed inputs (OUTPUTS), as JSON: in this process, or with ``cwd`` in a new
    Python process started there (nothing of this process's state, only the folder)."""
    module, cls = OUTPUTS[family][0].split(":")
    if cwd is None:
        hub = getattr(importlib.import_module(module), cls).from_pretrained(*map(str, (folder, *args)), device="cpu")
        return json.loads(json.dumps(eval(OUTPUTS[family][1], {"hub": hub})))
    script = (f"import json; from {module} import {cls}\n"
              f"hub = {cls}.from_pretrained(*{[str(a) for a in (folder, *args)]!r}, device='cpu')\n"
              f"print(json.dumps({OUTPUTS[family][1]}))")
    return json.loads(ok(sys.executable, "-c", script, cwd=cwd).stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("family", list(OUTPUTS))
def test_exported_folder_loads_anywhere_with_identical_outputs(models, family, tmp_path):
    """The checkpoint's outputs here, then fairseq-tree-export (its entry point, in this process: the console script
    runs in test_interactive_raw_text_with_the_lal_parser_and_a_bad_line), the folder moved and the data-bin hidden:
    the same outputs in a new process started in /."""
    from fairseq_tree.cli.export import main as export

    ckpt, data = models[family]
    before = outputs(family, ckpt.parent, ckpt.name, data)
    export([str(ckpt), str(tmp_path / "exported")])
    card = json.loads((tmp_path / "exported" / "model_card.json").read_text())
    assert card["parameters"] > 0 and card["training_data"] == str(data) and card["updates"] >= 1
    elsewhere = tmp_path / "moved" / "model"
    shutil.copytree(tmp_path / "exported", elsewhere)
    shutil.rmtree(tmp_path / "exported")
    hidden = data.with_name(data.name + ".hidden")  # the training data-bin is gone: the folder needs nothing else
    data.rename(hidden)
    try:
        after = outputs(family, elsewhere, cwd="/")
    finally:
        hidden.rename(data)
    assert after == before
    assert "last_optimizer_state" not in _saved_keys(elsewhere / "model.pt")


def _saved_keys(path):
    from fairseq_tree import safe_loading

    state = safe_loading.load(path)
    return {k for k, v in state.items() if v is not None}


def test_a_moved_checkpoint_says_what_to_pass(models, tmp_path):
    ckpt, data = models["lal"]
    hidden = data.with_name(data.name + ".hidden")
    data.rename(hidden)
    try:
        proc = sh(BIN / "fairseq-tree-parse", "--path", ckpt, "--input", models["dir"] / "t.mrg", "--cpu")
    finally:
        hidden.rename(data)
    assert proc.returncode != 0
    assert str(data) in proc.stderr and "--data DIR" in proc.stderr and "fairseq-tree-export" in proc.stderr


# --------------------------------------------------------------------------------- errors that say what to do
def test_a_checkpoint_of_another_task_names_its_task_and_tool(models, tmp_path):
    t2s, _ = models["tree2seq"]
    lal, _ = models["lal"]
    proc = sh(BIN / "fairseq-tree-parse", "--path", t2s, "--input", models["dir"] / "t.mrg", "--cpu")
    assert proc.returncode != 0 and "'tree_translation' checkpoint" in proc.stderr
    assert "fairseq-generate" in proc.stderr and "takes constituency_parsing checkpoints" in proc.stderr
    proc = sh(BIN / "fairseq-tree-classify", "--path", lal, "--input", SST / "dev.txt", "--cpu")
    assert proc.returncode != 0 and "'constituency_parsing' checkpoint" in proc.stderr
    assert "Run it with fairseq-tree-parse" in proc.stderr
    proc = sh(BIN / "fairseq-tree-induce", "--path", lal, "--input", models["dir"] / "raw.txt", "--out", tmp_path)
    assert proc.returncode != 0 and "fairseq-tree-induce" in proc.stderr and "fairseq-tree-parse" in proc.stderr
    from fairseq_tree.inference.checkpoint import WrongCheckpoint
    from fairseq_tree.models.lal_parser import LALParserModel

    with pytest.raises(WrongCheckpoint, match="Tree2SeqModel.from_pretrained"):
        LALParserModel.from_pretrained(str(t2s.parent), t2s.name, device="cpu")


def test_fairseq_generate_with_the_wrong_task_says_which(models):
    t2s, data = models["tree2seq"]
    lal, _ = models["lal"]
    proc = sh(BIN / "fairseq-generate", data, "--user-dir", USER_DIR, "--path", t2s, "--gen-subset", "train",
              "--cpu", "--max-sentences", "2")  # --task tree_translation forgotten
    assert proc.returncode != 0
    assert "tree2seq models need the 'tree_translation' task, not TranslationTask" in proc.stderr
    proc = sh(BIN / "fairseq-generate", data, "--user-dir", USER_DIR, "--path", lal, "--gen-subset", "train",
              "--cpu", "--task", "tree_translation")
    assert proc.returncode != 0 and "lal_parser models need the 'constituency_parsing' task" in proc.stderr


def test_a_tag_reading_parser_refuses_untagged_input_unless_asked(models, tmp_path):
    lal, _ = models["lal"]
    plain = models["dir"] / "raw.txt"
    proc = sh(BIN / "fairseq-tree-parse", "--path", lal, "--input", plain, "--output", tmp_path / "p", "--cpu")
    assert proc.returncode != 0 and "--no-pos-tags" in proc.stderr and "--unknown-tags" in proc.stderr
    assert not (tmp_path / "p.trees").exists()
    ok(BIN / "fairseq-tree-parse", "--path", lal, "--input", plain, "--output", tmp_path / "p", "--cpu",
       "--unknown-tags")
    assert len((tmp_path / "p.trees").read_text().splitlines()) == len(RAW)
    from fairseq_tree.inference.parse import MissingTags
    from fairseq_tree.parsers.lal_parser import LALBackend

    with pytest.raises(MissingTags, match="--no-pos-tags"):
        LALBackend.from_options(model=str(lal), device="cpu")


def test_empty_inputs_are_errors_naming_the_file(models, tmp_path):
    empty = models["dir"] / "empty.txt"
    for cmd in (["fairseq-tree-parse", "--path", models["lal_notags"][0], "--input", empty],
                ["fairseq-tree-induce", "--path", models["structformer"][0], "--input", empty, "--out", tmp_path],
                ["fairseq-tree-classify", "--path", models["classifier"][0], "--input", empty]):
        proc = sh(BIN / cmd[0], *cmd[1:], "--cpu")
        assert proc.returncode != 0 and f"{empty}" in proc.stderr and "empty" in proc.stderr, (cmd, proc.stderr)


def test_a_score_over_nothing_is_null_not_zero(tmp_path):
    """Every gold word is punctuation: no dependency word is left to score (it used to print uuas 0.0)."""
    (tmp_path / "g.mrg").write_text("(ROOT (S (. .) (, ,)))\n")
    conllu = "1\t.\t_\t.\t.\t_\t0\troot\t_\t_\n2\t,\t_\t,\t,\t_\t1\tpunct\t_\t_\n\n"
    (tmp_path / "g.conllu").write_text(conllu)
    (tmp_path / "p.conllu").write_text(conllu)
    (tmp_path / "p.txt").write_text("(X (X .) (X ,))\n")
    proc = ok(BIN / "fairseq-tree-score", "--unsupervised", "--gold", tmp_path / "g.mrg", "--pred",
              tmp_path / "p.txt", "--gold-dep", tmp_path / "g.conllu", "--pred-dep", tmp_path / "p.conllu",
              )
    scores = json.loads(proc.stdout.strip().splitlines()[-1])
    assert scores["uuas"] is None and scores["uas"] is None and scores["dep_words"] == 0
    assert "no word to score" in proc.stderr


# ----------------------------------------------------------------------------------- raw text with any parser
def test_interactive_raw_text_with_the_lal_parser_and_a_bad_line(models, tmp_path):
    t2s, data = models["tree2seq"]
    lal, _ = models["lal_notags"]
    lines = "(S (NP (DT The) (NN dog)) (VP (VBZ runs)))\n(S (NP broken\n(NP (NNS Prices))\n"
    proc = ok(BIN / "fairseq-interactive", data, "--user-dir", USER_DIR, "--task", "tree_translation", "--path", t2s,
              "--cpu", "--beam", "2", "--max-len-b", "4", stdin=lines)
    assert "input line 2" in proc.stderr and "(skipped)" in proc.stderr
    ids = sorted({line.split("\t")[0] for line in proc.stdout.splitlines() if line.startswith("H-")})
    assert ids == ["H-0", "H-2"]  # line 3 keeps its number
    proc = ok(BIN / "fairseq-interactive", data, "--user-dir", USER_DIR, "--task", "tree_translation", "--path", t2s,
              "--cpu", "--beam", "2", "--max-len-b", "4", "--tree-input", "raw", "--tree-parser", "lal",
              "--tree-parser-model", lal, "--tree-parser-device", "cpu", stdin="\n".join(RAW) + "\n")
    assert sorted(line.split("\t")[0] for line in proc.stdout.splitlines() if line.startswith("H-")) == ["H-0", "H-1"]
    # the hub, with the parser bundled in an exported folder
    ok(BIN / "fairseq-tree-export", t2s, tmp_path / "t2s", "--parser", lal)
    from fairseq_tree.models.tree2seq_transformer import Tree2SeqModel

    hub = Tree2SeqModel.from_pretrained(str(tmp_path / "t2s"), tree_input="raw", device="cpu")
    out = hub.translate(RAW, beam=2, max_len_b=4)
    assert len(out) == 2 and all(isinstance(t.score, float) and t.tokens for t in out)
    with pytest.raises(ValueError, match="sentence 2"):
        Tree2SeqModel.from_pretrained(str(tmp_path / "t2s"), device="cpu").translate(["(NP (NN a))", "(S (NP"])


def test_induce_raw_text_and_its_trees_read_back_through_parser_given(models, tmp_path):
    sf, _ = models["structformer"]
    out = tmp_path / "ind"
    proc = ok(BIN / "fairseq-tree-induce", "--path", sf, "--input", models["dir"] / "raw.txt", "--out", out,
              "--format", "jsonl", "--cpu")
    assert "induce: 2/2 sent" in proc.stderr  # the progress line (stderr is no terminal here)
    from fairseq_tree.text.tokenize import Tokenizer
    from fairseq_tree.trees import tree_from_brackets

    trees = (out / "trees.txt").read_text(encoding="utf-8").splitlines()
    tok = Tokenizer("moses", "en", ptb=True)
    assert [tree_from_brackets(t).words for t in trees] == [tok(s) for s in RAW]
    records = [json.loads(x) for x in (out / "induced.jsonl").read_text().splitlines()]
    assert [r["tree"] for r in records] == trees and all(len(r["heads"]) == len(r["words"]) for r in records)
    assert (out / "deps.conllu").read_text().count("# sent_id") == 2
    # the treebank mode's trees too: both read back through one fairseq-tree-preprocess --parser given (the raw
    # text's trees as its train split, the treebank's as its valid split)
    ok(BIN / "fairseq-tree-induce", "--path", sf, "--treebank", models["dir"] / "t.mrg", "--out", tmp_path / "tb",
       "--no-perplexity", "--cpu")
    sizes = {}
    for split, src in (("train", out / "trees.txt"), ("valid", tmp_path / "tb" / "trees.txt")):
        sizes[split] = len(src.read_text().splitlines())
        shutil.copy(src, tmp_path / f"{split}.en")
        (tmp_path / f"{split}.xx").write_text("x\n" * sizes[split])
    assert sizes == {"train": len(RAW), "valid": 30}
    ok(BIN / "fairseq-tree-preprocess", "-s", "en", "-t", "xx", "--trainpref", tmp_path / "train", "--validpref",
       tmp_path / "valid", "--parser", "given", "--bpe-merges", "50", "--destdir", tmp_path / "bin")
    report = json.loads((tmp_path / "bin" / "preprocess.json").read_text())["splits"]
    assert {split: report[split]["sentences"] for split in sizes} == sizes
    assert {split: report[split]["skipped"] for split in sizes} == {"train": 0, "valid": 0}


# ------------------------------------------------------------------------------ result types, devices, quiet
def test_hubs_are_modules_with_one_result_type(models):
    import torch

    from fairseq_tree.inference.results import Classification, InducedStructure
    from fairseq_tree.models.lal_parser import LALParserModel
    from fairseq_tree.models.structformer import StructFormerModel
    from fairseq_tree.models.tree_classifier import TreeClassifierModel
    from fairseq_tree.trees import Tree, tree_from_brackets

    lal, data = models["lal_notags"]
    parser = LALParserModel.from_pretrained(str(lal.parent), lal.name, str(data))
    assert isinstance(parser, torch.nn.Module) and parser.to("cpu").eval() is parser
    assert parser.device == torch.device("cpu")  # the GPU would be the default where there is one
    tree = parser.parse("The dog runs .")
    assert isinstance(tree, Tree) and str(tree) == tree.to_brackets(one_word=True) and tree.words[1] == "dog"
    clf_ckpt, clf_data = models["classifier"]
    clf = TreeClassifierModel.from_pretrained(str(clf_ckpt.parent), clf_ckpt.name, str(clf_data), device="cpu")
    c = clf.classify("(3 (2 The) (3 good))")
    assert isinstance(c, Classification) and isinstance(c, str)
    assert c == max(c.probabilities, key=c.probabilities.get) and abs(sum(c.probabilities.values()) - 1) < 1e-5
    sf, sf_data = models["structformer"]
    ind = StructFormerModel.from_pretrained(str(sf.parent), sf.name, str(sf_data), device="cpu").induce("the dog runs")
    assert isinstance(ind, InducedStructure) and str(ind) == ind.tree and len(ind.heads) == 3
    assert tree_from_brackets(ind.tree).words == ["the", "dog", "runs"] and ind.tree.count("(X ") == 3 + 2


def test_cli_jsonl_and_progress_and_devices(models, tmp_path):
    lal, _ = models["lal_notags"]
    proc = ok(BIN / "fairseq-tree-parse", "--path", lal, "--input", models["dir"] / "t.mrg", "--output",
              tmp_path / "p", "--format", "jsonl", "--cpu")
    assert "parse: 30/30 sent" in proc.stderr and "tensorboardX" not in proc.stderr
    trees = (tmp_path / "p.trees").read_text().splitlines()
    assert [json.loads(x)["tree"] for x in (tmp_path / "p.jsonl").read_text().splitlines()] == trees
    clf, _ = models["classifier"]
    dev = SST / "dev.txt"
    labels = ok(BIN / "fairseq-tree-classify", "--path", clf, "--input", dev, "--cpu").stdout.splitlines()[:-1]
    proc = ok(BIN / "fairseq-tree-classify", "--path", clf, "--input", dev, "--format", "jsonl", "--device", "cpu")
    assert [json.loads(x)["label"] for x in proc.stdout.splitlines()[:-1]] == labels
    assert "classify: " in proc.stderr
    import torch

    if not torch.cuda.is_available():
        proc = sh(BIN / "fairseq-tree-parse", "--path", lal, "--input", models["dir"] / "t.mrg", "--device", "cuda")
        assert proc.returncode == 2 and "CUDA is not available" in proc.stderr and "--device cpu" in proc.stderr
