"""Constituency parser backends for the preprocessing pipeline.

A backend is an object with ``parse(sentences: list[list[str]]) -> list[str]`` that returns one PTB
bracket string (one line, ``(`` / ``)`` in words escaped as ``-LRB-`` / ``-RRB-``) per input sentence,
and raises :class:`ParseError` naming the first sentence (in input order) it could not parse. Our backends
(:class:`BatchedBackend`) also have ``parse_all``, which returns a :class:`ParseError` in place of each
sentence it could not parse and the trees of all the others.

Batching: a backend parses its input in batches of ``batch_size`` sentences of similar length (sorted by
length, so fewer pad positions; ``sort_by_length=False`` keeps the input order, for benchmarks;
:func:`fairseq_tree.inference.batching.length_batches`) and returns the results in input order.
``device``: ``cpu``, ``cuda`` or ``cuda:N`` (:func:`check_device`); None: the GPU when there is one.
Backends are imported lazily: importing this package does not import stanza or torch.
"""

from typing import Any, Dict, List, Sequence, Union

from fairseq_tree.inference.batching import length_batches  # noqa: F401  (the one batching helper; re-exported)
from fairseq_tree.utils.devices import check_device, device_arg, resolve_device  # noqa: F401  (re-exported)


class ParseError(Exception):
    """The parser failed on sentence ``index`` (0-based, within the batch given to ``parse``)."""

    def __init__(self, index: int, message: str):
        super().__init__(index, message)
        self.index = index
        self.message = message

    def __str__(self) -> str:
        return f"sentence {self.index} of the batch: {self.message}"


Result = Union[str, ParseError]


class BatchedBackend:
    """``parse`` / ``parse_all`` over length-sorted batches, for backends that define

    * ``prepare(sentence) -> item``: checks one token list (raises ValueError with the reason) and converts it;
    * ``parse_batch(items) -> list of bracket strings or Exceptions`` (one per item, in the given order) for at most
      :meth:`call_size` items; raising means the batch failed as a whole, and its sentences are then parsed one
      by one to find the bad ones;
    * attributes ``batch_size`` (sentences per model batch) and ``sort_by_length``.
    """

    batch_size: int = 64
    sort_by_length: bool = True

    def prepare(self, sentence: Sequence[str]) -> Any:
        raise NotImplementedError

    def parse_batch(self, items: List[Any]) -> List[Union[str, Exception]]:
        raise NotImplementedError

    def call_size(self, n: int) -> int:
        """Sentences per ``parse_batch`` call when parsing ``n`` (a backend whose model sorts and batches by
        itself may take them all at once): ``batch_size``."""
        return self.batch_size

    def describe(self, e: Exception) -> str:
        return f"{type(e).__name__}: {e}"

    def parse_all(self, sentences: Sequence[Sequence[str]]) -> List[Result]:
        """One bracket string per sentence, or a :class:`ParseError` (``index``: its position in ``sentences``)."""
        out: List[Result] = [""] * len(sentences)
        good, items = [], []
        for i, s in enumerate(sentences):
            try:
                items.append(self.prepare(s))
                good.append(i)
            except ValueError as e:
                out[i] = ParseError(i, str(e))
        for batch in length_batches([len(sentences[i]) for i in good], self.call_size(len(good)),
                                    self.sort_by_length):
            for k, r in zip(batch, self._parse_or_localise([items[k] for k in batch])):
                out[good[k]] = ParseError(good[k], r.message) if isinstance(r, ParseError) else r
        return out

    def parse(self, sentences: Sequence[Sequence[str]]) -> List[str]:
        """One bracket string per sentence; raises the :class:`ParseError` of the first bad sentence."""
        out = self.parse_all(sentences)
        for r in out:
            if isinstance(r, ParseError):
                raise r
        return out  # type: ignore[return-value]

    def _parse_or_localise(self, items: List[Any]) -> List[Result]:
        """``parse_batch`` with each failure as a ParseError (index -1: the caller knows the position)."""
        try:
            results = self.parse_batch(items)
            if len(results) != len(items):
                raise RuntimeError(f"{len(results)} results for {len(items)} sentences")
        except Exception as batch_error:  # the batch failed as a whole: sentence by sentence
            if len(items) == 1:
                return [ParseError(-1, self.describe(batch_error))]
            return [r for item in items for r in self._parse_or_localise([item])]
        return [ParseError(-1, self.describe(r)) if isinstance(r, Exception) else r for r in results]


class CheckpointBackend(BatchedBackend):
    """Base of the backends that load one of our checkpoints (``lal``, ``induced``): ``__init__`` stores its keyword
    arguments in ``self.options``; pickling keeps only them, so each worker process reloads the checkpoint."""

    options: Dict[str, Any]

    @classmethod
    def from_options(cls, **options):
        return cls(**{k: v for k, v in options.items() if v is not None or k == "data"})

    def __getstate__(self):
        return {"options": self.options}

    def __setstate__(self, state):
        self.__init__(**state["options"])


BACKENDS = {
    "stanza": "fairseq_tree.parsers.stanza_parser:StanzaParser",
    "lal": "fairseq_tree.parsers.lal_parser:LALBackend",
    "induced": "fairseq_tree.parsers.induced_parser:InducedBackend",
}


def get_parser_class(name: str):
    import importlib

    try:
        module, cls = BACKENDS[name].split(":")
    except KeyError:
        raise ValueError(f"unknown parser backend {name!r} (known: {', '.join(sorted(BACKENDS))})") from None
    return getattr(importlib.import_module(module), cls)


def build_parser(name: str, **options: Dict[str, Any]):
    """``build_parser('stanza', model_dir=...)``: the backend's ``from_options(**options)``."""
    return get_parser_class(name).from_options(**options)


__all__ = ["ParseError", "BatchedBackend", "CheckpointBackend", "BACKENDS", "get_parser_class", "build_parser",
           "check_device", "device_arg", "length_batches", "resolve_device"]
