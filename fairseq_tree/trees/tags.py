"""PTB part-of-speech tag sets, in one place. Two punctuation sets, because two conventions need them:

* :data:`EVALB_PUNCT_TAGS` ``, : `` '' .``: the terminals EVALB's ``COLLINS.prm`` deletes (``DELETE_LABEL``),
  also the usual "without punctuation" convention of UAS / LAS on PTB Stanford dependencies;
* :data:`UPOS_PUNCT_TAGS`: those plus the bracket tags ``-LRB- -RRB- -LCB- -RCB-``: the PTB tags mapped to the
  Universal POS ``PUNCT`` (:func:`ptb_to_upos`) when a treebank is converted to CoNLL-U for stanza training.
"""

EVALB_PUNCT_TAGS = frozenset([",", ":", "``", "''", "."])
UPOS_PUNCT_TAGS = EVALB_PUNCT_TAGS | frozenset(["-LRB-", "-RRB-", "-LCB-", "-RCB-"])

#: PTB tag -> Universal POS (the rest of :func:`ptb_to_upos`'s mapping)
PTB2UPOS = {
    "CC": "CCONJ", "CD": "NUM", "DT": "DET", "EX": "PRON", "FW": "X", "IN": "ADP",
    "JJ": "ADJ", "JJR": "ADJ", "JJS": "ADJ", "LS": "X", "MD": "AUX", "NN": "NOUN",
    "NNS": "NOUN", "NNP": "PROPN", "NNPS": "PROPN", "PDT": "DET", "POS": "PART",
    "PRP": "PRON", "PRP$": "PRON", "RB": "ADV", "RBR": "ADV", "RBS": "ADV", "RP": "ADP",
    "SYM": "SYM", "TO": "PART", "UH": "INTJ", "VB": "VERB", "VBD": "VERB", "VBG": "VERB",
    "VBN": "VERB", "VBP": "VERB", "VBZ": "VERB", "WDT": "DET", "WP": "PRON", "WP$": "PRON",
    "WRB": "ADV", "$": "SYM", "#": "SYM", "HYPH": "PUNCT", "NFP": "PUNCT", "ADD": "X",
    "AFX": "ADJ", "GW": "X", "XX": "X",
}


def ptb_to_upos(tag: str) -> str:
    """A PTB tag's Universal POS (``X`` for an unknown tag)."""
    return "PUNCT" if tag in UPOS_PUNCT_TAGS else PTB2UPOS.get(tag, "X")
