"""fairseq-tree: a fairseq ``--user-dir`` plugin that puts syntax trees into Transformers.

Importing the package registers the plugin's tasks, models and criterions with fairseq and makes the few changes
outside itself that :mod:`fairseq_tree.compat` lists (a checkpoint allowlist, a clearer refusal, a numpy alias, an
exit hook); it switches no safety off and leaves fairseq's own tasks' batching alone.
"""

import logging as _logging


def _drop_tensorboardx_nag(record) -> bool:
    return "install tensorboardX" not in record.getMessage()


# fairseq's text_to_speech tasks call logging.basicConfig(INFO) at import and then ask for tensorboardX, which
# fairseq-tree does not use: every tool of ours printed that line first. Dropped here, for that one message of
# that one logger (compat.py, item 5), before anything imports fairseq.
for _name in ("fairseq.tasks.text_to_speech", "fairseq.tasks.frm_text_to_speech"):
    _logging.getLogger(_name).addFilter(_drop_tensorboardx_nag)

from fairseq_tree import compat as _compat  # noqa: E402

_compat.apply()

from fairseq_tree import criterions, models, tasks  # noqa: E402,F401  (registration)

__version__ = "0.2.0"
