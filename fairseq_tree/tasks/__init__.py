from fairseq_tree.tasks import (
    constituency_parsing,  # noqa: F401  (registers the task and its criterion)
    positions_matched_translation,  # noqa: F401  (registers the task)
    tree_classification,  # noqa: F401  (registers the task and its criterion)
    tree_induction,  # noqa: F401  (registers the task)
    tree_translation,  # noqa: F401  (registers the task)
)
