"""fairseq-tree-preprocess end to end (the real CLI), what it writes, and every bad-input case."""

import json
import subprocess

import pytest
import torch
from conftest import BIN, REPO, SHARED, run_command
from fairseq.data import Dictionary, data_utils

from fairseq_tree.text.tokenize import InputError, Tokenizer, check_line, ptb_fixups
from fairseq_tree.trees import read_tree_lines

pytestmark = pytest.mark.slow(minutes=3.5)  # measured: the file on one xdist worker (2026-11-25)

PTB = SHARED / "data" / "ptb_sample"
M30K = SHARED / "data" / "multi30k"


def run_cli(*args, ok=True):
    proc = subprocess.run([str(BIN / "fairseq-tree-preprocess"), *map(str, args)], capture_output=True, text=True)
    if ok and proc.returncode != 0:
        raise AssertionError(f"exit {proc.returncode}\n{proc.stderr[-3000:]}")
    return proc


def load(prefix):
    ds = data_utils.load_indexed_dataset(str(prefix), None, dataset_impl="mmap")
    assert ds is not None, f"{prefix}.bin/.idx missing"
    return [ds[i].tolist() for i in range(len(ds))]


@pytest.fixture(scope="module")
def ptb_corpus(tmp_path_factory):
    """A small 'parallel' corpus: PTB trees as the source (given), the lower-cased sentence as target."""
    d = tmp_path_factory.mktemp("ptbcorpus")
    trees = (PTB / "valid.mrg").read_text().splitlines()[:150]
    text = (PTB / "valid.txt").read_text().splitlines()[:150]
    (d / "train.en").write_text("\n".join(trees[:120]) + "\n")
    (d / "train.xx").write_text("\n".join(t.lower() for t in text[:120]) + "\n")
    (d / "valid.en").write_text("\n".join(trees[120:]) + "\n")
    (d / "valid.xx").write_text("\n".join(t.lower() for t in text[120:]) + "\n")
    return d


def given_args(corpus, dest, *extra):
    return ["-s", "en", "-t", "xx", "--trainpref", corpus / "train", "--validpref", corpus / "valid",
            "--parser", "given", "--destdir", dest, *extra]


@pytest.fixture(scope="module")
def given_run(ptb_corpus, tmp_path_factory):
    dest = tmp_path_factory.mktemp("given") / "bin"
    run_cli(*given_args(ptb_corpus, dest, "--bpe-merges", "300", "--workers", "2", "--shard-size", "50"))
    return dest


def test_given_writes_documented_files(given_run):
    for split in ("train", "valid"):
        for stem in ("en-xx.en", "en-xx.en.nodes", "en-xx.en.spans", "en-xx.xx"):
            for ext in ("bin", "idx"):
                assert (given_run / f"{split}.{stem}.{ext}").exists()
        assert (given_run / f"{split}.en.trees").exists()
    for f in ("dict.en.txt", "dict.xx.txt", "dict.en.labels.txt", "bpe.codes", "preprocess.json"):
        assert (given_run / f).exists()
    assert not (given_run / ".work").exists()
    report = json.loads((given_run / "preprocess.json").read_text())
    assert report["splits"]["train"]["lines"] == 120 and report["splits"]["train"]["sentences"] == 120
    assert report["splits"]["valid"]["sentences"] == 30 and report["splits"]["valid"]["skipped"] == 0
    for stage in ("tokenize", "parse", "bpe", "binarize"):
        assert report["throughput"][stage]["sentences_per_s"] > 0
    assert report["command"]["stanza_lang"] == "en"  # the stanza language, a parameter, recorded


# subword-nmt codes (format 0.2): every word below is one piece but "barked" -> bar@@ ked (no merge "bar ked</w>")
# and "The" -> T@@ h@@ e (no merge starts with "T")
BPE_CODES = "#version: 0.2\nt h\nth e</w>\nd o\ndo g</w>\ni t</w>\nr a\nra n</w>\nb a\nba r\nk e\nke d</w>\n"


def test_binarized_hand_made_trees_with_fixed_bpe_codes(tmp_path):
    """Literal expected leaves, node labels, spans and targets, written by hand from the trees and the codes: a
    word split into k > 1 pieces becomes a node labelled with its POS tag over the pieces (Nguyen et al. Fig. 7),
    nodes in post-order, no EOS on the source, EOS on the target."""
    trees = ["(S (NP (DT the) (NN dog)) (VP (VBD barked)) (. .))",
             "(S (NP (PRP it)) (VP (VBD ran)))",
             "( (S (NP-SBJ (DT The) (NN dog)) (VP (VBD ran))) )"]
    pref = _corpus(tmp_path, [t.encode() for t in trees], [b"dog barked .", b"it ran", b"the dog ran"])
    (tmp_path / "codes").write_text(BPE_CODES, encoding="utf-8")
    dest = tmp_path / "bin"
    run_cli(*given_args_simple(pref, dest), "--bpe-codes", tmp_path / "codes")
    src_dict = Dictionary.load(str(dest / "dict.en.txt"))
    tgt_dict = Dictionary.load(str(dest / "dict.xx.txt"))
    label_dict = Dictionary.load(str(dest / "dict.en.labels.txt"))
    leaves = [[src_dict[i] for i in x] for x in load(dest / "train.en-xx.en")]
    labels = [[label_dict[i] for i in x] for x in load(dest / "train.en-xx.en.nodes")]
    spans = load(dest / "train.en-xx.en.spans")
    targets = [[tgt_dict[i] for i in x] for x in load(dest / "train.en-xx.xx")]
    assert leaves == [["the", "dog", "bar@@", "ked", "."], ["it", "ran"], ["T@@", "h@@", "e", "dog", "ran"]]
    assert labels == [["NP", "VBD", "S"], ["S"], ["DT", "NP", "S"]]
    assert spans == [[0, 2, 2, 4, 0, 5], [0, 2], [0, 3, 0, 4, 0, 5]]
    assert targets == [["dog", "bar@@", "ked", ".", "</s>"], ["it", "ran", "</s>"], ["the", "dog", "ran", "</s>"]]
    assert (dest / "bpe.codes").read_text(encoding="utf-8") == BPE_CODES
    # the word-level trees, one line per input line, as given (whitespace normalised)
    assert (dest / "train.en.trees").read_text(encoding="utf-8").splitlines() == trees
    report = json.loads((dest / "preprocess.json").read_text())["splits"]["train"]
    assert (report["source_tokens"], report["nodes"], report["target_tokens"]) == (12, 7, 12)


def test_binarized_ptb_leaves_are_the_treebank_words(given_run):
    """150 PTB trees with learned BPE: the leaves, pieces joined, are the treebank's words (ptb_sample/valid.txt,
    brackets unescaped), and every tree's node spans are canonical (post-order, nested, root (0, n), m <= n - 1)."""
    src_dict = Dictionary.load(str(given_run / "dict.en.txt"))
    words = (PTB / "valid.txt").read_text().splitlines()[:150]
    unescape = {"-LRB-": "(", "-RRB-": ")", "-LCB-": "{", "-RCB-": "}"}
    split_words = compared = 0
    for split, lines in (("train", words[:120]), ("valid", words[120:])):
        leaves = load(given_run / f"{split}.en-xx.en")
        spans = load(given_run / f"{split}.en-xx.en.spans")
        nodes = load(given_run / f"{split}.en-xx.en.nodes")
        assert len(leaves) == len(spans) == len(nodes) == len(lines)
        for ids, flat, labels, line in zip(leaves, spans, nodes, lines):
            pieces = [src_dict[i] for i in ids]
            assert src_dict.eos() not in ids and (split == "valid" or src_dict.unk() not in ids)
            if src_dict.unk() not in ids:  # valid: pieces unseen in training are <unk>
                assert " ".join(pieces).replace("@@ ", "").split() == [unescape.get(w, w) for w in line.split()]
                compared += 1
            split_words += sum(p.endswith("@@") for p in pieces)
            n, sp = len(ids), list(zip(flat[0::2], flat[1::2]))
            assert len(labels) == len(sp) <= n - 1 and (n < 2 or sp[-1] == (0, n))
            assert sp == sorted(set(sp), key=lambda s: (s[1], -s[0]))
            assert all(0 <= a < b <= n and b - a >= 2 for a, b in sp)
            assert not any(a < c < b < d for a, b in sp for c, d in sp)
    assert split_words > 50 and compared > 130  # BPE did split words; all of train and most of valid compared


def test_output_is_independent_of_workers_and_shards(given_run, ptb_corpus, tmp_path):
    dest = tmp_path / "bin1"
    run_cli(*given_args(ptb_corpus, dest, "--bpe-codes", given_run / "bpe.codes", "--workers", "1",
                        "--shard-size", "1000"))
    for f in sorted(given_run.iterdir()):
        if f.suffix in (".bin", ".idx", ".txt", ".trees", ".codes"):
            assert f.read_bytes() == (dest / f.name).read_bytes(), f.name


def test_resume_from_completed_shards(ptb_corpus, given_run, tmp_path):
    dest = tmp_path / "bin"
    args = given_args(ptb_corpus, dest, "--bpe-codes", given_run / "bpe.codes", "--shard-size", "40", "--keep-work")
    run_cli(*args)
    # an interrupted run: final outputs missing, one shard's last stage unfinished
    for f in dest.glob("*.bin"):
        f.unlink()
    (dest / ".work" / "train.00001.bin.json").unlink()
    (dest / ".work" / "valid.00000.bpe.json").unlink()
    proc = run_cli(*args)
    assert "resuming, 3 of 4 shards already done" in proc.stderr
    assert "resuming, 4 of 4 shards already done" in proc.stderr  # the parse stage
    for split in ("train", "valid"):
        assert load(dest / f"{split}.en-xx.en") == load(given_run / f"{split}.en-xx.en")
        assert load(dest / f"{split}.en-xx.xx") == load(given_run / f"{split}.en-xx.xx")


def test_only_source(ptb_corpus, tmp_path):
    dest = tmp_path / "mono"
    run_cli("-s", "en", "--only-source", "--trainpref", ptb_corpus / "train", "--parser", "given",
            "--destdir", dest)
    assert len(load(dest / "train.en-None.en")) == 120
    assert len(load(dest / "train.en-None.en.spans")) == 120
    assert not list(dest.glob("*.xx*")) and not (dest / "bpe.codes").exists()
    assert (dest / "dict.en.labels.txt").exists()


# ---------------------------------------------------------------- bad input: clear errors, nothing lost

def _corpus(tmp_path, src_lines, tgt_lines, name="train"):
    (tmp_path / f"{name}.en").write_bytes(b"".join(l + b"\n" for l in src_lines))
    (tmp_path / f"{name}.xx").write_bytes(b"".join(l + b"\n" for l in tgt_lines))
    return tmp_path / name


GOOD = [b"(S (NP (DT The) (NN dog)) (VP (VBD barked)) (. .))",
        b"(S (NP (PRP It)) (VP (VBD rained)) (. .))",
        b"(S (NP (DT A) (NN cat)) (VP (VBD sat)))"]
TGT = [b"der hund bellte .", b"es regnete .", b"eine katze sass"]


@pytest.mark.parametrize("case,src,tgt,where,reason", [
    ("empty target", GOOD, [TGT[0], b"   ", TGT[2]], "train.xx:2", "empty_line"),
    ("empty source", [GOOD[0], b"", GOOD[2]], TGT, "train.en:2", "empty_line"),
    ("malformed", [GOOD[0], b"(S (NP (PRP It)) (VP (VBD rained)", GOOD[2]], TGT, "train.en:2", "malformed_tree"),
    ("control char", GOOD, [TGT[0], b"es reg\x07nete .", TGT[2]], "train.xx:2", "unknown_character"),
    ("bad utf-8", GOOD, [TGT[0], b"es r\xe9gnete .", TGT[2]], "train.xx:2", "bad_encoding"),
    # U+FFFD, the replacement character a lossy decode leaves: valid UTF-8, but the text is already damaged
    ("replacement char", GOOD, [TGT[0], "es r\ufffdgnete .".encode(), TGT[2]], "train.xx:2", "unknown_character"),
])
def test_bad_line_fails_or_is_skipped(tmp_path, case, src, tgt, where, reason):
    pref = _corpus(tmp_path, src, tgt)
    proc = run_cli(*given_args_simple(pref, tmp_path / "fail"), ok=False)
    assert proc.returncode == 1
    assert where in proc.stderr and reason in proc.stderr
    assert not list((tmp_path / "fail").glob("*.bin"))  # nothing half-written

    run_cli(*given_args_simple(pref, tmp_path / "skip"), "--on-error", "skip")
    report = json.loads((tmp_path / "skip" / "preprocess.json").read_text())["splits"]["train"]
    assert report["lines"] == 3 and report["sentences"] == 2 and report["skipped"] == 1
    (entry,) = report["skipped_lines"]
    assert entry["line"] == 2 and entry["reason"] == reason and entry["file"].endswith(where.split(":")[0])
    # the pair is gone on both sides and the rest stays aligned
    tgt_dict = Dictionary.load(str(tmp_path / "skip" / "dict.xx.txt"))
    src_dict = Dictionary.load(str(tmp_path / "skip" / "dict.en.txt"))
    got_tgt = [tgt_dict.string(torch.tensor(x)) for x in load(tmp_path / "skip" / "train.en-xx.xx")]
    got_src = [src_dict.string(torch.tensor(x)) for x in load(tmp_path / "skip" / "train.en-xx.en")]
    assert got_tgt == ["der hund bellte .", "eine katze sass"]
    assert got_src == ["The dog barked .", "A cat sat"]
    assert (tmp_path / "skip" / "train.en.trees").read_text().count("\n") == 3  # aligned with the input


def given_args_simple(pref, dest):
    return ["-s", "en", "-t", "xx", "--trainpref", pref, "--parser", "given", "--destdir", dest]


def test_unequal_line_counts_is_always_an_error(tmp_path):
    pref = _corpus(tmp_path, GOOD, TGT[:2])
    proc = run_cli(*given_args_simple(pref, tmp_path / "b"), "--on-error", "skip", ok=False)
    assert proc.returncode == 1
    assert "train.xx:3: file ends after 2 lines" in proc.stderr and "has 3 lines" in proc.stderr


def test_leaves_disagreeing_with_source_tokens(tmp_path):
    trees = tmp_path / "trees"
    trees.mkdir()
    (trees / "train.en.trees").write_bytes(b"\n".join(GOOD) + b"\n")
    pref = _corpus(tmp_path, [b"The dog barked.", b"It snowed.", b"A cat sat"], TGT)
    args = ["-s", "en", "-t", "xx", "--trainpref", pref, "--parser", "given", "--trees-dir", trees]
    proc = run_cli(*args, "--destdir", tmp_path / "f", ok=False)
    assert proc.returncode == 1
    assert "train.en.trees:2" in proc.stderr and "'rained'" in proc.stderr and "'snowed'" in proc.stderr
    run_cli(*args, "--destdir", tmp_path / "s", "--on-error", "skip")
    report = json.loads((tmp_path / "s" / "preprocess.json").read_text())["splits"]["train"]
    assert report["skipped_by_reason"] == {"leaves_mismatch": 1} and report["sentences"] == 2


def test_too_long_for_max_positions(tmp_path):
    pref = _corpus(tmp_path, GOOD + [GOOD[1]], TGT + [b"es regnete heute sehr ."])
    # leaves + nodes: 4 + 2 = 6, 3 + 1 = 4, 3 + 2 = 5, 4; targets + EOS: 5, 4, 4, 6
    proc = run_cli(*given_args_simple(pref, tmp_path / "f"), "--max-positions", "4", ok=False)
    assert "train.en:1" in proc.stderr and "--max-positions 4" in proc.stderr
    run_cli(*given_args_simple(pref, tmp_path / "s"), "--max-positions", "4", "--on-error", "skip")
    report = json.loads((tmp_path / "s" / "preprocess.json").read_text())["splits"]["train"]
    assert report["skipped_by_reason"] == {"too_long": 3} and report["sentences"] == 1
    # every skipped line is listed with its file, line and message
    got = [(e["file"].rsplit("/", 1)[-1], e["line"], e["reason"], e["message"]) for e in report["skipped_lines"]]
    assert got == [("train.en", 1, "too_long", "source has 6 leaves + nodes > --max-positions 4"),
                   ("train.en", 3, "too_long", "source has 5 leaves + nodes > --max-positions 4"),
                   ("train.xx", 4, "too_long", "target has 6 tokens (with EOS) > --max-positions 4")]
    tgt_dict = Dictionary.load(str(tmp_path / "s" / "dict.xx.txt"))
    assert [tgt_dict.string(torch.tensor(x)) for x in load(tmp_path / "s" / "train.en-xx.xx")] == ["es regnete ."]


def test_too_long_names_both_fixes_and_its_trees_line_is_empty(tmp_path):
    """Issue 50 item 8: the refusal names --max-positions and --on-error skip; with skip, a skipped line's entry in
    train.en.trees is empty, as for every skipped line (docs/preprocessing.md), the kept lines' trees as given."""
    good = _corpus(tmp_path, GOOD, TGT, name="good")
    # leaves + nodes: 6, 4, 5; target + EOS: 5, 4, 4
    proc = run_cli(*given_args_simple(good, tmp_path / "f"), "--max-positions", "5", ok=False)
    assert proc.returncode == 1
    assert ("good.en:1: source has 6 leaves + nodes > --max-positions 5: raise --max-positions, or give --on-error "
            "skip to leave such lines out (each one listed in preprocess.json) [too_long]") in proc.stderr
    proc = run_cli(*given_args_simple(_corpus(tmp_path, [GOOD[1]], TGT[:1], name="t"), tmp_path / "t"),
                   "--max-positions", "4", ok=False)  # the target's message too
    assert "t.xx:1: target has 5 tokens (with EOS) > --max-positions 4: raise --max-positions" in proc.stderr
    pref = _corpus(tmp_path, GOOD + [b"(S (NP broken"], TGT + [b"kaputt"])
    run_cli(*given_args_simple(pref, tmp_path / "s"), "--max-positions", "5", "--on-error", "skip",
            "--shard-size", "2")
    report = json.loads((tmp_path / "s" / "preprocess.json").read_text())["splits"]["train"]
    assert report["skipped_by_reason"] == {"too_long": 1, "malformed_tree": 1}
    assert [e["message"] for e in report["skipped_lines"]][0] == "source has 6 leaves + nodes > --max-positions 5"
    trees = (tmp_path / "s" / "train.en.trees").read_text().split("\n")
    assert trees == ["", GOOD[1].decode(), GOOD[2].decode(), "", ""]  # 4 lines (the last skipped in stage 1)


@pytest.mark.parametrize("workers", ["1", "2"])
def test_parser_that_cannot_load_is_an_error_not_a_hang(tmp_path, workers):
    """A pool initializer that raises makes multiprocessing start workers forever: the error must reach the
    CLI (exit 1, the checkpoint named) with 1 worker and with 2 workers over 2 shards."""
    pref = _corpus(tmp_path, [b"The dog barked .", b"It rained .", b"A cat sat"], TGT)
    missing = tmp_path / "missing.pt"
    proc = subprocess.run([str(BIN / "fairseq-tree-preprocess"), "-s", "en", "-t", "xx", "--trainpref", str(pref),
                           "--parser", "lal", "--parser-model", str(missing), "--workers", workers,
                           "--shard-size", "2", "--destdir", str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert "parse: the worker could not start" in proc.stderr and str(missing) in proc.stderr


def test_parser_failure_is_localised():
    from fairseq_tree.parsers import ParseError
    from fairseq_tree.preprocess.stages import _run_parser

    class OneBadSentence:
        """A parser that fails on sentences containing 'BOOM' (our interface, not a stand-in for stanza)."""
        calls = 0

        def parse(self, batch):
            OneBadSentence.calls += 1
            for i, s in enumerate(batch):
                if "BOOM" in s:
                    raise ParseError(i, "cannot parse")
            return [f"(X {' '.join(s)})" for s in batch]

    sents = [["a"], ["b", "BOOM"], ["c"], ["BOOM"], ["d"]]
    out = _run_parser(OneBadSentence(), sents, batch_size=4)
    assert [isinstance(o, ParseError) for o in out] == [False, True, False, True, False]
    assert out[0] == "(X a)" and out[2] == "(X c)" and out[4] == "(X d)"


# ---------------------------------------------------------------- tokenization

def test_ptb_tokenization():
    tok = Tokenizer("moses", "en", ptb=True)
    assert tok('He said "I can\'t go (today)" -- isn\'t it?') == [
        "He", "said", "``", "I", "ca", "n't", "go", "(", "today", ")", "''", "--", "is", "n't", "it", "?"]
    assert ptb_fixups(["won", "'t"]) == ["wo", "n't"]
    assert Tokenizer("moses", "de")("gut-gemacht (ja)") == ["gut", "@-@", "gemacht", "(", "ja", ")"]
    with pytest.raises(InputError, match="U\\+0007 at column 3"):
        check_line("ab\x07c")
    assert check_line(" tab\tinside ") == "tab\tinside"


# ---------------------------------------------------------------- stanza, for real (tiny models trained offline)

def test_stanza_pipeline_then_given_reuses_its_trees(tiny_stanza_models, tmp_path):
    """--parser stanza on 150 Multi30k pairs (2 workers), then --parser given --trees-dir on its output:
    the same datasets, and the stanza trees' leaves are the PTB-tokenized source words."""
    corpus = tmp_path / "raw"
    corpus.mkdir()
    for split, lo, hi in (("train", 0, 120), ("valid", 120, 150)):
        for lang in ("en", "de"):
            lines = (M30K / f"train.{lang}").read_text(encoding="utf-8").splitlines()[lo:hi]
            (corpus / f"{split}.{lang}").write_text("\n".join(lines) + "\n", encoding="utf-8")
    common = ["-s", "en", "-t", "de", "--trainpref", corpus / "train", "--validpref", corpus / "valid",
              "--joined-dictionary", "--workers", "2", "--shard-size", "40"]
    run_cli(*common, "--parser", "stanza", "--stanza-model-dir", tiny_stanza_models, "--bpe-merges", "200",
            "--destdir", tmp_path / "stanza")
    report = json.loads((tmp_path / "stanza" / "preprocess.json").read_text())
    assert report["splits"]["train"]["sentences"] == 120 and report["splits"]["valid"]["sentences"] == 30
    assert report["throughput"]["parse"]["sentences_per_s"] > 0
    tok = Tokenizer("moses", "en", ptb=True)
    src = (corpus / "valid.en").read_text(encoding="utf-8").splitlines()
    trees = list(read_tree_lines(str(tmp_path / "stanza" / "valid.en.trees")))
    assert [t.words for t in trees] == [tok(x) for x in src]
    assert all(t.labels and t.spans[-1] == (0, len(t.words)) for t in trees if len(t.words) > 1)

    run_cli(*common, "--parser", "given", "--trees-dir", tmp_path / "stanza", "--bpe-codes",
            tmp_path / "stanza" / "bpe.codes", "--destdir", tmp_path / "given")
    for f in sorted((tmp_path / "stanza").iterdir()):
        if f.suffix in (".bin", ".idx", ".txt", ".trees"):
            assert f.read_bytes() == (tmp_path / "given" / f.name).read_bytes(), f.name


# ---------------------------------------------------------------- --task classification: bad input

SST_GOOD = ["(3 (2 The) (4 (3 good) (2 film)))", "(1 (2 A) (1 (1 dull) (2 plot)))", "(2 (2 It) (2 (2 is) (2 .)))"]
PARSED = [g.decode() for g in GOOD]


def classification_cli(*args):
    from fairseq_tree.cli.preprocess import cli_main

    return cli_main(["--task", "classification", *map(str, args)])


@pytest.mark.parametrize("src, labels, where, message", [
    (["(3 (2 The) (4 (3 good) (2 film)))", "((2 The) (2 Rock))", SST_GOOD[2]], None, "train.txt:2",
     "the node over 'The Rock' has no class label"),
    (["(3 (2 The) (4 (3 good) (2 film)))", SST_GOOD[1], "(2 (2 It) (5 (2 is) (2 .)))"], None, "train.txt:3",
     "label '5' of the node over 'is .' is not a class (0, 1, 2, 3, 4) [bad_labelled_tree]"),
    (["(3 (2 The) (4 (3 good) film))", SST_GOOD[1], SST_GOOD[2]], None, "train.txt:1",
     "word 'film' has no class label"),
    (PARSED, ["4", "9", "0"], "train.label:2", "label '9' is not a class (0, 1, 2, 3, 4) [bad_label]"),
    (PARSED, ["4", " ", "0"], "train.label:2", "empty line [empty_line]"),
])
def test_classification_bad_lines_fail_or_are_skipped(tmp_path, capsys, src, labels, where, message):
    suffix = "txt" if labels is None else "en"
    (tmp_path / f"train.{suffix}").write_text("\n".join(src) + "\n", encoding="utf-8")
    args = ["-s", suffix, "--trainpref", tmp_path / "train", "--labels", "nodes" if labels is None else "file"]
    if labels is not None:
        (tmp_path / "train.label").write_text("\n".join(labels) + "\n")
        args += ["--parser", "given"]
    assert classification_cli(*args, "--destdir", tmp_path / "fail") == 1
    assert f"{tmp_path / where}: {message}" in capsys.readouterr().err
    assert not list((tmp_path / "fail").glob("*.bin"))

    assert classification_cli(*args, "--destdir", tmp_path / "skip", "--on-error", "skip") == 0
    report = json.loads((tmp_path / "skip" / "preprocess.json").read_text())["splits"]["train"]
    assert (report["lines"], report["sentences"], report["skipped"]) == (3, 2, 1)
    (entry,) = report["skipped_lines"]
    assert f"{entry['file']}:{entry['line']}" == str(tmp_path / where)
    assert len(load(tmp_path / "skip" / f"train.{suffix}-None.{suffix}.target")) == 2


def test_classification_label_file_of_another_length(tmp_path, capsys):
    (tmp_path / "train.en").write_text("\n".join(PARSED) + "\n")
    (tmp_path / "train.label").write_text("4\n0\n")
    assert classification_cli("-s", "en", "--trainpref", tmp_path / "train", "--parser", "given", "--on-error", "skip",
                              "--destdir", tmp_path / "b") == 1
    assert f"{tmp_path / 'train.label'}:3: file ends after 2 lines, but {tmp_path / 'train.en'} has 3 lines" \
        in capsys.readouterr().err


def test_classification_labels_from_a_file_with_syntactic_node_inputs(tmp_path):
    """--labels file: the sentence's class on the root only; --node-inputs syntax: the parser's labels as inputs."""
    (tmp_path / "train.en").write_text("\n".join(PARSED) + "\n")
    (tmp_path / "train.label").write_text("4\n0\n2\n")
    assert classification_cli("-s", "en", "--trainpref", tmp_path / "train", "--parser", "given", "--node-inputs",
                              "syntax", "--binary", "--destdir", tmp_path / "b") == 0
    labels = Dictionary.load(str(tmp_path / "b" / "dict.en.labels.txt"))
    p = tmp_path / "b" / "train.en-None.en"
    # "A cat sat" (class 2, neutral) is dropped by --binary; "The dog barked ." (4) and "It rained ." (0) stay
    assert [[labels[i] for i in row] for row in load(f"{p}.nodes")] == [["NP", "S"], ["S"]]
    assert load(f"{p}.target") == [[1], [0]]
    assert load(f"{p}.node_target") == [[-1, 1], [0]] and load(f"{p}.leaf_target") == [[-1] * 4, [-1] * 3]
    report = json.loads((tmp_path / "b" / "preprocess.json").read_text())["splits"]["train"]
    assert report["filtered_lines"] == [3] and report["sentences_per_class"] == {"negative": 1, "positive": 1}


@pytest.mark.parametrize("args, message", [
    (["--labels", "nodes", "--node-inputs", "syntax"], "--node-inputs syntax needs syntactic trees"),
    (["--binary", "--num-classes", "3"], "the binary (SST-2) view maps 5 classes, not 3"),
    (["--labels", "nodes", "--parser", "stanza"], "--labels nodes reads the trees from the SRC files"),
])
def test_classification_flags_that_do_not_fit(tmp_path, capsys, args, message):
    with pytest.raises(SystemExit):
        classification_cli("-s", "txt", "--trainpref", tmp_path / "train", *args)
    assert message in capsys.readouterr().err


def test_classification_of_raw_text_parsed_by_stanza(tiny_stanza_models, tmp_path):
    """--labels file on raw text parsed by stanza (sentence targets only); a tree classifier trained on it classifies
    raw text parsed on the fly (fairseq-tree-classify) exactly as it classifies the pipeline's trees of that text."""
    from fairseq_tree.cli.classify import main as classify
    from fairseq_tree.trees import labelled_tree_from_brackets

    lines = (SHARED / "data" / "sst" / "train.txt").read_text(encoding="utf-8").splitlines()[:60]
    text = [" ".join(labelled_tree_from_brackets(t, "01234").words) for t in lines]
    corpus = tmp_path / "raw"
    corpus.mkdir()
    for split, lo, hi in (("train", 0, 48), ("valid", 48, 60)):
        (corpus / f"{split}.en").write_text("\n".join(text[lo:hi]) + "\n", encoding="utf-8")
        (corpus / f"{split}.label").write_text("".join(t[1] + "\n" for t in lines[lo:hi]))
    dest = tmp_path / "bin"
    assert classification_cli("-s", "en", "--trainpref", corpus / "train", "--validpref", corpus / "valid",
                              "--parser", "stanza", "--stanza-model-dir", tiny_stanza_models, "--destdir", dest) == 0
    report = json.loads((dest / "preprocess.json").read_text())["splits"]
    assert report["train"]["sentences"] == 48 and report["valid"]["sentences"] == 12
    assert report["train"]["labelled_nodes"] + report["train"]["labelled_leaves"] == 48  # the roots only

    run_command(BIN / "fairseq-train", dest, "--user-dir", REPO / "fairseq_tree", "--task", "tree_classification",
                "--arch", "tree_classifier_tiny", "--optimizer", "adam", "--lr", "1e-3", "--max-update", "3",
                "--max-tokens", "2048", "--cpu", "--save-dir", tmp_path / "ckpt", "--num-workers", "0",
                "--no-epoch-checkpoints")
    ckpt = tmp_path / "ckpt" / "checkpoint_last.pt"
    proc = run_command(BIN / "fairseq-tree-classify", "--path", ckpt, "--input", corpus / "valid.en", "--labels",
                       corpus / "valid.label", "--stanza-model-dir", tiny_stanza_models)
    scores = classify(["--path", str(ckpt), "--input", str(dest / "valid.en.trees"), "--labels",
                       str(corpus / "valid.label"), "--output", str(tmp_path / "pred")])
    assert proc.stdout.splitlines()[:-1] == (tmp_path / "pred").read_text().splitlines()
    assert json.loads(proc.stdout.splitlines()[-1]) == scores and scores["sentences"] == 12
