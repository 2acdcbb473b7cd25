"""Parser backends on a device, in length-sorted batches (fairseq_tree/preprocess/parsers): the trees of a shuffled
list of real
sentences (ptb_sample) are those of parsing them one at a time and in input-order batches, results come back in
input order, and ParseError names the right input sentence. Real checkpoints (tiny lal_parser and
constituent_transformer trained here through fairseq-train; tiny stanza models from conftest), real CLIs."""

import json
import random
import subprocess

import pytest
import torch
from conftest import BIN, REPO, SHARED, assert_safe_checkpoint
from conftest import run_command as _run
from test_lal_cli import treebank_slice

from fairseq_tree.parsers import BatchedBackend, ParseError, check_device, length_batches

PTB = SHARED / "data" / "ptb_sample"
NO_CUDA = not torch.cuda.is_available()


def _need_ptb():
    if not (PTB / "train.mrg").is_file():
        pytest.skip(f"{PTB} not found")


# ---------------------------------------------------------------- checkpoints, trained once per module

@pytest.fixture(scope="module")
def lal_ckpt(tmp_path_factory):
    """lal_parser_tiny, --no-pos-tags, 2 epochs on the first 40 training trees of 5-20 words (junk trees, a real
    model: near-tied scores make batch invariance a strict test)."""
    _need_ptb()
    d = treebank_slice(tmp_path_factory.mktemp("lal"), 40)
    _run(BIN / "fairseq-train", d / "bin", "--user-dir", REPO / "fairseq_tree", "--task", "constituency_parsing",
         "--arch", "lal_parser_tiny", "--criterion", "span_hinge_dependency", "--optimizer", "adam", "--lr", "4e-3",
         "--batch-size", "10", "--max-epoch", "2", "--cpu", "--seed", "1", "--save-dir", d / "ck",
         "--no-epoch-checkpoints", "--disable-validation", "--no-pos-tags", "--log-format", "simple")
    assert_safe_checkpoint(d / "ck" / "checkpoint_last.pt")
    return d / "ck" / "checkpoint_last.pt"


@pytest.fixture(scope="module")
def induced_ckpt(tmp_path_factory):
    """constituent_transformer_tiny after 30 updates on the PTB sample's training words."""
    _need_ptb()
    d = tmp_path_factory.mktemp("induced")
    _run(BIN / "python", "-m", "fairseq_tree.data.induction_text", "--out", d / "train.txt", "--treebank",
         PTB / "train.mrg")
    _run(BIN / "fairseq-preprocess", "--only-source", "--trainpref", d / "train.txt", "--validpref", d / "train.txt",
         "--destdir", d / "bin", "--nwordssrc", "2000")
    _run(BIN / "fairseq-train", d / "bin", "--user-dir", REPO / "fairseq_tree", "--task", "tree_induction",
         "--arch", "constituent_transformer_tiny", "--criterion", "masked_lm", "--optimizer", "adam", "--lr", "1e-3",
         "--max-tokens", "1500", "--max-update", "30", "--cpu", "--seed", "1", "--save-dir", d / "ck",
         "--no-epoch-checkpoints", "--disable-validation", "--log-format", "simple")
    assert_safe_checkpoint(d / "ck" / "checkpoint_last.pt")
    return d / "ck" / "checkpoint_last.pt"


def _backend(name, request, **options):
    from fairseq_tree.parsers import build_parser

    if name == "stanza":
        return build_parser("stanza", model_dir=str(request.getfixturevalue("tiny_stanza_models")), **options)
    ckpt = request.getfixturevalue(f"{name}_ckpt")
    return build_parser(name, model=str(ckpt), **options)


@pytest.fixture(scope="module")
def ptb_sentences():
    """60 real sentences of ptb_sample/valid (2-67 tokens), shuffled with a fixed seed."""
    _need_ptb()
    sents = [line.split() for line in (PTB / "valid.txt").read_text(encoding="utf-8").splitlines()[:60]]
    random.Random(13).shuffle(sents)
    return sents


class _Recorder:
    """Wraps a backend's ``parse_batch`` (the real one still runs) and records the lengths of each call's items."""

    def __init__(self, backend):
        self.calls, self.inner = [], backend.parse_batch
        backend.parse_batch = self

    def __call__(self, items):
        self.calls.append([len(_tokens(x)) for x in items])
        return self.inner(items)


def _tokens(item):
    return item[0] if isinstance(item, tuple) else item  # induced items are (tokens, positions, words)


def _pads(calls):
    return sum(max(c) * len(c) - sum(c) for c in calls)


# ---------------------------------------------------------------- batching helpers

def test_length_batches():
    assert length_batches([3, 1, 2, 1, 5], 2) == [[1, 3], [2, 0], [4]]  # stable: equal lengths keep input order
    assert length_batches([3, 1, 2, 1, 5], 2, sort=False) == [[0, 1], [2, 3], [4]]
    assert length_batches([], 4) == []
    with pytest.raises(ValueError, match="positive"):
        length_batches([1], 0)


class _FailsOnBoom(BatchedBackend):
    """Our batching interface with a parse_batch that fails a whole batch holding "BOOM" (not a stand-in for a
    model: it tests how BatchedBackend localises a failed batch and maps the failure back to its input index)."""

    def __init__(self, batch_size, sort_by_length=True):
        self.batch_size, self.sort_by_length, self.calls = batch_size, sort_by_length, []

    def prepare(self, sentence):
        if not sentence:
            raise ValueError("empty sentence")
        return list(sentence)

    def parse_batch(self, items):
        self.calls.append([" ".join(x) for x in items])
        if any("BOOM" in x for x in items):
            raise RuntimeError("boom")
        return [f"(X {' '.join(x)})" for x in items]


def test_failed_batch_is_localised_to_its_input_sentences():
    """Input index 1 (long, sorted last) and 4 (short, sorted first) fail in the model, 3 in prepare: parse_all has
    ParseErrors at exactly 1, 3, 4 with their own indices and the others' trees in place; parse raises index 1, the
    first in INPUT order, although the batch holding 4 fails first."""
    sents = [["a", "b", "c"], ["BOOM", "x", "y", "z", "w"], ["d"], [], ["BOOM"], ["e", "f"]]
    backend = _FailsOnBoom(batch_size=2)
    out = backend.parse_all(sents)
    assert [isinstance(r, ParseError) and r.index for r in out] == [False, 1, False, 3, 4, False]
    assert out[0] == "(X a b c)" and out[2] == "(X d)" and out[5] == "(X e f)"
    assert out[1].message == out[4].message == "RuntimeError: boom" and out[3].message == "empty sentence"
    assert backend.calls[0] == ["d", "BOOM"]  # lengths 1, 1 in input order (a stable sort), then one by one
    assert backend.calls[1:3] == [["d"], ["BOOM"]]
    with pytest.raises(ParseError) as e:
        backend.parse(sents)
    assert e.value.index == 1
    assert backend.parse([["b", "c"], ["a"]]) == ["(X b c)", "(X a)"]


def test_check_device():
    assert check_device("cpu") == "cpu"
    for bad in ("gpu", "cuda:", "cpu:0", "cuda:x", ""):
        with pytest.raises(ValueError, match="expected cpu, cuda or cuda:N"):
            check_device(bad)


@pytest.mark.skipif(not NO_CUDA, reason="CUDA is available here")
def test_cuda_without_cuda_is_a_clear_error():
    with pytest.raises(ValueError, match=r"--device cuda:0: CUDA is not available on this machine.*use --device cpu"):
        check_device("cuda:0")


# ---------------------------------------------------------------- real backends: order and batch invariance

@pytest.mark.parametrize("name", ["lal", "induced", "stanza"])
def test_sorted_batches_give_the_trees_of_one_at_a_time_in_input_order(name, request, ptb_sentences):
    """Shuffled real sentences: sorted batches of 8 (stanza: one call, stanza sorts) == input-order batches of 8 ==
    one sentence per call, tree for tree; the sorted calls really were length-sorted, with fewer pads."""
    sents = ptb_sentences
    alone = _backend(name, request, batch_size=1)
    reference = [alone.parse([s])[0] for s in sents]
    assert all(r.startswith("(") for r in reference)
    sorted_backend = _backend(name, request, batch_size=8)
    rec = _Recorder(sorted_backend)
    assert sorted_backend.parse(sents) == reference
    unsorted_backend = _backend(name, request, batch_size=8, sort_by_length=False)
    rec_u = _Recorder(unsorted_backend)
    assert unsorted_backend.parse(sents) == reference
    flat = [n for c in rec.calls for n in c]
    assert sorted(flat) == sorted(len(s) for s in sents)
    assert rec_u.calls == [[len(s) for s in sents[a:a + 8]] for a in range(0, len(sents), 8)]
    if name == "stanza":
        assert rec.calls == [sorted(len(s) for s in sents)]  # one call: stanza sorts and batches it
    else:
        assert flat == sorted(flat) and [len(c) for c in rec.calls] == [8] * 7 + [4]
        assert _pads(rec.calls) < _pads(rec_u.calls) / 4


@pytest.mark.parametrize("name", ["lal", "induced", "stanza"])
def test_parse_error_names_the_input_sentence(name, request, ptb_sentences):
    """Bad sentences at input positions 5 (empty) and 2 (a token with a space; stanza) or 400 words (lal, induced:
    longer than the model's max positions) of a shuffled list: parse_all puts the ParseError at exactly those
    positions, every other sentence gets its one-at-a-time tree; parse raises the first, index 2."""
    sents = list(ptb_sentences[:20])
    reference = _backend(name, request, batch_size=64).parse(sents)
    bad = ["two words", "x"] if name == "stanza" else ["word"] * 400
    sents[2], sents[5] = bad, []
    backend = _backend(name, request, batch_size=4)
    out = backend.parse_all(sents)
    assert [i for i, r in enumerate(out) if isinstance(r, ParseError)] == [2, 5]
    assert out[2].index == 2 and out[5].index == 5 and out[5].message == "empty sentence"
    assert ("whitespace" if name == "stanza" else "400 words") in out[2].message
    assert [r for i, r in enumerate(out) if i not in (2, 5)] == [r for i, r in enumerate(reference) if i not in (2, 5)]
    with pytest.raises(ParseError) as e:
        backend.parse(sents)
    assert e.value.index == 2


def test_run_parser_sorts_a_shard_and_restores_its_order(request, ptb_sentences):
    """stages._run_parser (what parse_shard calls) over 60 shuffled sentences in calls of 16: the trees of
    one-at-a-time parsing in input order, a failure at its own position; each call's lengths lie above the
    previous call's."""
    from fairseq_tree.preprocess.stages import _run_parser

    backend = _backend("lal", request, batch_size=16)
    reference = [backend.parse([s])[0] for s in ptb_sentences]
    sents = list(ptb_sentences)
    sents[17] = ["word"] * 400
    calls = []
    inner = backend.parse_all
    backend.parse_all = lambda batch: calls.append([len(s) for s in batch]) or inner(batch)
    out = _run_parser(backend, sents, batch_size=16)
    assert isinstance(out[17], ParseError) and out[17].index == 17
    assert [r for i, r in enumerate(out) if i != 17] == [r for i, r in enumerate(reference) if i != 17]
    assert [len(c) for c in calls] == [16, 16, 16, 12] and all(max(a) <= min(b) for a, b in zip(calls, calls[1:]))


# ---------------------------------------------------------------- device on the CLIs

def test_preprocess_records_the_device(lal_ckpt, tmp_path):
    """fairseq-tree-preprocess --parser lal --device cpu: the device is in preprocess.json's command and the trees
    are those of the backend called directly."""
    from fairseq_tree.parsers.lal_parser import LALBackend
    from fairseq_tree.text.tokenize import Tokenizer

    lines = (SHARED / "data" / "multi30k" / "train.en").read_text(encoding="utf-8").splitlines()[:30]
    (tmp_path / "train.en").write_text("\n".join(lines) + "\n", encoding="utf-8")
    _run(BIN / "fairseq-tree-preprocess", "-s", "en", "--only-source", "--trainpref", tmp_path / "train",
         "--destdir", tmp_path / "bin", "--parser", "lal", "--parser-model", lal_ckpt, "--device", "cpu",
         "--parse-batch-size", "8", "--shard-size", "20")
    report = json.loads((tmp_path / "bin" / "preprocess.json").read_text())
    assert report["command"]["device"] == "cpu" and report["splits"]["train"]["sentences"] == 30
    tok = Tokenizer("moses", "en", ptb=True)
    direct = LALBackend.from_options(model=str(lal_ckpt), batch_size=1).parse([tok(x) for x in lines])
    trees = (tmp_path / "bin" / "train.en.trees").read_text(encoding="utf-8").splitlines()
    assert trees == [" ".join(b.split()) for b in direct]


@pytest.mark.skipif(not NO_CUDA, reason="CUDA is available here")
@pytest.mark.parametrize("cli", ["fairseq-tree-preprocess", "fairseq-tree-classify"])
def test_cli_device_cuda_without_cuda_fails_before_any_work(cli, tmp_path):
    args = (["-s", "en", "--trainpref", tmp_path / "train", "--destdir", tmp_path / "bin"]
            if cli == "fairseq-tree-preprocess" else ["--path", tmp_path / "none.pt", "--input", tmp_path / "x"])
    proc = subprocess.run([str(BIN / cli), *map(str, args), "--device", "cuda"], cwd=str(REPO), capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 2
    assert "argument --device: --device cuda: CUDA is not available on this machine" in proc.stderr
    assert not (tmp_path / "bin").exists()


def test_classify_passes_its_device_to_the_parser():
    """fairseq-tree-classify has one --device (the classifier's and the raw-text parser's)."""
    from fairseq_tree.cli.classify import get_parser
    from fairseq_tree.preprocess.pipeline import parser_options

    args = get_parser().parse_args(["--path", "c.pt", "--input", "x", "--parser", "lal", "--parser-model", "m.pt",
                                    "--device", "cpu"])
    assert parser_options(args)["device"] == "cpu"
    assert [a.option_strings for a in get_parser()._actions if a.dest == "device"] == [["--device"], ["--cpu"]]


@pytest.mark.skipif(NO_CUDA, reason="no CUDA here")
@pytest.mark.parametrize("name", ["lal", "induced", "stanza"])
def test_cuda_gives_the_cpu_trees(name, request, ptb_sentences):
    """On a GPU machine: the backend on cuda parses the shuffled sentences into the CPU trees (fp32 both)."""
    cpu = _backend(name, request, batch_size=8).parse(ptb_sentences)
    gpu = _backend(name, request, batch_size=8, device="cuda")
    assert gpu.parse(ptb_sentences) == cpu
