"""Word normalisation of the unsupervised-parsing literature (eval_protocol.md): lower case, digits -> ``N``, and the
POS tags that count as words (punctuation is not scored)."""

import re
from typing import List, Sequence

#: POS tags of words (eval_protocol.md; ON-LSTM / Tree Transformer / StructFormer evaluation code).
WORD_TAGS = frozenset(
    "CC CD DT EX FW IN JJ JJR JJS LS MD NN NNS NNP NNPS PDT POS PRP PRP$ RB RBR RBS RP SYM TO UH VB VBD VBG "
    "VBN VBP VBZ WDT WP WP$ WRB".split())

_DIGIT = re.compile(r"\d")


def normalize_word(word: str, lowercase: bool = True, digits: bool = True) -> str:
    """``lowercase``: lower-case; ``digits``: a word containing a digit becomes ``N`` (Mikolov's PTB)."""
    if digits and _DIGIT.search(word):
        return "N"
    return word.lower() if lowercase else word


def word_positions(tags: Sequence[str]) -> List[int]:
    """Indices of the leaves whose tag is a word tag, in order."""
    return [i for i, t in enumerate(tags) if t in WORD_TAGS]


__all__ = ["WORD_TAGS", "normalize_word", "word_positions"]
