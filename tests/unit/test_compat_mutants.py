"""What importing the plugin changes outside it (fairseq_tree/compat.py), checked in this process: the exit hook
stops fairseq's prefetching thread even while it is blocked on a full queue and leaves every other thread alone,
fairseq's config conversion composes without hydra's warnings, and only the root logger fairseq left at DEBUG is
lowered. Bugs of one line that tests/integration/test_fairseq_compat.py let through (scripts/mutation/,
docs/development.md)."""

import itertools
import queue
import threading
import time

from fairseq.data.iterators import BackgroundConsumer

from fairseq_tree import compat


def test_the_exit_hook_stops_a_blocked_prefetch_thread_and_no_other():
    """fairseq's BufferedIterator thread over an endless source, its queue of 2 full (training stopped mid-epoch
    by --max-update): the hook ends it within its timeout; the main thread and a thread of the user's go on."""
    q = queue.Queue(2)
    prefetch = BackgroundConsumer(q, itertools.count(), None, None)
    prefetch.daemon = True
    prefetch.start()
    for _ in range(500):
        if q.full():
            break
        time.sleep(0.01)
    assert q.full() and prefetch.is_alive()
    other = threading.Event()
    user = threading.Thread(target=other.wait, daemon=True)
    user.start()
    try:
        t0 = time.monotonic()
        compat._join_prefetch_threads(timeout=20.0)
        assert not prefetch.is_alive() and time.monotonic() - t0 < 20.0
        assert user.is_alive() and not getattr(user, "_fairseq_tree_stop", False)
        assert not getattr(threading.main_thread(), "_fairseq_tree_stop", False)
    finally:
        other.set()
        user.join()


def test_fairseqs_config_conversion_composes_without_hydras_deprecation_warnings():
    """fairseq-train's and fairseq-generate's args -> hydra config (fairseq's convert_namespace_to_omegaconf, through
    the plugin's quiet wrappers of hydra's initialize and compose): hydra still finds fairseq's config folder from
    fairseq's own file, the flags land in the config, and none of hydra's five deprecation warnings is shown."""
    import warnings

    from fairseq import options
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    parser = options.get_training_parser()
    args = options.parse_args_and_arch(parser, ["data-bin", "--task", "translation", "--arch", "transformer",
                                                "--lr", "0.0005", "--max-tokens", "1234", "--cpu"])
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        cfg = convert_namespace_to_omegaconf(args)
    assert (cfg.task.data, cfg.model._name, cfg.dataset.max_tokens, cfg.common.cpu) == \
        ("data-bin", "transformer", 1234, True)
    import re

    assert [str(w.message) for w in seen if any(re.match(p, str(w.message)) for p in compat.HYDRA_DEPRECATIONS)] == []


def test_the_root_logger_fairseq_left_at_debug_goes_to_loglevel_and_no_other(monkeypatch):
    """fairseq's import-time basicConfig(level=DEBUG) leaves the root logger at DEBUG with one bare stderr handler:
    that one goes to LOGLEVEL (default INFO); a root logger the user set up (two handlers, a handler of their own,
    or another level) stays as it is."""
    import logging
    import sys

    root = logging.getLogger()
    saved = root.level, list(root.handlers)

    def setup(level, *handlers):
        root.handlers[:] = list(handlers)
        root.setLevel(level)

    def bare():
        h = logging.StreamHandler(sys.stderr)
        h.setFormatter(logging.Formatter(logging.BASIC_FORMAT))
        return h

    try:
        monkeypatch.delenv("LOGLEVEL", raising=False)
        for handlers, level, expected in [((bare(),), logging.DEBUG, logging.INFO),
                                          ((bare(), bare()), logging.DEBUG, logging.DEBUG),
                                          ((logging.StreamHandler(sys.stdout),), logging.DEBUG, logging.DEBUG),
                                          ((bare(),), logging.WARNING, logging.WARNING)]:
            setup(level, *handlers)
            compat.lower_fairseq_debug_root()
            assert root.level == expected, (handlers, level)
        monkeypatch.setenv("LOGLEVEL", "debug")
        setup(logging.DEBUG, bare())
        compat.lower_fairseq_debug_root()
        assert root.level == logging.DEBUG
    finally:
        root.handlers[:] = saved[1]
        root.setLevel(saved[0])


def test_only_hydras_deprecation_warnings_are_silenced():
    """The quiet wrapper hides hydra's five notices and nothing else: a user's own UserWarning raised while the
    wrapped call runs is still shown, and the filters are as they were after it."""
    import warnings

    def convert():
        warnings.warn("hydra.experimental.compose() is no longer experimental. Use hydra.compose()", stacklevel=1)
        warnings.warn("the data directory has no valid split", stacklevel=1)  # not hydra's: shown
        return 42

    before = list(warnings.filters)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert compat._without_hydra_deprecations(convert)() == 42
    assert [(w.category, str(w.message)) for w in seen] == [(UserWarning, "the data directory has no valid split")]
    assert warnings.filters == before


def test_the_old_torch_warning_is_for_torch_below_2_6_only(monkeypatch):
    """torch 2.6 made weights_only=True torch.load's default: from 2.6 on, nothing to warn about; before it, the
    plugin says that fairseq's own CLIs load with full pickle."""
    import warnings

    import torch

    for version, warned in (("2.5.1+cu121", True), ("2.6.0+cpu", False), ("2.13.0", False)):
        monkeypatch.setattr(torch, "__version__", version)
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            compat.apply()
        old = [str(w.message) for w in seen if "loads checkpoints with full pickle" in str(w.message)]
        assert old == ([f"fairseq-tree: torch {version} loads checkpoints with full pickle by default in fairseq's "
                        "own CLIs; use torch >= 2.6 for safe loading everywhere"] if warned else []), version
