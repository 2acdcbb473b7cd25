"""Calling fairseq across its versions: the plugin supports the fairseq 0.12.2 release, fairseq main and
fairseq-fixed 0.12.3.1, whose signatures differ in places (e.g. 0.12.2's ``FairseqTask.build_criterion(self, cfg)``
and ``criterions.build_criterion(cfg, task)`` take no ``from_checkpoint``)."""

import inspect
from typing import Callable


def accepted(fn: Callable, **kwargs) -> dict:
    """The keyword arguments of ``kwargs`` that ``fn``'s signature accepts (all of them when it takes ``**kwargs``
    or has no readable signature)."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return kwargs
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return kwargs
    return {k: v for k, v in kwargs.items() if k in params}


__all__ = ["accepted"]
