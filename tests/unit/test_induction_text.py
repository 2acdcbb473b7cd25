"""Induction text from treebank-tokenized sentences (``--tokenize ptb``): the same words as the evaluation's tag rule
keeps of a treebank, so training text (wsj_text/) and scored sentences (wsj22) are normalised alike."""

import subprocess
import sys
from pathlib import Path

import pytest

from fairseq_tree.data.induction_text import ptb_words, text_sentences
from fairseq_tree.text.normalize import WORD_TAGS
from fairseq_tree.trees import read_treebank

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "data"


@pytest.mark.parametrize("tokens, words", [
    ("Prices rose 5 % , to $ 17.95 .", "Prices rose 5 % to 17.95"),
    ("the investors ' money ( and AT&T 's ) -- `` yes ''", "the investors ' money and AT&T 's yes"),
    ("it cost US$ 3 and C$ 4 ; R & D ' ?", "it cost 3 and 4 R & D"),
    ("-LRB- -RRB- -LCB- n't", "n't"),
])
def test_ptb_words_hand_cases(tokens, words):
    assert ptb_words(tokens.split()) == words.split()


def test_ptb_words_agree_with_the_tag_rule_on_the_treebanks():
    """Every sentence of ptb_sample (train, valid) and wsj22 as treebank tokens (-NONE- left out): the words kept
    equal the words of WORD_TAGS, but for the 2 sentences whose tags no token rule can know (`@`/IN, `Wa`/,)."""
    files = [SHARED / "ptb_sample" / "train.mrg", SHARED / "ptb_sample" / "valid.mrg", SHARED / "wsj22" / "wsj22.mrg"]
    if not all(f.is_file() for f in files):
        pytest.skip("ptb_sample / wsj22 not found")
    differ = total = 0
    for f in files:
        for _, t in read_treebank(str(f)):
            total += 1
            tokens = [w for w, tag in zip(t.words, t.tags) if tag != "-NONE-"]
            differ += ptb_words(tokens) != [w for w, tag in zip(t.words, t.tags) if tag in WORD_TAGS]
    assert total == 5369 and differ == 2


def test_text_sentences_ptb_normalises():
    lines = ["Sales of 1,200 BMWs rose 12 % in the U.S. .\n", "`` We 're -LRB- not -RRB- sure , '' he said .\n"]
    assert list(text_sentences(lines, tokenize="ptb")) == [
        "sales of N bmws rose N % in the u.s.".split(), "we 're not sure he said".split()]


def test_cli_tokenize_ptb(tmp_path):
    src = tmp_path / "wsj.txt"
    src.write_text("The Dow fell 2.5 % , or 63.52 points .\n-- .\n", encoding="utf-8")
    out = tmp_path / "out.txt"
    proc = subprocess.run([sys.executable, "-m", "fairseq_tree.data.induction_text", "--out", str(out), "--text",
                           str(src), "--tokenize", "ptb"], capture_output=True, text=True, check=True)
    assert out.read_text(encoding="utf-8") == "the dow fell N % or N points\n"
    assert "1 sentences written, 1 with fewer than 1 words dropped" in proc.stderr
