"""Raw text -> bracketed trees, as ``fairseq-tree-preprocess`` makes them: tokenized (sacremoses with the PTB
fixups, or whitespace) and parsed by a preprocessing backend (:mod:`fairseq_tree.parsers`). Used by
``fairseq-tree-classify --input-format raw``, :class:`fairseq_tree.hub.ClassifierHubInterface` and
``tree_translation``'s raw-text input (``fairseq-interactive --tree-input raw``, the tree2seq hub)."""

from typing import List, Optional, Sequence

from fairseq_tree.parsers import ParseError, build_parser
from fairseq_tree.text.tokenize import Tokenizer


class RawTextParser:
    """``parser(texts) -> one-line PTB brackets per text``. ``parser``: a backend name (``stanza``, ``lal``,
    ``induced``), built with ``options`` on first use (a caller that never sees raw text never loads it);
    ``tokenize``: ``moses`` or ``none``; ``tokenizer_lang``: the tokenizer's language (a backend's own language,
    e.g. stanza's ``lang``, is one of ``options``)."""

    def __init__(self, parser: str = "stanza", tokenize: str = "moses", tokenizer_lang: Optional[str] = "en",
                 **options):
        self.tokenize = Tokenizer(tokenize, tokenizer_lang, ptb=True)
        self._name, self._options, self._backend = parser, options, None

    @property
    def backend(self):
        if self._backend is None:
            self._backend = build_parser(self._name, **self._options)
        return self._backend

    def __call__(self, texts: Sequence[str], call_size: Optional[int] = None) -> List[str]:
        """Texts -> brackets, ``call_size`` sentences per backend call (None: all in one). Raises the
        :class:`~fairseq_tree.parsers.ParseError` of the first failure, ``index`` into ``texts``."""

        sentences = [self.tokenize(t) for t in texts]
        step = call_size or max(len(sentences), 1)
        out: List[str] = []
        for start in range(0, len(sentences), step):
            try:
                out.extend(self.backend.parse(sentences[start:start + step]))
            except ParseError as e:
                raise ParseError(start + e.index, e.message) from None
        return out

__all__ = ["RawTextParser"]
