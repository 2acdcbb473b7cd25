"""``fairseq-tree-score`` on ptb_sample/valid and hand-made files: the console script in a subprocess for the EVALB
comparison, its ``main(argv)`` in-process elsewhere (each subprocess pays the fairseq import). Expected EVALB numbers
are the output of the real evalb.c with COLLINS.prm on the same files (compiled from the EVALB shipped in
nikitakit/self-attentive-parser; not part of this repository); UF1 numbers are those of
``shared/notes/eval_protocol.md``."""

import contextlib
import io
import json
import re
import sys

import pytest
from conftest import BIN, SHARED
from conftest import run_command as _run

from fairseq_tree.cli.score import main

VALID = SHARED / "data" / "ptb_sample" / "valid.mrg"
VALID_DEP = SHARED / "data" / "ptb_sample" / "valid.conllu"


def score(*args):
    """-> (stdout lines, the JSON of the last line) of ``fairseq-tree-score ARGS``, run in-process."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        main([str(a) for a in args])
    lines = buf.getvalue().strip().splitlines()
    return lines, json.loads(lines[-1])


def score_subprocess(*args):
    """The installed console script (``python -m`` where it is not installed)."""
    exe = BIN / "fairseq-tree-score"
    cmd = [exe] if exe.is_file() else [sys.executable, "-m", "fairseq_tree.cli.score"]
    lines = _run(*cmd, *args).stdout.strip().splitlines()
    return lines, json.loads(lines[-1])


def _drop_bracket(line: str, label: str) -> str:
    """Remove the first ``(label `` bracket (not its children)."""
    k = line.find("(" + label + " ")
    if k < 0:
        return line
    depth = 0
    for j in range(k, len(line)):
        depth += (line[j] == "(") - (line[j] == ")")
        if depth == 0:
            return line[:k] + line[k + len(label) + 2:j] + line[j + 1:]
    return line


def perturb(lines):
    """Deterministic edits of one-line trees, one kind per residue: each exercises one EVALB rule."""
    out = []
    for k, line in enumerate(lines):
        if k % 11 == 3:
            line = ""  # skip sentence
        elif k % 17 == 5 and line.endswith("(. .))"):
            line = line[:-6] + "(NN .))"  # '.' not deleted from the prediction: Length unmatch
        elif k % 13 == 4 and " the)" in line:
            line = line.replace(" the)", " teh)", 1)  # Words unmatch
        elif k % 3 == 0 and line.endswith(" (. .))"):
            line = line[:-7] + ")"  # no final period at all: EVALB accepts it
        elif k % 19 == 6:
            line = "(ROOT " + line + ")"  # an extra (counted) bracket
        if k % 5 == 1:
            line = line.replace("(VP ", "(ADJP ", 1)
        if k % 7 == 2:
            line = line.replace("(DT ", "(NN ", 1)
        if k % 4 == 3:
            line = _drop_bracket(line, "PP")
        if k % 6 == 5:
            line = re.sub(r"(\([^\s()]+ [^\s()]+\)) (\([^\s()]+ [^\s()]+\))", r"(X \1 \2)", line, count=1)
        out.append(line)
    return out


@pytest.fixture(scope="module")
def valid_files(tmp_path_factory):
    if not VALID.is_file():
        pytest.skip(f"{VALID} not found")
    d = tmp_path_factory.mktemp("score")
    lines = VALID.read_text(encoding="utf-8").splitlines()
    (d / "perturbed.mrg").write_text("\n".join(perturb(lines)) + "\n", encoding="utf-8")
    return d


def test_self_score_is_perfect():
    if not VALID.is_file():
        pytest.skip(f"{VALID} not found")
    lines, r = score("--gold", VALID, "--pred", VALID, "--gold-dep", VALID_DEP, "--pred-dep", VALID_DEP)
    assert "Number of sentence        =    273" in lines and "Bracketing FMeasure       = 100.00" in lines
    assert (r["sentences"], r["skipped"], r["f1"], r["tagging_accuracy"], r["uas"], r["las"]) == (
        273, 0, 100.0, 100.0, 100.0, 100.0)


def test_perturbed_copy_matches_evalb(valid_files):
    lines, r = score_subprocess("--gold", VALID, "--pred", valid_files / "perturbed.mrg", "--per-sentence")
    # EVALB -p COLLINS.prm valid.mrg perturbed.mrg, -- All -- block:
    summary = lines[lines.index("-- All --"):lines.index("-- All --") + 13]
    assert summary == [
        "-- All --",
        "Number of sentence        =    273",
        "Number of Error sentence  =     24",
        "Number of Skip  sentence  =     25",
        "Number of Valid sentence  =    224",
        "Bracketing Recall         =  97.94",
        "Bracketing Precision      =  97.89",
        "Bracketing FMeasure       =  97.91",
        "Complete match            =  56.70",
        "Average crossing          =   0.00",
        "No crossing               =  99.55",
        "2 or less crossing        = 100.00",
        "Tagging accuracy          =  99.38",
    ]
    assert lines[3].split() == ["1", "33", "0", "100.00", "100.00", "23", "23", "23", "0", "29", "29", "100.00"]
    assert len([x for x in lines if re.match(r"^ +\d+ +\d+ +[012] ", x)]) == 273  # one row per sentence
    assert r["skipped"] == 49 and r["skipped_by_reason"] == {"empty prediction": 25, "words unmatch": 9,
                                                              "length unmatch": 15}
    assert round(r["f1"], 2) == 97.91 and round(r["tagging_accuracy"], 2) == 99.38
    assert r["rules"] == "EVALB COLLINS.prm" and "ROOT" not in r["delete_labels"]
    _, w = score("--gold", VALID, "--pred", valid_files / "perturbed.mrg", "--delete-wrappers")
    assert w["precision"] > r["precision"] and w["recall"] == r["recall"] and "ROOT" in w["delete_labels"]


def test_dependencies_hand_counted(tmp_path):
    """UAS / LAS of a copy of valid.conllu with every 4th non-punctuation head and every 5th relation changed."""
    if not VALID_DEP.is_file():
        pytest.skip(f"{VALID_DEP} not found")
    out, words, heads_ok, both_ok, k = [], 0, 0, 0, 0
    for line in VALID_DEP.read_text(encoding="utf-8").splitlines():
        cols = line.split("\t")
        if len(cols) == 10 and cols[4] not in {",", ".", ":", "``", "''"}:
            k += 1
            words += 1
            head_ok, rel_ok = k % 4 != 0, k % 5 != 0
            if not head_ok:
                cols[6] = str(int(cols[0]) % 2 + 1 if cols[6] != str(int(cols[0]) % 2 + 1) else 0)
            if not rel_ok:
                cols[7] = "changed"
            heads_ok += head_ok
            both_ok += head_ok and rel_ok
            line = "\t".join(cols)
        out.append(line)
    (tmp_path / "p.conllu").write_text("\n".join(out) + "\n", encoding="utf-8")
    _, r = score("--gold", VALID, "--gold-dep", VALID_DEP, "--pred-dep", tmp_path / "p.conllu")
    assert r["dep_tokens"] == words
    assert r["uas"] == pytest.approx(100.0 * heads_ok / words) and r["las"] == pytest.approx(100.0 * both_ok / words)


def test_bad_input_names_file_and_line(tmp_path):
    gold = tmp_path / "g.mrg"
    gold.write_text("(S (NP (DT a) (NN b)) (VP (VBD c)))\n" * 3, encoding="utf-8")
    cases = {"short.mrg": ("(S (NP (DT a) (NN b)) (VP (VBD c)))\n" * 2, r"short\.mrg:3: ends after 2 sentences"),
             "long.mrg": ("(S (NP (DT a) (NN b)) (VP (VBD c)))\n" * 4, r"long\.mrg:4: sentence 4, but"),
             "bad.mrg": ("(S (NP (DT a) (NN b)) (VP (VBD c)))\n(S (NP (DT a) (NN b)) (VBD c)))\n\n",
                         r"bad\.mrg:2: unbalanced"),
             "bare.mrg": ("(S (NP a b) (VP (VBD c)))\n\n\n", r"bare\.mrg:1: bare word 'a'"),
             "open.mrg": ("\n(S (NP (DT a) (NN b)) (VP (VBD c))\n)\n", r"open\.mrg:2: 1 unclosed '\('")}
    for name, (text, message) in cases.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
        with pytest.raises(SystemExit, match=message):
            score("--gold", gold, "--pred", tmp_path / name)


# ------------------------------------------------------------------------------------------ --unsupervised
def _branching(line: str, right: bool, bare: bool) -> str:
    """Right- or left-branching brackets over every token of a gold line (``(TAG word)`` leaves) or over its words
    only (bare leaves, punctuation etc. removed by the word tags of eval_protocol.md)."""
    word_tags = set("CC CD DT EX FW IN JJ JJR JJS LS MD NN NNS NNP NNPS PDT POS PRP PRP$ RB RBR RBS RP SYM TO UH VB "
                    "VBD VBG VBN VBP VBZ WDT WP WP$ WRB".split())
    leaves = [(t, w) for t, w in re.findall(r"\(([^\s()]+) ([^\s()]+)\)", line) if t != "-NONE-"]
    items = [w for t, w in leaves if t in word_tags] if bare else [f"({t} {w})" for t, w in leaves]
    if not items:
        return ""
    text = items[-1] if right else items[0]
    for x in (reversed(items[:-1]) if right else items[1:]):
        text = f"(X {x} {text})" if right else f"(X {text} {x})"
    return text if len(items) > 1 else f"(X {text})"


@pytest.mark.parametrize("right,bare,uf1", [(True, False, 40.9), (False, False, 7.8), (True, True, 40.9)])
def test_unsupervised_baselines_reproduce_eval_protocol(tmp_path, right, bare, uf1):
    if not VALID.is_file():
        pytest.skip(f"{VALID} not found")
    lines = VALID.read_text(encoding="utf-8").splitlines()
    (tmp_path / "p.trees").write_text("".join(_branching(x, right, bare) + "\n" for x in lines), encoding="utf-8")
    out, r = score("--unsupervised", "--gold", VALID, "--pred", tmp_path / "p.trees")
    assert round(r["uf1"], 1) == uf1 and r["sentences"] == 273 and r["skipped"] == 1  # one sentence of 1 word
    assert "Sentence-level F1 (UF1)   =  " + f"{r['uf1']:5.2f}" in out


def test_unsupervised_uuas_counts_a_gold_edge_once(tmp_path):
    """Predicted heads that are not a tree: words 1 and 2 head each other. By hand: gold edges {1,2} {2,3} {3,root};
    predicted {1,2} (twice) {3,root} -> UUAS 2/3; UAS: words 1 and 3 -> 2/3 (crediting {1,2} twice gave 100)."""
    (tmp_path / "g.mrg").write_text("(S (NP (DT the) (NN cat)) (VP (VBD sat)) (. .))\n", encoding="utf-8")
    rows = lambda heads: "".join(  # noqa: E731
        f"{i}\t{w}\t_\t{t}\t{t}\t_\t{h}\tdep\t_\t_\n" for i, (w, t, h) in
        enumerate(zip(["the", "cat", "sat", "."], ["DT", "NN", "VBD", "."], heads), 1)) + "\n"
    (tmp_path / "g.conllu").write_text(rows([2, 3, 0, 3]), encoding="utf-8")
    (tmp_path / "p.conllu").write_text(rows([2, 1, 0, 3]), encoding="utf-8")
    _, r = score("--unsupervised", "--gold", tmp_path / "g.mrg", "--gold-dep", tmp_path / "g.conllu",
                 "--pred-dep", tmp_path / "p.conllu")
    assert r["dep_words"] == 3
    assert r["uas"] == pytest.approx(200 / 3) and r["uuas"] == pytest.approx(200 / 3)
