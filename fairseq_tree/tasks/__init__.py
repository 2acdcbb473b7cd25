from fairseq_tree.tasks import tree_translation  # noqa: F401  (registers the task)
from fairseq_tree.tasks import constituency_parsing  # noqa: F401  (registers the task and its criterion)
from fairseq_tree.tasks import tree_induction  # noqa: F401  (registers the task)
from fairseq_tree.tasks import tree_classification  # noqa: F401  (registers the task and its criterion)
