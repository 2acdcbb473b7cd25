"""End to end through the real CLIs: binarize 50 trees, fairseq-train lal_parser_tiny, fairseq-tree-parse
(fairseq-tree-parse) reaches EVALB F1 > 95 on the training trees; the ``lal`` parser
backend of the preprocessing pipeline parses raw tokens with the checkpoint."""

import json

import pytest
from conftest import BIN, REPO, SHARED
from conftest import run_command as _run

pytestmark = pytest.mark.slow(minutes=1.5)  # measured: the file on one xdist worker (2026-11-25)

PTB = SHARED / "data" / "ptb_sample"

@pytest.fixture(scope="module")
def fifty(tmp_path_factory):
    """The first 50 training trees of 5-20 words (short ones keep the overfit run under a minute), with their
    aligned dependency trees."""
    if not (PTB / "train.mrg").is_file():
        pytest.skip(f"{PTB} not found")
    return treebank_slice(tmp_path_factory.mktemp("lal50"), 50)


def treebank_slice(d, n):
    """``d/t.mrg`` + ``d/t.conllu``: the first ``n`` PTB-sample training trees of 5-20 words and their
    dependency trees, binarized into ``d/bin`` (train = valid); returns ``d``."""
    mrg = (PTB / "train.mrg").read_text(encoding="utf-8").splitlines()
    blocks = [b for b in (PTB / "train.conllu").read_text(encoding="utf-8").split("\n\n") if b.strip()]
    assert len(mrg) == len(blocks)
    sel = [i for i, b in enumerate(blocks)
           if 5 <= sum(1 for line in b.splitlines() if not line.startswith("#")) <= 20][:n]
    (d / "t.mrg").write_text("\n".join(mrg[i] for i in sel) + "\n", encoding="utf-8")
    (d / "t.conllu").write_text("\n\n".join(blocks[i] for i in sel) + "\n\n", encoding="utf-8")
    _run(BIN / "python", "-m", "fairseq_tree.data.parsing_data", "--destdir", d / "bin", "--train", d / "t.mrg",
         "--train-dep", d / "t.conllu", "--valid", d / "t.mrg", "--valid-dep", d / "t.conllu")
    return d


def _train(d, save, epochs, *extra):
    _run(BIN / "fairseq-train", d / "bin", "--user-dir", REPO / "fairseq_tree", "--task", "constituency_parsing",
         "--arch", "lal_parser_tiny", "--criterion", "span_hinge_dependency", "--optimizer", "adam", "--lr", "4e-3",
         "--clip-norm", "5", "--batch-size", "10", "--max-epoch", str(epochs), "--cpu", "--seed", "1",
         "--save-dir", save, "--no-epoch-checkpoints", "--disable-validation", "--save-interval", str(epochs),
         "--log-format", "simple", *extra)
    return save / "checkpoint_last.pt"


@pytest.fixture(scope="module")
def overfit_ckpt(fifty):
    return _train(fifty, fifty / "ckpt", 150)


def test_overfit_50_trees_f1_above_95(fifty, overfit_ckpt):
    out = _run(BIN / "python", "-m", "fairseq_tree.cli.parse", "--path", overfit_ckpt,
               "--input", fifty / "t.mrg", "--gold", fifty / "t.mrg", "--gold-dep", fifty / "t.conllu",
               "--output", fifty / "out" / "t", "--plot", "--plot-sentence", "2",
               "--dump-attention", fifty / "out" / "att.jsonl", "--dump-sentences", "3")
    scores = json.loads(out.stdout.strip().splitlines()[-1])
    assert scores["sentences"] == 50
    assert scores["f1"] > 95.0, scores
    assert scores["uas"] > 85.0, scores
    trees = (fifty / "out" / "t.trees").read_text(encoding="utf-8").splitlines()
    assert len(trees) == 50
    conllu = (fifty / "out" / "t.conllu").read_text(encoding="utf-8")
    assert conllu.count("# sent_id") == 50
    assert (fifty / "out" / "t.attention.png").stat().st_size > 1000
    # --dump-attention: the first 3 sentences' label attention [heads, BOS + words + EOS], a distribution per head
    items = [json.loads(line) for line in (fifty / "out" / "att.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [it["tree"] for it in items] == trees[:3] and scores["attention"].endswith("att.jsonl")
    for it in items:
        att, n = it["maps"]["label attention"], len(it["words"])
        assert it["cols"] == ["<s>"] + it["words"] + ["</s>"] and len(it["rows"]) == len(att) > 1
        assert all(len(r) == n + 2 and abs(sum(r) - 1) < 0.01 for r in att)
    from fairseq_tree.view.records import attention_records

    recs, _ = attention_records(str(fifty / "out" / "att.jsonl"))
    assert [r["att"][0]["rows"] for r in recs] == [it["rows"] for it in items]
    # the hub interface parses as the CLI does (words and tags of the input trees)
    from fairseq_tree.cli.parse import read_input
    from fairseq_tree.models.lal_parser import LALParserModel

    words, tags, _ = read_input(str(fifty / "t.mrg"))
    hub = LALParserModel.from_pretrained(str(overfit_ckpt.parent), overfit_ckpt.name)
    parses = hub.parse(words, tags)
    assert [p.to_brackets(one_word=True) for p in parses] == trees
    assert [p.heads for p in parses] == [[int(r.split("\t")[6]) for r in block.splitlines() if r[:1].isdigit()]
                                         for block in conllu.strip().split("\n\n")]


@pytest.fixture(scope="module")
def notags_ckpt(fifty):
    """A --no-pos-tags, tied-heads, no-PWFF model (the paper's interpretable setting)."""
    return _train(fifty, fifty / "ckpt_notags", 3, "--no-pos-tags", "--lal-tie-heads", "--lal-no-pwff")


def test_lal_backend_parses_raw_tokens(fifty, notags_ckpt):
    """The model as a pipeline backend: predicted tags, one line per tree, ParseError names the sentence."""
    from fairseq_tree.parsers.lal_parser import LALBackend
    from fairseq_tree.trees import read_parse_trees, tree_from_brackets

    backend = LALBackend.from_options(model=str(notags_ckpt), batch_size=7)
    gold = list(read_parse_trees(str(fifty / "t.mrg")))[:12]
    sents = [[{"(": "-LRB-", ")": "-RRB-"}.get(w, w) for w in t.words] for t in gold] + [["Unseen", "wordz", "."]]
    out = backend.parse(sents)
    assert len(out) == len(sents)
    for line, t in zip(out, gold):
        tree = tree_from_brackets(line)
        assert tree.words == t.words and "\n" not in line
        assert all(tag and tag != "X" for tag in tree.tags)  # predicted POS tags
    from fairseq_tree.parsers import ParseError

    with pytest.raises(ParseError) as e:
        backend.parse([["a"], []])
    assert e.value.index == 1


def test_preprocess_with_parser_lal(fifty, notags_ckpt, tmp_path):
    """fairseq-tree-preprocess --parser lal (2 worker processes, each loading the checkpoint) writes the trees the
    backend gives when called directly on the same tokens in one batch of another size."""
    from fairseq_tree.parsers.lal_parser import LALBackend
    from fairseq_tree.text.tokenize import Tokenizer
    from fairseq_tree.trees import read_tree_lines

    m30k = SHARED / "data" / "multi30k"
    for lang in ("en", "de"):
        lines = (m30k / f"train.{lang}").read_text(encoding="utf-8").splitlines()[:40]
        (tmp_path / f"train.{lang}").write_text("\n".join(lines) + "\n", encoding="utf-8")
    _run(BIN / "fairseq-tree-preprocess", "-s", "en", "-t", "de", "--trainpref", tmp_path / "train",
         "--destdir", tmp_path / "bin", "--joined-dictionary", "--workers", "2", "--shard-size", "15",
         "--parser", "lal", "--parser-model", notags_ckpt, "--parse-batch-size", "4", "--bpe-merges", "100")
    report = json.loads((tmp_path / "bin" / "preprocess.json").read_text())
    assert report["splits"]["train"]["sentences"] == 40
    trees = (tmp_path / "bin" / "train.en.trees").read_text(encoding="utf-8").splitlines()
    tok = Tokenizer("moses", "en", ptb=True)
    words = [tok(x) for x in (tmp_path / "train.en").read_text(encoding="utf-8").splitlines()]
    assert [t.words for t in read_tree_lines(str(tmp_path / "bin" / "train.en.trees"))] == words
    direct = LALBackend.from_options(model=str(notags_ckpt), batch_size=64).parse(words)
    assert trees == [" ".join(b.split()) for b in direct]
    for ext in ("bin", "idx"):
        assert (tmp_path / "bin" / f"train.en-de.en.spans.{ext}").stat().st_size > 0
    with pytest.raises(AssertionError, match="--parser-model"):
        _run(BIN / "fairseq-tree-preprocess", "-s", "en", "-t", "de", "--trainpref", tmp_path / "train",
             "--destdir", tmp_path / "bin2", "--parser", "lal", "--bpe-merges", "100")
