"""fairseq-tree: a fairseq ``--user-dir`` plugin that puts syntax trees into Transformers.

Importing the package registers the plugin's tasks, models, criterions and optimizer with fairseq and makes the
few changes outside itself that :mod:`fairseq_tree.compat` lists (a checkpoint allowlist, a clearer refusal, a numpy
alias, an exit hook, fairseq's logging and hydra noise); it switches no safety off and leaves fairseq's own tasks'
batching alone. (``fairseq-tree-user-dir`` lives outside the package, in ``fairseq_tree_user_dir``, so that it runs
none of this.)
"""

import logging as _logging
import sys as _sys


def _drop_tensorboardx_nag(record) -> bool:
    return "install tensorboardX" not in record.getMessage()


def _import_fairseq_leaving_the_root_logger_alone() -> None:
    """``import fairseq`` without the root-logger setup two of its modules do at import (``logging.basicConfig``:
    DEBUG in models/wav2vec/wav2vec2_classification.py, INFO in tasks/text_to_speech.py), which gave every later
    ``basicConfig`` (ours, a user's) no effect and printed every library's DEBUG lines (matplotlib's font search:
    hundreds). ``basicConfig`` configures only a root logger without handlers: a NullHandler held during the import
    makes theirs no-ops, and leaves the root logger as the process had it."""
    root = _logging.getLogger()
    guard = _logging.NullHandler()
    root.addHandler(guard)
    try:
        import fairseq  # noqa: F401
    finally:
        root.removeHandler(guard)


# fairseq's text_to_speech tasks ask for tensorboardX at import (INFO), which fairseq-tree does not use: that one
# message of those two loggers is dropped (compat.py, item 5), for a process whose own logging shows INFO.
for _name in ("fairseq.tasks.text_to_speech", "fairseq.tasks.frm_text_to_speech"):
    _logging.getLogger(_name).addFilter(_drop_tensorboardx_nag)

# fairseq's own CLIs (fairseq-train, -generate, -interactive with --user-dir) import fairseq before the plugin
_FAIRSEQ_IMPORTED_FIRST = "fairseq" in _sys.modules
if not _FAIRSEQ_IMPORTED_FIRST:
    _import_fairseq_leaving_the_root_logger_alone()

from fairseq_tree import compat as _compat  # noqa: E402

_compat.apply(fairseq_imported_first=_FAIRSEQ_IMPORTED_FIRST)

from fairseq_tree import criterions, models, optim, tasks  # noqa: E402,F401  (registration)

__version__ = "0.2.0"
