"""Input validation and tokenization (sacremoses) for the preprocessing pipeline.

The source side is tokenized the way the Penn Treebank is (so a parser trained on it sees familiar
tokens): Moses rules without XML escaping, then ``n't`` split off (``can't`` -> ``ca n't``) and
straight double quotes turned into PTB's opening/closing quotes (two backticks, two apostrophes).
Parentheses stay ``(``/``)``: the tree writer escapes them as ``-LRB-``/``-RRB-``.
The target side is tokenized with plain Moses rules (``aggressive_dash_splits``, no escaping), the
usual fairseq recipe, so ``--tokenizer moses`` detokenizes it at generation time.
"""

from __future__ import annotations

import re
import unicodedata
from typing import List, Optional

# Unicode categories that never belong in text: controls (tabs are whitespace), surrogates,
# private use, unassigned; plus the replacement character left by a bad decode.
_BAD_CATEGORIES = frozenset(["Cc", "Cs", "Co", "Cn"])
_ALLOWED_CONTROLS = frozenset("\t\n\r")
# ASCII controls (not tab/newline/CR) and DEL: the only bad characters an ASCII line can hold
_BAD_ASCII = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


class InputError(ValueError):
    """A problem with one input line; ``reason`` is a short key used in the report."""

    def __init__(self, reason: str, message: str):
        self.reason, self.message = reason, message
        super().__init__(message)


def check_line(line: str) -> str:
    """Return the stripped line or raise :class:`InputError` (empty line, unknown character)."""
    if line.isascii():  # fast path: most lines
        bad = _BAD_ASCII.search(line)
        if bad:
            raise InputError("unknown_character",
                             f"unknown character U+{ord(bad.group()):04X} at column {bad.start() + 1}")
    else:
        for col, ch in enumerate(line, 1):
            if ch >= "\x7f" and (ch == "\ufffd" or unicodedata.category(ch) in _BAD_CATEGORIES) \
                    or (ch < " " and ch not in _ALLOWED_CONTROLS):
                raise InputError("unknown_character",
                                 f"unknown character U+{ord(ch):04X} at column {col}")
    text = line.strip()
    if not text:
        raise InputError("empty_line", "empty line")
    return text


def decode_line(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError("bad_encoding", f"invalid UTF-8 at byte {e.start + 1}") from None


def ptb_fixups(tokens: List[str]) -> List[str]:
    """Moses English tokens -> PTB conventions (``n't`` clitics, directed double quotes)."""
    out: List[str] = []
    quotes = 0
    for tok in tokens:
        if tok.lower() == "'t" and out and len(out[-1]) > 1 and out[-1][-1] in "nN":
            prev = out.pop()
            out.append(prev[:-1])
            tok = prev[-1] + tok
        elif tok == '"':
            tok = "``" if quotes % 2 == 0 else "''"
            quotes += 1
        out.append(tok)
    return out


class Tokenizer:
    """``kind`` is ``moses`` or ``none`` (whitespace split); ``ptb`` applies :func:`ptb_fixups`."""

    def __init__(self, kind: str, lang: Optional[str], ptb: bool = False):
        if kind not in ("moses", "none"):
            raise ValueError(f"unknown tokenizer {kind!r}")
        self.kind, self.ptb = kind, ptb
        self._moses = None
        if kind == "moses":
            from sacremoses import MosesTokenizer

            self._moses = MosesTokenizer(lang=lang or "en")

    def __call__(self, text: str) -> List[str]:
        if self._moses is None:
            return text.split()
        tokens = self._moses.tokenize(text, escape=False, aggressive_dash_splits=not self.ptb)
        # Moses can emit tokens that are only whitespace-like (e.g. NBSP); drop them and split any
        # token that still contains whitespace, so a token never breaks the one-line tree format.
        tokens = [t for tok in tokens for t in tok.split()]
        return ptb_fixups(tokens) if self.ptb else tokens
