"""Evaluation: bracket F1 with EVALB rules, attachment scores, parsing CLI."""
