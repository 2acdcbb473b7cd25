"""The trees package reproduces, byte for byte, what the duplicate implementations it replaced produced on the
PTB sample: canonical trees, the EVALB view (``Tree.labeled_spans(one_word=True)``, once a ``ParseTree`` type), the
unsupervised gold view (``GoldSentence``), and
the three CoNLL-U and two bracket writers. ``data/trees_views.json`` holds SHA-256 digests of those outputs made
by the code *before* the refactor (commit 845ba3b), so these tests compare against it, not against themselves."""

import hashlib
import json
from pathlib import Path

import pytest
from conftest import SHARED

PTB = SHARED / "data" / "ptb_sample"
EXPECTED = Path(__file__).resolve().parents[1] / "data" / "trees_views.json"
needs_ptb = pytest.mark.skipif(not (PTB / "valid.mrg").exists(), reason="no shared PTB sample")


def _sha(text) -> str:
    return hashlib.sha256(text.encode("utf-8") if isinstance(text, str) else text).hexdigest()


def canonical_views(split):
    from fairseq_tree.trees import read_treebank, to_brackets, tree_to_distances

    out = {}
    for unary in ("lowest", "highest", "join"):
        trees = [t for _, t in read_treebank(str(PTB / f"{split}.mrg"), unary=unary)]
        out[f"brackets_{unary}"] = _sha("\n".join(to_brackets(t) for t in trees))
        out[f"repr_{unary}"] = _sha(repr([(t.words, t.tags, t.labels, t.spans) for t in trees]))
    out["distances"] = _sha(repr([tree_to_distances(t.spans, len(t.words)) for t in trees if len(t.words) > 1]))
    return out


def parse_tree_views(split):
    from fairseq_tree.trees import read_parse_trees

    trees = list(read_parse_trees(str(PTB / f"{split}.mrg")))
    return {"parse_trees": _sha(repr([(t.words, t.tags, t.labeled_spans(one_word=True)) for t in trees])),
            "parse_brackets": _sha("\n".join(t.to_brackets(one_word=True) for t in trees))}


def gold_views(split, tmp):
    from fairseq_tree.evaluation.unsupervised import read_gold, write_brackets, write_conllu

    gold = read_gold(str(PTB / f"{split}.mrg"), str(PTB / f"{split}.conllu"))
    fields = [(g.words, g.raw_words, g.tags, g.spans, g.labeled, g.heads, g.line, g.index, g.positions, g.tokens)
              for g in gold]
    write_conllu(str(tmp / "u.conllu"), [g.raw_words for g in gold], [g.heads for g in gold], [g.tags for g in gold])
    write_brackets(str(tmp / "u.txt"), [g.spans for g in gold], [g.raw_words for g in gold])
    write_brackets(str(tmp / "l.txt"), [g.spans for g in gold], [g.raw_words for g in gold], "X", "W")
    return {"gold": _sha(repr(fields)), "unsupervised_conllu": _sha((tmp / "u.conllu").read_bytes()),
            "induced_brackets": _sha((tmp / "u.txt").read_bytes()),
            "induced_brackets_leaf": _sha((tmp / "l.txt").read_bytes())}


def parse_cli_conllu(split, tmp):
    from fairseq_tree.cli import parse as parse_cli
    from fairseq_tree.trees import read_conllu

    parse_cli.write_conllu(list(read_conllu(str(PTB / f"{split}.conllu"))), str(tmp / "p.conllu"))
    return {"parse_cli_conllu": _sha((tmp / "p.conllu").read_bytes())}


def stanza_conllu(split, tmp):
    pytest.importorskip("stanza")
    import collections

    from fairseq_tree.stanza_train.data import read_trees, write_conllu

    trees = read_trees(PTB / f"{split}.mrg", collections.Counter())
    write_conllu(trees, tmp / "s.conllu")
    return {"stanza_conllu": _sha((tmp / "s.conllu").read_bytes())}


VIEWS = {"canonical": lambda split, tmp: canonical_views(split),
         "parse_tree": lambda split, tmp: parse_tree_views(split),
         "gold": gold_views, "parse_cli": parse_cli_conllu, "stanza": stanza_conllu}


def all_views(tmp: Path) -> dict:
    """-> {view: {split: {name: sha256}}}; how ``data/trees_views.json`` was made (with the old code)."""
    return {view: {split: fn(split, tmp) for split in ("train", "valid")} for view, fn in VIEWS.items()}


@needs_ptb
@pytest.mark.parametrize("view", sorted(VIEWS))
@pytest.mark.parametrize("split", ["train", "valid"])
def test_views_match_pre_refactor_outputs(view, split, tmp_path):
    expected = json.loads(EXPECTED.read_text())[view][split]
    assert VIEWS[view](split, tmp_path) == expected


if __name__ == "__main__":  # python tests/test_trees_views.py OUT.json: regenerate (only from the old code!)
    import sys
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        Path(sys.argv[1]).write_text(json.dumps(all_views(Path(d)), indent=1, sort_keys=True) + "\n")
