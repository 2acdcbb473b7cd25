"""Criterions fairseq lacks: ``span_hinge_dependency`` (LAL parser), ``tree_classification``."""
from fairseq_tree.criterions import (
    span_hinge_dependency,  # noqa: F401  (registers the criterion)
    tree_classification,  # noqa: F401  (registers the criterion)
)
