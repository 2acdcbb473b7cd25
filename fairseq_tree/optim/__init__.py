"""Optimizers and learning-rate schedulers fairseq lacks, registered with fairseq on import (``--optimizer NAME``,
``--lr-scheduler NAME``)."""

from fairseq_tree.optim import adam_l2, loss_plateau  # noqa: F401  (registration)
