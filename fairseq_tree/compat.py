"""Shims that let fairseq-fixed 0.12.3 run on torch >= 2.6 and numpy 2, applied when the plugin loads.

* torch >= 2.6 loads with ``weights_only=True`` unless told otherwise, and fairseq checkpoints pickle
  an ``argparse.Namespace``/``DictConfig``, so ``fairseq-generate``, ``fairseq-interactive`` and a
  resumed ``fairseq-train`` fail. torch reads ``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD`` at each call and it
  only applies where the caller did not pass ``weights_only`` (fairseq's calls); callers that ask for
  ``weights_only=True`` explicitly (stanza) keep it. As before torch 2.6, only load trusted checkpoints.
* numpy 2 removed ``np.compat``; fairseq still uses ``np.compat.long`` in ``TokenBlockDataset``
  (``--sample-break-mode eos``) and ``LanguagePairDataset(num_buckets > 0)``.
"""

import os
import types
import warnings


def apply() -> None:
    os.environ.setdefault("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
    warnings.filterwarnings("ignore", message="Environment variable TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD")

    import numpy as np

    try:
        np.compat.long  # noqa: B018
    except AttributeError:
        np.compat = types.SimpleNamespace(long=np.int64)
