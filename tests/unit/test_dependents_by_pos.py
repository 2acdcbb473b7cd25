"""scripts/diagnostics/dependents_by_pos.py: which POS the predicted heads make heads, and the gold determiner edges
predicted the gold way, reversed or neither, counted by hand on three sentences (one with punctuation the scorer
drops, predicted over its words only)."""

import json
from pathlib import Path

import pytest
from conftest import load_script

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def script():
    return load_script(ROOT / "scripts" / "diagnostics" / "dependents_by_pos.py")


def _conll(rows):
    """[[(word, tag, head)]] -> CoNLL-X text."""
    return "\n\n".join("\n".join(f"{i}\t{w}\t_\t{t}\t{t}\t_\t{h}\t_\t_\t_" for i, (w, t, h) in enumerate(s, 1))
                       for s in rows) + "\n\n"


def test_dependents_and_determiner_edges_by_hand(script, tmp_path, capsys):
    mrg = tmp_path / "gold.mrg"
    mrg.write_text("(S (NP (DT the) (NN cat)) (VP (VBD sat)))\n"
                   "(S (NP (DT a) (NN dog)) (VP (VBD ran)) (. .))\n"
                   "(S (NP (DT the) (NN man)) (VP (VBD ate)))\n"
                   "(S (NP (DT the) (JJ old) (NNS cats)) (VP (VBD sat)))\n"
                   "(S (NP (DT that)) (VP (VBD sat)))\n", encoding="utf-8")
    gold = tmp_path / "gold.conll"  # nouns head their determiners, verbs their subjects; '.' hangs on the verb
    gold.write_text(_conll([[("the", "DT", 2), ("cat", "NN", 3), ("sat", "VBD", 0)],
                            [("a", "DT", 2), ("dog", "NN", 3), ("ran", "VBD", 0), (".", ".", 3)],
                            [("the", "DT", 2), ("man", "NN", 3), ("ate", "VBD", 0)],
                            [("the", "DT", 3), ("old", "JJ", 3), ("cats", "NNS", 4), ("sat", "VBD", 0)],
                            [("that", "DT", 2), ("sat", "VBD", 0)]]), encoding="utf-8")
    pred = tmp_path / "pred.conll"
    # 1: the -> root, cat -> the (the det edge reversed), sat -> the; 2 (no '.'; a cycle, no root: eq. 17's heads
    # need not form a tree): a -> ran, dog -> ran, ran -> dog (neither); 3: the gold tree; 4: the -> cats (the gold
    # way; old -> the); 5: a DT headed by a verb in the gold (not a determiner edge): that -> root, sat -> that
    pred.write_text(_conll([[("the", "_", 0), ("cat", "_", 1), ("sat", "_", 1)],
                            [("a", "_", 3), ("dog", "_", 3), ("ran", "_", 2)],
                            [("the", "_", 2), ("man", "_", 3), ("ate", "_", 0)],
                            [("the", "_", 3), ("old", "_", 1), ("cats", "_", 4), ("sat", "_", 0)],
                            [("that", "_", 0), ("sat", "_", 1)]]), encoding="utf-8")
    script.main(["--treebank", str(mrg), "--deps", str(gold), "--pred", str(pred)])
    out = json.loads(capsys.readouterr().out)
    # predicted heads: DT in 1, 4, 5 (3 of 5; gold none); NN dog, man (2 of 3; gold all); NNS cats (gold too);
    # JJ never; VBD ran, ate, sat of 4 (3 of 5; gold all five)
    assert out["takes_dependents"] == {"DT": {"pred": 0.6, "gold": 0.0, "words": 5},
                                       "NN": {"pred": 0.667, "gold": 1.0, "words": 3},
                                       "NNS": {"pred": 1.0, "gold": 1.0, "words": 1},
                                       "JJ": {"pred": 0.0, "gold": 0.0, "words": 1},
                                       "VBD": {"pred": 0.6, "gold": 1.0, "words": 5}}
    # the four determiner edges (NN or NNS heads; not that -> sat, not old -> cats): 2 the gold way, 1 each other
    assert out["det_edges"] == {"gold_way": 0.5, "reversed": 0.25, "neither": 0.25}
    assert out["det_edge_count"] == 4
    short = tmp_path / "short.conll"
    short.write_text(_conll([[("the", "_", 0), ("cat", "_", 1), ("sat", "_", 1)]]), encoding="utf-8")
    with pytest.raises(SystemExit, match=r"short.conll: 1 sentences, but .*gold.mrg has 5 \(5 with words\)"):
        script.main(["--treebank", str(mrg), "--deps", str(gold), "--pred", str(short)])
    # the right count, but sentence 3 (lines 9-11 of the file) over other words: FILE:LINE and the gold sentence
    wrong = tmp_path / "wrong.conll"
    wrong.write_text(_conll([[("the", "_", 0), ("cat", "_", 1), ("sat", "_", 1)],
                             [("a", "_", 3), ("dog", "_", 3), ("ran", "_", 2)],
                             [("the", "_", 2), ("woman", "_", 3), ("ate", "_", 0)],
                             [("the", "_", 3), ("old", "_", 1), ("cats", "_", 4), ("sat", "_", 0)],
                             [("that", "_", 0), ("sat", "_", 1)]]), encoding="utf-8")
    with pytest.raises(SystemExit, match=r"wrong.conll:9: sentence 3 of .*gold.mrg: .*wom"):
        script.main(["--treebank", str(mrg), "--deps", str(gold), "--pred", str(wrong)])
    with pytest.raises(SystemExit) as e:
        script.main(["--treebank", str(mrg), "--deps", str(gold)])
    assert e.value.code == 2 and "--pred" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        script.main(["--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "--deps DEPS its gold dependencies (wsj22.sd.conll)" in help_text
    assert "Which words an induced dependency file makes heads (issue 49), from the scorer's files alone" in help_text
    assert "determiners take no dependents" in help_text  # the whole first paragraph
    assert "Prints one JSON object" not in help_text  # and no more


def test_a_determiner_after_its_noun_at_the_first_word_and_thirds(script, tmp_path, capsys):
    """A DT whose gold head is word 1 (index 0) still counts as a determiner edge; shares that are not 0 or 1."""
    mrg = tmp_path / "gold.mrg"
    mrg.write_text("(S (NP (NNS cats) (DT all)) (VP (VBD sat)))\n"
                   "(S (NP (DT the) (NN dog)) (VP (VBD ran)))\n"
                   "(S (NP (DT a) (NN cat)) (VP (VBD ran)))\n"
                   "(S (NP (NN rain)) (VP (VBD fell)))\n", encoding="utf-8")
    gold = tmp_path / "gold.conll"
    gold.write_text(_conll([[("cats", "NNS", 3), ("all", "DT", 1), ("sat", "VBD", 0)],
                            [("the", "DT", 2), ("dog", "NN", 3), ("ran", "VBD", 0)],
                            [("a", "DT", 2), ("cat", "NN", 3), ("ran", "VBD", 0)],
                            [("rain", "NN", 2), ("fell", "VBD", 0)]]), encoding="utf-8")
    pred = tmp_path / "pred.conll"
    # 1: the gold tree (all -> cats: the gold way); 2: dog -> the (reversed), ran -> the; 3: a -> ran (neither)
    pred.write_text(_conll([[("cats", "_", 3), ("all", "_", 1), ("sat", "_", 0)],
                            [("the", "_", 0), ("dog", "_", 1), ("ran", "_", 1)],
                            [("a", "_", 3), ("cat", "_", 3), ("ran", "_", 0)],
                            [("rain", "_", 2), ("fell", "_", 0)]]), encoding="utf-8")
    script.main(["--treebank", str(mrg), "--deps", str(gold), "--pred", str(pred)])
    out = json.loads(capsys.readouterr().out)
    # heads predicted: DT the (1 of 3); NN none (gold: dog, cat of 3); NNS cats; VBD sat, ran (3), fell: 3 of 4
    assert out["takes_dependents"] == {"DT": {"pred": 0.333, "gold": 0.0, "words": 3},
                                       "NN": {"pred": 0.0, "gold": 0.667, "words": 3},
                                       "NNS": {"pred": 1.0, "gold": 1.0, "words": 1},
                                       "VBD": {"pred": 0.75, "gold": 1.0, "words": 4}}
    assert out["det_edges"] == {"gold_way": 0.333, "reversed": 0.333, "neither": 0.333}
    assert out["det_edge_count"] == 3
    for missing in ("--treebank", "--deps"):  # each gold file is required
        argv = ["--treebank", str(mrg), "--deps", str(gold), "--pred", str(pred)]
        k = argv.index(missing)
        with pytest.raises(SystemExit) as e:
            script.main(argv[:k] + argv[k + 2:])
        assert e.value.code == 2 and missing in capsys.readouterr().err
    with pytest.raises(SystemExit):
        script.main(["--help"])
    assert "--treebank TREEBANK the gold .mrg (wsj22.mrg)" in " ".join(capsys.readouterr().out.split())
