"""Initialisations shared by the models' authors'-code variants (``--ca-code-init``, ``--sf-code-init``)."""

from __future__ import annotations

import torch.nn as nn


def xavier_per_block_(linear: nn.Linear) -> None:
    """xavier_uniform over each [in, in] block of a fused projection (rows split by ``in_features``), as separate
    Linear(d, d) maps would be: a fused [3d, d] q/k/v map gets sqrt(2) the spread of xavier over it whole
    (bound sqrt(6 / (d + d)) against sqrt(6 / (3d + d))). Biases are left as they are."""
    for block in linear.weight.data.split(linear.in_features):
        nn.init.xavier_uniform_(block)
