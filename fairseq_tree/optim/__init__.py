"""Optimizers fairseq lacks, registered with fairseq on import (``--optimizer NAME``)."""

from fairseq_tree.optim import adam_l2  # noqa: F401  (registration)
