"""The stanza backend: offline training (fairseq_tree/stanza_train/) and parsing
(fairseq_tree/parsers/stanza_parser.py).

Real stanza everywhere (tiny models trained once per session by the ``tiny_stanza_models`` fixture)."""

import json
import pickle
import re
import socket

import pytest

from fairseq_tree.parsers import ParseError
from fairseq_tree.parsers.stanza_parser import StanzaParser, resolve_stanza_models, tree_to_brackets

SENTENCES = [
    "The company said it expects profits to rise next year .".split(),
    "Shares of Acme Corp. ( the parent ) fell 5 % on Friday .".split(),
    ["Stocks", "rallied", "."],
]


@pytest.fixture(scope="module")
def parser(tiny_stanza_models):
    return StanzaParser(model_dir=str(tiny_stanza_models))


def leaves(brackets):
    """Words of a one-line PTB tree: the second item of every innermost bracket."""
    return re.findall(r"\([^\s()]+ ([^\s()]+)\)", brackets)


def balanced(s):
    depth = 0
    for c in s:
        depth += {"(": 1, ")": -1}.get(c, 0)
        if depth < 0:
            return False
    return depth == 0


# ---------------------------------------------------------------- training


def test_tiny_training_output(tiny_stanza_models):
    out = tiny_stanza_models
    for name in ("pos.pt", "constituency.pt", "pretrain.pt", "resources.json", "model_info.json"):
        assert (out / name).is_file() and (out / name).stat().st_size > 0, name
    assert not list(out.glob("*checkpoint*"))
    assert json.loads((out / "resources.json").read_text()) == {"en": {"lang_name": "English"}}
    info = json.loads((out / "model_info.json").read_text())
    assert info["size"] == "tiny" and info["train_trees"] == 200
    assert 0 < info["dev_trees"] == 30 - info["skipped_trees"].get("dev_dropped_unseen_label", 0)
    assert [p.rsplit("/", 1)[-1] for p in info["dev_files"]] == ["valid.mrg"]
    assert info["vectors"]["method"] == "ppmi_svd"
    assert "--retag_method" in info["constituency_args"] and "--no_retag" not in info["constituency_args"]
    e2e = info["dev_scores"]["end_to_end"]
    assert e2e["sentences"] == info["dev_trees"] and 0.0 <= e2e["bracket_f1"] <= 1.0 and e2e["sentences_per_second"] > 0
    assert info["seconds"]["total"] > 0
    # the files the trainers read: parser trees with ROOT, no traces or function tags; CoNLL-U with UPOS + PTB XPOS
    mrg = (out / "data" / "train.mrg").read_text().splitlines()
    assert len(mrg) == 200 and all(line.startswith("(ROOT (") for line in mrg)
    assert "-NONE-" not in mrg[0] and "NP-SBJ" not in mrg[0]
    rows = [r.split("\t") for r in (out / "data" / "dev.conllu").read_text().splitlines() if r and r[0] != "#"]
    assert all(len(r) == 10 and r[3] != "_" and r[4] != "_" for r in rows)
    assert {r[6] for r in rows if r[0] == "1"} == {"0"}


# ---------------------------------------------------------------- parsing


def test_parse_real_sentences(parser):
    out = parser.parse(SENTENCES)
    assert len(out) == 3
    for toks, tree in zip(SENTENCES, out):
        assert "\n" not in tree and tree.startswith("(ROOT (") and balanced(tree)
        assert leaves(tree) == [{"(": "-LRB-", ")": "-RRB-"}.get(w, w) for w in toks]
    assert "-LRB- -LRB-)" in out[1] or " -LRB-)" in out[1]
    # read back by the plugin's tree reader: the leaves are the input tokens again
    from fairseq_tree.trees import tree_from_brackets

    assert [tree_from_brackets(t).words for t in out] == SENTENCES
    # escaped input brackets give the same tree; one call == sentence by sentence
    escaped = [["-LRB-" if w == "(" else "-RRB-" if w == ")" else w for w in SENTENCES[1]]]
    assert parser.parse(escaped) == [out[1]]
    assert [parser.parse([s])[0] for s in SENTENCES] == out
    assert parser.parse([]) == []


def test_parse_errors_name_the_sentence(parser):
    with pytest.raises(ParseError) as e:
        parser.parse([SENTENCES[0], []])
    assert e.value.index == 1
    with pytest.raises(ParseError) as e:
        parser.parse([SENTENCES[2], SENTENCES[0], ["two words", "x"]])
    assert e.value.index == 2 and "whitespace" in str(e.value)
    err = pickle.loads(pickle.dumps(e.value))  # crosses process boundaries
    assert isinstance(err, ParseError) and err.index == 2 and err.message == e.value.message


def test_tree_to_brackets_escapes():
    from stanza.models.constituency.parse_tree import Tree

    tree = Tree("ROOT", [Tree("NP", [Tree("-LRB-", [Tree("(")]), Tree("NN", [Tree("a(b")]),
                                     Tree("-RRB-", [Tree(")")])])])
    assert tree.leaf_labels() == ["(", "a(b", ")"]
    assert tree_to_brackets(tree) == "(ROOT (NP (-LRB- -LRB-) (NN a-LRB-b) (-RRB- -RRB-)))"


# ---------------------------------------------------------------- model resolution


def test_resolve_models(tiny_stanza_models, tmp_path, monkeypatch):
    d = tiny_stanza_models
    paths = resolve_stanza_models(model_dir=str(d))
    assert paths["source"] == "local" and paths["resources_dir"] == str(d)
    assert {paths[k] for k in ("pos_model", "constituency_model", "pretrain")} == \
        {str(d / "pos.pt"), str(d / "constituency.pt"), str(d / "pretrain.pt")}
    with pytest.raises(FileNotFoundError) as e:
        resolve_stanza_models(model_dir=str(tmp_path))
    assert str(tmp_path / "pos.pt") in str(e.value) and "fairseq-tree-train-stanza TREEBANK_DIR OUTDIR" in str(e.value)
    with pytest.raises(FileNotFoundError, match="constituency_model"):
        resolve_stanza_models(pos_model=str(d / "pos.pt"), pretrain=str(d / "pretrain.pt"))
    # nothing given: stanza's resources dir, and no download unless asked
    monkeypatch.setenv("STANZA_RESOURCES_DIR", str(tmp_path))
    with pytest.raises(FileNotFoundError) as e:
        resolve_stanza_models()
    assert str(tmp_path) in str(e.value) and "download=False" in str(e.value)
    monkeypatch.setenv("STANZA_RESOURCES_DIR", str(d))  # a trained OUTDIR used as the resources dir
    assert resolve_stanza_models()["pos_model"] == str(d / "pos.pt")
    with pytest.raises(FileNotFoundError):
        StanzaParser(model_dir=str(tmp_path))
    # stanza's own downloaded layout: resources.json names the default packages, <dir>/en/<processor>/<package>.pt
    res = tmp_path / "stanza_resources"
    for rel in ("en/pos/combined_charlm.pt", "en/constituency/ptb3-revised_charlm.pt"):
        (res / rel).parent.mkdir(parents=True)
        (res / rel).write_bytes(b"")
    (res / "resources.json").write_text(json.dumps({"en": {"lang_name": "English", "packages": {"default": {
        "pos": "combined_charlm", "constituency": "ptb3-revised_charlm"}}}}))
    monkeypatch.setenv("STANZA_RESOURCES_DIR", str(res))
    found = resolve_stanza_models()
    assert found["source"] == "stanza" and found["resources_dir"] == str(res)
    assert found["constituency_model"] == str(res / "en/constituency/ptb3-revised_charlm.pt")


# ---------------------------------------------------------------- offline + worker processes


def test_no_network_when_building_and_parsing(tiny_stanza_models, monkeypatch):
    attempts = []

    def refuse(*args, **kwargs):
        attempts.append(args)
        raise OSError("network disabled by the test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    d = tiny_stanza_models
    # explicit paths, no resources.json next to them: the parser writes its own
    p = StanzaParser.from_options(pos_model=str(d / "pos.pt"), constituency_model=str(d / "constituency.pt"),
                                  pretrain=str(d / "pretrain.pt"), batch_size=2, model_dir=None, download=False)
    assert p.paths["resources_dir"] is None and p.options["constituency_batch_size"] == 2
    out = p.parse(SENTENCES)
    assert [len(leaves(t)) for t in out] == [len(s) for s in SENTENCES]
    assert attempts == []


def test_parser_pickles_as_options(parser):
    clone = pickle.loads(pickle.dumps(parser))  # rebuilds the pipeline from the options (spawn workers)
    assert clone.paths == parser.paths and clone.parse(SENTENCES[:1]) == parser.parse(SENTENCES[:1])
    factory = pickle.loads(pickle.dumps(StanzaParser.from_options))
    assert factory == StanzaParser.from_options


# ---------------------------------------------------------------- treebank reading (no training)


def test_read_treebank_formats(tmp_path):
    import collections

    from fairseq_tree.stanza_train.data import read_trees, split_treebank, write_conllu

    body = "(S (NP-SBJ (-LRB- -LRB-) (NN a) (-RRB- -RRB-)) (VP (VBD b) (NP (-NONE- *T*-1))) (. .))"
    expect = "(ROOT (S (NP (-LRB- -LRB-) (NN a) (-RRB- -RRB-)) (VP (VBD b)) (. .)))"
    (tmp_path / "a.mrg").write_text(f"( {body} )\n(TOP {body})\n", encoding="utf-8")
    (tmp_path / "b.mrg").write_text(body.replace(" (VP", "\n   (VP") + f"\n(ROOT {body})\n( (NN x) )\n",
                                    encoding="utf-8")
    stats = collections.Counter()
    trees = read_trees(tmp_path / "a.mrg", stats) + read_trees(tmp_path / "b.mrg", stats)
    assert ["{}".format(t) for t in trees] == [expect] * 4 and stats["skipped_preterminal_root"] == 1
    assert trees[0].leaf_labels() == ["(", "a", ")", "b", "."]
    train, dev, info = split_treebank(tmp_path, "auto", collections.Counter())
    assert len(train) == 3 and len(dev) == 1 and "last 1 trees" in info["dev_split"]
    (tmp_path / "dev.mrg").write_text(body + "\n", encoding="utf-8")
    train, dev, info = split_treebank(tmp_path, "auto", collections.Counter())
    assert (len(train), len(dev)) == (4, 1) and info["dev_files"] == [str(tmp_path / "dev.mrg")]
    write_conllu(trees[:1], tmp_path / "x.conllu")
    rows = [r.split("\t") for r in (tmp_path / "x.conllu").read_text().splitlines() if r and r[0] != "#"]
    assert [(r[1], r[3], r[4], r[6]) for r in rows] == [
        ("(", "PUNCT", "-LRB-", "0"), ("a", "NOUN", "NN", "1"), (")", "PUNCT", "-RRB-", "1"),
        ("b", "VERB", "VBD", "1"), (".", "PUNCT", ".", "1")]


def test_language_is_a_parameter_passed_to_stanza(tiny_stanza_models):
    """The language reaches stanza's Pipeline (default en); local models parse under another language code."""
    assert StanzaParser(model_dir=str(tiny_stanza_models)).nlp.lang == "en"
    de = StanzaParser(model_dir=str(tiny_stanza_models), lang="de")
    assert de.nlp.lang == "de" and de.options["lang"] == "de"
    assert leaves(de.parse([SENTENCES[2]])[0]) == SENTENCES[2]
    assert pickle.loads(pickle.dumps(de)).nlp.lang == "de"  # a worker rebuilds it with its language


def test_training_scores_with_the_projects_evalb():
    """The dev F1 that selects stanza's checkpoints is the project's EVALB (COLLINS.prm, ROOT a wrapper): "The cat
    sat ." gold S(0,3) NP(0,2) VP(2,3) (the period deleted), predicted S(0,3) NP(0,1) VP(1,3): one of three
    brackets matched, P = R = F1 = 1/3."""
    from stanza.models.constituency import tree_reader

    from fairseq_tree.stanza_train.trainer import bracket_scores

    gold = tree_reader.read_trees("(ROOT (S (NP (DT The) (NN cat)) (VP (VBD sat)) (. .)))")[0]
    pred = tree_reader.read_trees("(ROOT (S (NP (DT The)) (VP (NN cat) (VBD sat)) (. .)))")[0]
    s = bracket_scores([(gold, pred), (gold, gold)])
    assert s["tree_f1"] == pytest.approx([1 / 3, 1.0]) and s["trees"] == 2
    assert s["precision"] == s["recall"] == s["f1"] == pytest.approx(4 / 6)
