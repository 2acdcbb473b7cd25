"""What importing the plugin changes outside it (fairseq_tree/compat.py), checked in this process: the exit hook
stops fairseq's prefetching thread even while it is blocked on a full queue, and leaves every other thread alone.
A bug of one line that tests/integration/test_fairseq_compat.py let through (scripts/mutation/,
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
