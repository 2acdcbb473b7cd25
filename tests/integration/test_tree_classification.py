"""Tree classification (Nguyen et al. 2020, Section 5.2): SST trees -> targets, the task, the every-label loss,
tree_classifier and the transformer baseline, and the CLIs end to end on SST trees."""

import json
import re

import pytest
import torch
import torch.nn.functional as F
from conftest import BIN, REPO, SHARED, assert_safe_checkpoint, run_command
from fairseq import options, tasks
from fairseq.data import Dictionary, data_utils
from fairseq.dataclass.utils import convert_namespace_to_omegaconf

from fairseq_tree.data.class_labels import NO_TARGET, ClassScheme, node_inputs, tree_targets
from fairseq_tree.data.tree_classification_dataset import PhraseDataset, collate_classification
from fairseq_tree.trees import expand_subwords, labelled_tree_from_brackets

USER_DIR = str(REPO / "fairseq_tree")
SST = SHARED / "data" / "sst"
SST5 = ClassScheme.make(5)
SST2 = ClassScheme.make(5, binary=True)

# Hand-written SST trees: brackets, \/ and -RRB-; a unary chain at the root; one word under a unary chain; an SST
# token with a non-breaking space. Their canonical forms and targets are spelled out in the tests below.
A = r"(3 (2 (2 The) (2 co-writer\/director)) (4 (4 (3 really) (4 shines)) (2 -RRB-)))"
B = "(4 (3 (2 a) (4 b)))"
C = "(1 (3 bad))"
D = "(2 (2 8\u00a01\\/2) (3 stars))"
HAND = [A, B, C, D]


def preprocess(*args):
    from fairseq_tree.cli.preprocess import cli_main

    assert cli_main([str(a) for a in args]) == 0


def load(prefix):
    ds = data_utils.load_indexed_dataset(str(prefix), None, dataset_impl="mmap")
    return [ds[i].tolist() for i in range(len(ds))]


# ---------------------------------------------------------------- reading SST trees, targets

def test_reads_sst_trees_into_the_canonical_form():
    t = labelled_tree_from_brackets(A, SST5.names)
    assert t.words == ["The", "co-writer/director", "really", "shines", ")"]
    assert t.tags == ["2", "2", "3", "4", "2"]  # the preterminals' classes
    assert t.spans == [(0, 2), (2, 4), (2, 5), (0, 5)]  # post-order, root last
    assert t.labels == ["2", "4", "4", "3"]
    b = labelled_tree_from_brackets(B, SST5.names)  # the unary chain keeps its top label: the sentence's
    assert (b.words, b.spans, b.labels, b.tags) == (["a", "b"], [(0, 2)], ["4"], ["2", "4"])
    c = labelled_tree_from_brackets(C, SST5.names)
    assert (c.words, c.spans, c.tags) == (["bad"], [], ["1"])
    d = labelled_tree_from_brackets(D, SST5.names)
    assert (d.words, d.spans, d.labels, d.tags) == (["8", "1/2", "stars"], [(0, 2), (0, 3)], ["2", "2"],
                                                    ["_", "_", "3"])


def test_targets_aligned_with_post_order_nodes_and_leaves():
    t = labelled_tree_from_brackets(A, SST5.names)
    assert tree_targets(t, SST5) == (3, [2, 4, 4, 3], [2, 2, 3, 4, 2])
    assert tree_targets(t, SST2) == (1, [NO_TARGET, 1, 1, 1], [NO_TARGET, NO_TARGET, 1, 1, NO_TARGET])
    assert tree_targets(labelled_tree_from_brackets(C, SST5.names), SST5) == (1, [], [1])
    assert tree_targets(labelled_tree_from_brackets(C, SST5.names), SST2) == (0, [], [0])
    # the words of a token split at a non-breaking space are pieces of one labelled unit: no targets of their own
    assert tree_targets(labelled_tree_from_brackets(D, SST5.names), SST5) == (2, [2, 2], [NO_TARGET, NO_TARGET, 3])
    assert node_inputs(t.labels, "symbol") == ["X"] * 4


def test_bpe_split_word_carries_its_class_on_its_node():
    t = labelled_tree_from_brackets(A, SST5.names)
    pieces = expand_subwords(t, lambda w: ["re@@", "ally"] if w == "really" else [w])
    assert pieces.words == ["The", "co-writer/director", "re@@", "ally", "shines", ")"]
    assert pieces.spans == [(0, 2), (2, 4), (2, 5), (2, 6), (0, 6)]
    # the new node (2, 4) has the word's class 3, the pieces none; the other units keep theirs
    assert tree_targets(pieces, SST5) == (3, [2, 3, 4, 4, 3], [2, 2, NO_TARGET, NO_TARGET, 4, 2])


def test_sentence_label_of_parsed_trees_goes_to_the_root_only():
    from fairseq_tree.trees import tree_from_brackets

    t = tree_from_brackets("(S (NP (DT The) (NN dog)) (VP (VBD barked)) (. .))")
    assert tree_targets(t, SST5, "4") == (4, [NO_TARGET, 4], [NO_TARGET] * 4)
    assert node_inputs(t.labels, "syntax") == ["NP", "S"] and node_inputs(t.labels, "symbol") == ["X", "X"]
    one = tree_from_brackets("(NP (NNS Yields))")
    assert tree_targets(one, SST2, "0") == (0, [], [0])


@pytest.mark.parametrize("line, message", [
    ("((2 The) (2 Rock))", "the node over 'The Rock' has no class label"),
    ("(3 (2 The) Rock)", "word 'Rock' has no class label"),
    ("(3 (7 The) (2 Rock))", "label '7' of the node over 'The' is not a class (0, 1, 2, 3, 4)"),
    ("(3 (2 The) (2 Rock)) (2 (2 x) (2 y))", "2 trees on one line"),
])
def test_bad_sst_lines(line, message):
    from fairseq_tree.trees import TreeFormatError

    with pytest.raises(TreeFormatError, match=re.escape(message)):
        labelled_tree_from_brackets(line, SST5.names)


# ---------------------------------------------------------------- the pipeline

@pytest.fixture(scope="module")
def hand_bin(tmp_path_factory):
    d = tmp_path_factory.mktemp("hand")
    (d / "train.txt").write_text("\n".join(HAND) + "\n", encoding="utf-8")
    preprocess("--task", "classification", "--labels", "nodes", "-s", "txt", "--trainpref", d / "train",
               "--destdir", d / "bin")
    return d / "bin"


def test_pipeline_writes_hand_checked_targets(hand_bin):
    src = Dictionary.load(str(hand_bin / "dict.txt.txt"))
    labels = Dictionary.load(str(hand_bin / "dict.txt.labels.txt"))
    assert [labels[i] for i in range(labels.nspecial, len(labels))] == ["X"]  # never a class
    p = hand_bin / "train.txt-None.txt"
    words = [[src[i] for i in row] for row in load(p)]
    assert words == [["The", "co-writer/director", "really", "shines", ")"], ["a", "b"], ["bad"],
                     ["8", "1/2", "stars"]]
    assert load(f"{p}.nodes") == [[labels.index("X")] * 4, [labels.index("X")], [], [labels.index("X")] * 2]
    assert load(f"{p}.spans") == [[0, 2, 2, 4, 2, 5, 0, 5], [0, 2], [], [0, 2, 0, 3]]
    assert load(f"{p}.target") == [[3], [4], [1], [2]]
    assert load(f"{p}.node_target") == [[2, 4, 4, 3], [4], [], [2, 2]]
    assert load(f"{p}.leaf_target") == [[2, 2, 3, 4, 2], [2, 4], [1], [-1, -1, 3]]
    report = json.loads((hand_bin / "preprocess.json").read_text())["splits"]["train"]
    assert (report["labelled_nodes"], report["labelled_leaves"]) == (7, 9)
    assert json.loads((hand_bin / "classification.json").read_text())["classes"] == ["0", "1", "2", "3", "4"]


def test_binary_view_counts_on_shared_sst(tmp_path):
    """SST-2: 6,920 / 872 sentences; negative = classes 0+1, positive = 3+4 of the data README's root counts."""
    preprocess("--task", "classification", "--labels", "nodes", "--binary", "-s", "txt", "--trainpref",
               SST / "train", "--validpref", SST / "dev", "--shard-size", "20000", "--destdir", tmp_path)
    report = json.loads((tmp_path / "preprocess.json").read_text())["splits"]
    train, dev = report["train"], report["valid"]
    assert (train["lines"], train["sentences"], train["filtered"], train["skipped"]) == (8544, 6920, 1624, 0)
    assert (dev["lines"], dev["sentences"], dev["filtered"], dev["skipped"]) == (1101, 872, 229, 0)
    assert train["sentences_per_class"] == {"negative": 1092 + 2218, "positive": 2322 + 1288}
    assert dev["sentences_per_class"] == {"negative": 139 + 289, "positive": 279 + 165}
    assert train["filtered_by_reason"] == {"neutral_root": 1624}
    lines = (SST / "dev.txt").read_text(encoding="utf-8").splitlines()
    assert all(lines[k - 1].startswith("(2 ") for k in dev["filtered_lines"])
    assert json.loads((tmp_path / "classification.json").read_text())["classes"] == ["negative", "positive"]


# ---------------------------------------------------------------- task, model, criterion

def setup(data, arch="tree_classifier_tiny", *extra):
    parser = options.get_training_parser()
    args = options.parse_args_and_arch(parser, [str(data), "--user-dir", USER_DIR, "--task", "tree_classification",
                                                "--arch", arch, "--dropout", "0", "--cpu", *extra])
    cfg = convert_namespace_to_omegaconf(args)
    task = tasks.setup_task(cfg.task)
    task.load_dataset("train")
    torch.manual_seed(0)
    model = task.build_model(cfg.model).eval()
    return task, model, task.build_criterion(cfg.criterion)


def test_every_label_loss_against_hand_computed(hand_bin):
    task, model, criterion = setup(hand_bin)
    ds = task.datasets["train"]
    batch = collate_classification([ds[0], ds[2]], task.source_dictionary.pad(), task.label_dictionary.pad())
    loss, sample_size, log = criterion(model, batch)
    with torch.no_grad():
        out = model(**batch["net_input"])
    lv, nd = F.log_softmax(out["leaves"], -1), F.log_softmax(out["nodes"], -1)
    # tree A (row 0): leaves 2 2 3 4 2, nodes 2 4 4 3 (root = node 3); tree C (row 1): its one leaf, class 1
    expected = -(lv[0, 0, 2] + lv[0, 1, 2] + lv[0, 2, 3] + lv[0, 3, 4] + lv[0, 4, 2]
                 + nd[0, 0, 2] + nd[0, 1, 4] + nd[0, 2, 4] + nd[0, 3, 3] + lv[1, 0, 1])
    assert sample_size == 10 and log["phrase_total"] == 10
    torch.testing.assert_close(loss, expected, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(out["sentence"], torch.stack([out["nodes"][0, 3], out["leaves"][1, 0]]))

    task.cfg.root_only = True
    loss, sample_size, _ = type(criterion)(task)(model, batch)
    assert sample_size == 2
    torch.testing.assert_close(loss, -(nd[0, 3, 3] + lv[1, 0, 1]), atol=1e-5, rtol=1e-5)


def test_phrase_samples(hand_bin):
    task, _, _ = setup(hand_bin, "tree_classifier_tiny", "--phrase-samples")
    ds = task.datasets["train"]
    assert isinstance(ds, PhraseDataset) and len(ds) == 9 + 3 + 1 + 3  # every labelled node and leaf
    src = task.source_dictionary
    # tree A's node over "really shines )": its leaves, its two nodes shifted to 0, its class 4
    (item,) = [ds[i] for i in range(len(ds)) if ds.sentence[i] == 0 and (ds.start[i], ds.end[i]) == (2, 5)]
    assert [src[i] for i in item["source"]] == ["really", "shines", ")"]
    assert item["spans"].tolist() == [[0, 2], [0, 3]] and item["node_target"].tolist() == [4, 4]
    assert item["leaf_target"].tolist() == [3, 4, 2] and int(item["target"]) == 4
    assert sorted(int(ds[i]["target"]) for i in range(len(ds)) if ds.sentence[i] == 3) == [2, 2, 3]
    assert ds.sizes.tolist() == [len(ds[i]["source"]) + len(ds[i]["nodes"]) for i in range(len(ds))]


@pytest.fixture(scope="module")
def sst(tmp_path_factory):
    """240 SST train trees; dev = 100 SST dev trees + the hand trees (one-word, unary, NBSP); BPE 300."""
    d = tmp_path_factory.mktemp("sst")
    train = (SST / "train.txt").read_text(encoding="utf-8").splitlines()[:240]
    dev = (SST / "dev.txt").read_text(encoding="utf-8").splitlines()[:100] + HAND
    (d / "train.txt").write_text("\n".join(train) + "\n", encoding="utf-8")
    (d / "dev.txt").write_text("\n".join(dev) + "\n", encoding="utf-8")
    preprocess("--task", "classification", "--labels", "nodes", "-s", "txt", "--trainpref", d / "train",
               "--validpref", d / "dev", "--bpe-merges", "300", "--destdir", d / "bin")
    return d


def test_binarized_units_match_the_brackets_of_every_line(sst):
    """With BPE, every SST bracket is still exactly one labelled unit (a split word's class moves to its node);
    the sentence's class is the root's."""
    p = sst / "bin" / "valid.txt-None.txt"
    node_t, leaf_t, target = load(f"{p}.node_target"), load(f"{p}.leaf_target"), load(f"{p}.target")
    lines = (sst / "dev.txt").read_text(encoding="utf-8").splitlines()
    split_words = 0
    for line, nt, lt, (t,) in zip(lines, node_t, leaf_t, target):
        assert t == int(line[1])
        if line in (B, C):  # a unary chain is one unit: the top label
            continue
        units = sorted(x for x in nt + lt if x != NO_TARGET)
        assert units == sorted(int(c) for c in re.findall(r"\((\d)", line))
        split_words += sum(x == NO_TARGET for x in lt)
    assert split_words > 20  # BPE did split words


@pytest.mark.parametrize("arch, extra", [("tree_classifier_tiny", []), ("tree_classifier_tiny", [
    "--no-hierarchical-embeddings", "--no-subtree-mask"]), ("transformer_classifier_tiny", [])])
def test_batch_invariance(sst, arch, extra):
    task, model, _ = setup(sst / "bin", arch, *extra)
    task.load_dataset("valid")
    ds = task.datasets["valid"]
    ids = [100, 101, 102, 103, 0, 7, 42]  # the hand trees (C: one word), then SST trees of other lengths
    pad, lpad = task.source_dictionary.pad(), task.label_dictionary.pad()
    with torch.no_grad():
        together = model(**collate_classification([ds[i] for i in ids], pad, lpad)["net_input"])
        for b, i in enumerate(ids):
            alone = model(**collate_classification([ds[i]], pad, lpad)["net_input"])
            torch.testing.assert_close(alone["sentence"][0], together["sentence"][b], atol=1e-5, rtol=1e-5)
            if alone["nodes"] is not None:
                n, m = len(ds[i]["source"]), len(ds[i]["nodes"])
                torch.testing.assert_close(alone["leaves"][0], together["leaves"][b, :n], atol=1e-5, rtol=1e-5)
                torch.testing.assert_close(alone["nodes"][0], together["nodes"][b, :m], atol=1e-5, rtol=1e-5)


def test_batches_drop_no_sentence(sst):
    """fairseq drops the sentences left over by required_batch_size_multiple: not with the plugin (compat.py)."""
    task, _, _ = setup(sst / "bin")
    task.load_dataset("valid")
    itr = task.get_batch_iterator(dataset=task.datasets["valid"], max_sentences=5, required_batch_size_multiple=8)
    assert sorted(i for b in itr.next_epoch_itr(shuffle=False) for i in b["id"].tolist()) == list(range(104))


# ---------------------------------------------------------------- the CLIs end to end

def train(data, save, arch, *extra):
    proc = run_command(
        BIN / "fairseq-train", data, "--user-dir", USER_DIR, "--task", "tree_classification", "--arch", arch, *extra,
        "--optimizer", "adam", "--lr", "7e-4", "--lr-scheduler", "inverse_sqrt", "--warmup-updates", "10",
        "--dropout", "0.5", "--max-tokens", "2048", "--max-update", "24", "--cpu", "--save-dir", save,
        "--best-checkpoint-metric", "accuracy", "--maximize-best-checkpoint-metric", "--no-epoch-checkpoints",
        "--log-format", "json", "--num-workers", "0", "--validate-interval", "1000", "--save-interval", "1000")
    valid = [json.loads(line[line.index("{"):]) for line in proc.stderr.splitlines() + proc.stdout.splitlines()
             if "valid_accuracy" in line]
    return {k: float(v) for k, v in valid[-1].items()}  # the last validation: the model of checkpoint_last.pt


@pytest.fixture(scope="module")
def trained(sst, tmp_path_factory):
    out = tmp_path_factory.mktemp("ckpt")
    models = {"tree": (out / "tree", train(sst / "bin", out / "tree", "tree_classifier_tiny")),
            "transformer": (out / "tf", train(sst / "bin", out / "tf", "transformer_classifier_tiny", "--root-only",
                                               "--phrase-samples"))}
    for save, _ in models.values():
        assert_safe_checkpoint(save / "checkpoint_last.pt")
    return models


def classify(*args):
    from fairseq_tree.cli.classify import main

    return main([str(a) for a in args])


def dev_units(sst):
    """Labelled units of the dev file: one per bracket, less one for each of the unary chains of B and C."""
    return sum(line.count("(") for line in (sst / "dev.txt").read_text(encoding="utf-8").splitlines()) - 2


def test_tree_classifier_end_to_end(sst, trained):
    save, valid = trained["tree"]
    proc = run_command(BIN / "fairseq-tree-classify", "--path", save / "checkpoint_last.pt", "--input",
                       sst / "dev.txt", "--attention-share")
    lines = proc.stdout.splitlines()
    scores, preds = json.loads(lines[-1]), lines[:-1]
    gold = [line[1] for line in (sst / "dev.txt").read_text(encoding="utf-8").splitlines()]
    assert len(preds) == len(gold) == 104
    assert scores["accuracy"] == round(100 * sum(p == g for p, g in zip(preds, gold)) / 104, 2)
    # the CLI scores the dev file exactly as fairseq-train's validation scored the same sentences
    assert scores["accuracy"] == pytest.approx(valid["valid_accuracy"], abs=0.01)
    assert scores["phrase_accuracy"] == pytest.approx(valid["valid_phrase_accuracy"], abs=0.01)
    assert scores["labelled_units"] == dev_units(sst)
    share = scores["attention_share"]
    assert len(share["layers"]) == 2
    assert all(layer["leaf"] == 0.0 for layer in share["layers"])  # subtree mask: leaf queries see leaves only
    assert all(0 < layer["root"] < 100 and 0 < layer["node"] < 100 for layer in share["layers"])
    assert "attention mass on nodes" in proc.stderr
    # the hub interface classifies as the CLI does
    from fairseq_tree.models.tree_classifier import TreeClassifierModel

    hub = TreeClassifierModel.from_pretrained(str(save), "checkpoint_last.pt")
    assert hub.classify((sst / "dev.txt").read_text(encoding="utf-8").splitlines()) == preds


def test_binary_view_of_a_five_class_model(sst, trained, tmp_path):
    save, _ = trained["tree"]
    scores = classify("--path", save / "checkpoint_last.pt", "--input", sst / "dev.txt", "--binary",
                      "--output", tmp_path / "pred")
    preds = (tmp_path / "pred").read_text().splitlines()
    gold = [{"0": "negative", "1": "negative", "3": "positive", "4": "positive"}.get(line[1])
            for line in (sst / "dev.txt").read_text(encoding="utf-8").splitlines()]
    scored = [(p, g) for p, g in zip(preds, gold) if g]
    assert set(preds) <= {"negative", "positive"} and len(preds) == 104
    assert scores["no_class"] == gold.count(None) and scores["sentences"] == len(scored)
    assert scores["accuracy"] == round(100 * sum(p == g for p, g in scored) / len(scored), 2)


def test_transformer_baseline_end_to_end(sst, trained):
    save, valid = trained["transformer"]
    scores = classify("--path", save / "checkpoint_last.pt", "--input", sst / "dev.txt")
    assert scores["accuracy"] == pytest.approx(valid["valid_accuracy"], abs=0.01)
    assert "valid_phrase_accuracy" not in valid  # a sentence-only model; the CLI classifies each phrase alone
    assert scores["labelled_units"] == dev_units(sst) and 0 < scores["phrase_accuracy"] <= 100


def test_no_target_is_an_input(sst, trained):
    """Every class in the input changed: the same inputs, the same logits; only the targets differ."""
    from fairseq_tree.inference.classify import Classifier

    clf = Classifier(str(trained["tree"][0] / "checkpoint_last.pt"))
    lines = (sst / "dev.txt").read_text(encoding="utf-8").splitlines()[:40] + HAND
    shifted = [re.sub(r"\((\d)", lambda m: f"({(int(m.group(1)) + 2) % 5}", line) for line in lines]
    runs = []
    for text in (lines, shifted):
        examples = [clf.example(labelled_tree_from_brackets(t, SST5.names), SST5, labelled=True) for t in text]
        runs.append([(idx, out) for idx, _, out in clf.run([e.item for e in examples])])
        runs[-1].append([e.item["node_target"].tolist() for e in examples])
    assert runs[0][-1] != runs[1][-1]
    for (i0, o0), (i1, o1) in zip(runs[0][:-1], runs[1][:-1]):
        assert i0 == i1
        for key in ("sentence", "leaves", "nodes"):
            assert torch.equal(o0[key], o1[key])


def test_classify_brackets_with_a_label_file_and_bad_inputs(sst, trained, tmp_path):
    from fairseq_tree.trees import Tree, to_brackets

    ckpt = trained["tree"][0] / "checkpoint_last.pt"
    lines = (sst / "dev.txt").read_text(encoding="utf-8").splitlines()[:30]
    # the same sentences as trees without classes (every label X) and their classes in a label file
    trees = [labelled_tree_from_brackets(t, SST5.names) for t in lines]
    trees = [to_brackets(Tree(t.words, ["X"] * len(t.words), ["X"] * len(t.labels), t.spans)) for t in trees]
    (tmp_path / "in.trees").write_text("\n".join(trees) + "\n")
    (tmp_path / "in.label").write_text("".join(t[1] + "\n" for t in lines))
    (tmp_path / "in.sst").write_text("\n".join(lines) + "\n")
    by_labels = classify("--path", ckpt, "--input", tmp_path / "in.trees", "--labels", tmp_path / "in.label",
                         "--output", tmp_path / "p1")
    by_sst = classify("--path", ckpt, "--input", tmp_path / "in.sst", "--output", tmp_path / "p2")
    assert (tmp_path / "p1").read_text() == (tmp_path / "p2").read_text()
    assert by_labels["accuracy"] == by_sst["accuracy"] and by_labels["labelled_units"] == 30

    (tmp_path / "short.label").write_text("".join(t[1] + "\n" for t in lines[:29]))
    with pytest.raises(ValueError, match=re.escape(f"{tmp_path / 'short.label'}:30: file ends after 29 lines")):
        classify("--path", ckpt, "--input", tmp_path / "in.trees", "--labels", tmp_path / "short.label")
    (tmp_path / "bad.label").write_text("1\n2\nseven\n" + "".join(t[1] + "\n" for t in lines[3:]))
    with pytest.raises(ValueError, match=re.escape(f"{tmp_path / 'bad.label'}:3: label 'seven' is not a class")):
        classify("--path", ckpt, "--input", tmp_path / "in.trees", "--labels", tmp_path / "bad.label")
    (tmp_path / "bad.sst").write_text(lines[0] + "\n((2 The) (2 Rock))\n")
    with pytest.raises(ValueError, match=re.escape(f"{tmp_path / 'bad.sst'}:2: the node over 'The Rock' has no")):
        classify("--path", ckpt, "--input", tmp_path / "bad.sst", "--input-format", "sst")
