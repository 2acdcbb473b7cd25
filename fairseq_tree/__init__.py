"""fairseq-tree: a fairseq ``--user-dir`` plugin that puts syntax trees into Transformers.

Importing the package applies the torch/numpy compatibility shims (:mod:`fairseq_tree.compat`) and
registers the plugin's tasks, models and criterions with fairseq; nothing else happens at import.
"""

from fairseq_tree import compat as _compat

_compat.apply()

from fairseq_tree import criterions, models, tasks  # noqa: E402,F401  (registration)

__version__ = "0.1.0"
