"""fairseq-tree: a fairseq ``--user-dir`` plugin that puts syntax trees into Transformers.

Importing the package registers the plugin's tasks, models and criterions with fairseq and makes the few changes
outside itself that :mod:`fairseq_tree.compat` lists (a checkpoint allowlist, a clearer refusal, a numpy alias, an
exit hook); it switches no safety off and leaves fairseq's own tasks' batching alone.
"""

from fairseq_tree import compat as _compat

_compat.apply()

from fairseq_tree import criterions, models, tasks  # noqa: E402,F401  (registration)

__version__ = "0.2.0"
