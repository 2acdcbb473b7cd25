"""Criterions fairseq lacks: ``span_hinge_dependency`` (LAL parser)."""
