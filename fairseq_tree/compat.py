"""Everything importing the plugin changes outside its own modules, in one place (applied once, when fairseq
loads the plugin through ``--user-dir`` or ``import fairseq_tree``). Nothing here weakens torch or fairseq:

1. **Checkpoint allowlist** (:func:`fairseq_tree.safe_loading.register`): ``argparse.Namespace`` and numpy's scalar
   reconstruction are added to torch's safe globals, so that fairseq's own ``torch.load`` (torch >= 2.6 default:
   ``weights_only=True``) reads fairseq checkpoints; a file that pickles anything else is still refused.
2. **A clearer refusal** (:func:`fairseq_tree.safe_loading.guard_fairseq_loader`): fairseq's
   ``checkpoint_utils.load_checkpoint_to_cpu`` reports a refused file by its path and the opt-out for a trusted
   file (``FAIRSEQ_TREE_TRUSTED_CHECKPOINTS``, read by a copy of the loader for that call only); what it loads and
   how is unchanged.
3. **numpy 2**: ``np.compat`` is gone; fairseq still uses ``np.compat.long`` in ``TokenBlockDataset``
   (``--sample-break-mode eos``) and ``LanguagePairDataset(num_buckets > 0)``: the alias is restored when missing.
4. **Exit hook**: fairseq's ``BufferedIterator`` prefetches batches in a daemon thread. When training stops in the
   middle of an epoch (``--max-update``), the main thread exits while that thread is still inside torch, and the
   process aborts at interpreter shutdown ("terminate called without an active exception", exit 134) after
   everything was saved. An ``atexit`` hook stops and joins those threads first; the thread's loop gains a stop
   check, nothing else changes.
5. **One log line of fairseq's**: fairseq's text_to_speech tasks ask for tensorboardX at import ("Please install
   tensorboardX"), which fairseq-tree never uses; ``fairseq_tree/__init__.py`` filters that one message of those two
   loggers (nothing else of fairseq's logging changes).
6. **fairseq's import-time root logger**: two fairseq modules call ``logging.basicConfig`` at import (DEBUG in
   ``models/wav2vec/wav2vec2_classification.py``), so every later ``basicConfig`` (fairseq-generate's and
   fairseq-interactive's own, ours, a user's) did nothing and every library's DEBUG lines were printed (hydra's,
   matplotlib's font search). When the plugin imports fairseq, ``fairseq_tree/__init__.py`` makes those calls
   no-ops (the root logger stays as the process had it). When fairseq was imported first (fairseq's CLIs with
   ``--user-dir``) and the root logger is exactly what that call left (level DEBUG, one bare stderr handler),
   the level goes to what fairseq's CLIs ask for: ``LOGLEVEL``, default INFO (``LOGLEVEL=DEBUG`` keeps DEBUG).
7. **hydra's deprecation warnings**: fairseq's ``convert_namespace_to_omegaconf`` (every fairseq-train,
   -generate, -interactive) calls hydra's deprecated API (``hydra.experimental``, ``strict=``, ``# @package
   _group_`` headers, schema matching) and printed five warnings (about 20 lines) a run that no user can act on.
   Those five messages are ignored during that call only (its ``initialize`` and ``compose``); the process's
   warning filters are untouched, what the call composes is unchanged.

Not global: the batching fix that keeps the sentences fairseq main's ``--required-batch-size-multiple`` drops (the
0.12.2 release keeps them) applies to
the plugin's tasks (:mod:`fairseq_tree.data.leftovers`); to fairseq's own tasks only with
``FAIRSEQ_TREE_KEEP_LEFTOVERS=1``.
"""

import atexit
import functools
import inspect
import logging
import os
import queue
import sys
import threading
import types
import warnings

from fairseq_tree import safe_loading
from fairseq_tree.data import leftovers

#: the warnings of item 7: hydra's deprecation notices about fairseq's use of its API
HYDRA_DEPRECATIONS = (
    r"hydra\.experimental\.\w+\(\) is no longer experimental",
    r"\s*The version_base parameter is not specified",
    r"In '[^']*': Usage of deprecated keyword in package header",
    r"\s*'[^']*' is validated against ConfigStore schema",
    r"\s*The strict flag in the compose API is deprecated",
)


def apply(fairseq_imported_first: bool = False) -> None:
    """Make the changes listed above (once); ``fairseq_imported_first``: fairseq was imported before the plugin
    (item 6)."""
    import torch

    if tuple(int(x) for x in torch.__version__.split(".")[:2]) < (2, 6):
        warnings.warn(f"fairseq-tree: torch {torch.__version__} loads checkpoints with full pickle by default "
                      "in fairseq's own CLIs; use torch >= 2.6 for safe loading everywhere",
                      stacklevel=2)
    safe_loading.register()
    safe_loading.guard_fairseq_loader()

    import numpy as np

    try:
        np.compat.long  # noqa: B018
    except AttributeError:
        np.compat = types.SimpleNamespace(long=np.int64)

    _stop_prefetch_threads_at_exit()
    _quiet_fairseq_config_conversion()
    if fairseq_imported_first:
        lower_fairseq_debug_root()
    if os.environ.get(leftovers.ENV) == "1":
        leftovers.patch_fairseq_batch_by_size()


def lower_fairseq_debug_root() -> None:
    """Item 6: the root logger as fairseq's import-time ``basicConfig(level=DEBUG)`` leaves it (DEBUG, one stderr
    StreamHandler with the default format) -> ``LOGLEVEL`` (default INFO), fairseq's CLIs' level; else unchanged."""
    root = logging.getLogger()
    if root.level != logging.DEBUG or len(root.handlers) != 1:
        return
    handler = root.handlers[0]
    bare = (type(handler) is logging.StreamHandler and handler.stream is sys.stderr and not handler.filters
            and handler.level == logging.NOTSET and handler.formatter is not None
            and handler.formatter._fmt == logging.BASIC_FORMAT)
    if bare:
        root.setLevel(os.environ.get("LOGLEVEL", "INFO").upper())


def _without_hydra_deprecations(fn):
    """``fn`` with item 7's hydra warnings ignored while it runs (the filters restored after). hydra's
    ``initialize`` finds ``config_path`` relative to its caller's file: told to look one frame further up, past
    this wrapper, it still finds fairseq's."""
    frames = "caller_stack_depth" in inspect.signature(fn).parameters

    @functools.wraps(fn)
    def call(*args, **kwargs):
        if frames:
            kwargs["caller_stack_depth"] = kwargs.get("caller_stack_depth", 1) + 1
        with warnings.catch_warnings():
            for message in HYDRA_DEPRECATIONS:
                warnings.filterwarnings("ignore", message=message, category=UserWarning)
            return fn(*args, **kwargs)

    call._fairseq_tree_quiet = True
    return call


def _quiet_fairseq_config_conversion() -> None:
    """Item 7: the hydra calls of fairseq's ``convert_namespace_to_omegaconf`` (names it looks up at call time)."""
    from fairseq.dataclass import utils as dataclass_utils

    for name in ("initialize", "compose"):
        fn = getattr(dataclass_utils, name)
        if not getattr(fn, "_fairseq_tree_quiet", False):
            setattr(dataclass_utils, name, _without_hydra_deprecations(fn))


def _stop_prefetch_threads_at_exit() -> None:
    from fairseq.data import iterators

    consumer = iterators.BackgroundConsumer
    if getattr(consumer, "_fairseq_tree_stoppable", False):
        return

    def run(self):
        if self.cuda_device is not None:
            import torch

            torch.cuda.set_device(self.cuda_device)
        try:
            for item in self._source:
                if getattr(self, "_fairseq_tree_stop", False):
                    return
                self._queue.put(item)
                self.count += 1
                if self._max_len is not None and self.count >= self._max_len:
                    break
            self._queue.put(iterators._sentinel)
        except Exception as e:
            self._queue.put(e)

    consumer.run = run
    consumer._fairseq_tree_stoppable = True
    atexit.register(_join_prefetch_threads)


def _join_prefetch_threads(timeout: float = 60.0) -> None:
    from fairseq.data.iterators import BackgroundConsumer

    for t in threading.enumerate():
        if not isinstance(t, BackgroundConsumer) or not t.is_alive():
            continue
        t._fairseq_tree_stop = True  # not `_stop`: Thread has a private _stop() method
        waited = 0.0
        while t.is_alive() and waited < timeout:
            try:  # a full queue blocks the thread in put(): drain it
                while True:
                    t._queue.get_nowait()
            except queue.Empty:
                pass
            t.join(0.05)
            waited += 0.05
