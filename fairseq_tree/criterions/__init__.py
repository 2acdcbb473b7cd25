"""Criterions fairseq lacks: ``span_hinge_dependency`` (LAL parser)."""
from fairseq_tree.criterions import span_hinge_dependency  # noqa: F401  (registers the criterion)
