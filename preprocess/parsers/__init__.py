"""Constituency parser backends for the preprocessing pipeline.

A backend is an object with ``parse(sentences: list[list[str]]) -> list[str]`` that returns one PTB
bracket string (one line, ``(`` / ``)`` in words escaped as ``-LRB-`` / ``-RRB-``) per input sentence,
and raises :class:`ParseError` naming the first sentence of the batch it could not parse.
Backends are imported lazily: importing this package does not import stanza or torch.
"""

from typing import Any, Dict


class ParseError(Exception):
    """The parser failed on sentence ``index`` (0-based, within the batch given to ``parse``)."""

    def __init__(self, index: int, message: str):
        super().__init__(index, message)
        self.index = index
        self.message = message

    def __str__(self) -> str:
        return f"sentence {self.index} of the batch: {self.message}"


class CheckpointBackend:
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
    "stanza": "preprocess.parsers.stanza_parser:StanzaParser",
    "lal": "preprocess.parsers.lal_parser:LALBackend",
    "induced": "preprocess.parsers.induced_parser:InducedBackend",
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


__all__ = ["ParseError", "CheckpointBackend", "BACKENDS", "get_parser_class", "build_parser"]
