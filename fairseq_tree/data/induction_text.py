"""Text for unsupervised tree induction: one sentence of words per line, as the literature's models see it.

The unsupervised-parsing papers train and evaluate on words only (Mikolov's PTB text; Wang et al. and
Shen et al. both): punctuation removed, lower-cased, every word containing a digit replaced by ``N``.
The same normalisation must be applied to the training text and to the words of the treebank the
induced trees are scored on, so both go through :func:`normalize_word` here.

* treebank sentences (``.mrg``): the leaves whose POS tag is in :data:`WORD_TAGS` (the evaluation's
  word-tag list: punctuation, ``$``, ``#`` and ``-NONE-`` go);
* raw text (e.g. Multi30k captions): sacremoses with PTB conventions (as ``fairseq-tree-preprocess``
  tokenizes source text for the parser), then tokens without a letter or digit (punctuation) dropped;
* text already in the treebank's tokenization (``--tokenize ptb``: ``wsj_text/``, the WSJ sentences of CoNLL-2000):
  split on spaces, and the tokens whose treebank tag is never a word tag dropped (:func:`ptb_words`), so the text
  keeps what the treebank words keep (``%``, ``&``; not ``-LRB-`` or quotes).

CLI (writes one file, reports counts on stderr)::

    fairseq-tree-induction-text --out train.txt --treebank train.mrg wsj22.mrg \\
        --text multi30k/train.en [--keep-case] [--keep-digits]
"""

import re
import sys
from typing import Iterable, Iterator, List

from fairseq_tree.text.normalize import WORD_TAGS, normalize_word, word_positions  # noqa: F401  (re-exported)
from fairseq_tree.text.tokenize import Tokenizer
from fairseq_tree.trees import atomic_write, read_treebank
from fairseq_tree.utils.help_text import ArgumentParser

_WORDLIKE = re.compile(r"\w")
#: treebank tokens that are words without a letter or digit (tagged NN and CC in the PTB)
_SYMBOL_WORDS = frozenset({"%", "&"})
#: treebank tokens with letters that are punctuation (tagged -LRB- / -RRB-)
_BRACKETS = frozenset({"-LRB-", "-RRB-", "-LCB-", "-RCB-", "-LSB-", "-RSB-"})


def ptb_words(tokens: List[str]) -> List[str]:
    """The tokens of a treebank-tokenized sentence that are words by the evaluation's tag rule (:data:`WORD_TAGS`):
    punctuation (``,`` ``.`` ``--`` quotes), brackets and currency (``$``, ``US$``: tag ``$``) are not; ``%`` (NN),
    ``&`` (CC) and a possessive ``'`` after a word ending in s (POS) are. On the 5,369 treebank sentences of
    ptb_sample and wsj22 this rule and the tags disagree on 2 (a bare ``@`` tagged IN, a ``Wa`` tagged ``,``)."""
    out = []
    for k, t in enumerate(tokens):
        if t == "'":
            keep = k > 0 and tokens[k - 1][-1:] in ("s", "S")
        else:
            keep = t not in _BRACKETS and not t.endswith("$") and (t in _SYMBOL_WORDS or bool(_WORDLIKE.search(t)))
        if keep:
            out.append(t)
    return out


def treebank_sentences(path: str, lowercase: bool = True, digits: bool = True) -> Iterator[List[str]]:
    """The word sequence of every tree of a (multi-line) .mrg file, punctuation removed, normalised.
    Sentences left with no word are yielded empty (callers decide; the scorer skips them)."""
    for _, tree in read_treebank(path):
        yield [normalize_word(tree.words[i], lowercase, digits) for i in word_positions(tree.tags)]


def text_sentences(lines: Iterable[str], lowercase: bool = True, digits: bool = True,
                   tokenize: str = "moses") -> Iterator[List[str]]:
    """Raw text lines -> word lists, normalised. ``tokenize``: 'moses' (PTB-style tokens, punctuation-only tokens
    dropped), 'none' (split on spaces, the same drop), 'ptb' (treebank-tokenized text: :func:`ptb_words`)."""
    if tokenize == "ptb":
        for line in lines:
            yield [normalize_word(t, lowercase, digits) for t in ptb_words(line.split())]
        return
    tok = Tokenizer(tokenize, "en", ptb=True)
    for line in lines:
        yield [normalize_word(t, lowercase, digits) for t in tok(line.strip()) if _WORDLIKE.search(t)]


def cli_main(argv=None) -> None:
    p = ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="output text file, one sentence per line")
    p.add_argument("--treebank", nargs="*", default=[], help=".mrg files: their words (by POS tag)")
    p.add_argument("--text", nargs="*", default=[], help="raw text files, one sentence per line")
    p.add_argument("--tokenize", choices=["moses", "none", "ptb"], default="moses",
                   help="for --text files: moses (raw text), none (split on spaces), ptb (treebank tokens: "
                        "the evaluation's word rule)")
    p.add_argument("--keep-case", action="store_true")
    p.add_argument("--keep-digits", action="store_true")
    p.add_argument("--min-words", type=int, default=1, help="drop (and count) shorter sentences")
    args = p.parse_args(argv)
    norm = dict(lowercase=not args.keep_case, digits=not args.keep_digits)
    with atomic_write(args.out) as out:  # no half-written file on an error
        for path in args.treebank + args.text:
            if path in args.treebank:
                sents = treebank_sentences(path, **norm)
            else:
                sents = text_sentences(open(path, encoding="utf-8"), tokenize=args.tokenize, **norm)
            kept = dropped = 0
            for words in sents:
                if len(words) < args.min_words:
                    dropped += 1
                    continue
                out.write(" ".join(words) + "\n")
                kept += 1
            print(f"{path}: {kept} sentences written, {dropped} with fewer than {args.min_words} words "
                  f"dropped", file=sys.stderr)


if __name__ == "__main__":
    cli_main()
