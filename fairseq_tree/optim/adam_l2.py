"""``--optimizer adam_l2``: Adam with the weight decay as an L2 term of the gradient (``torch.optim.Adam``'s
``weight_decay``), as the StructFormer code trains (``torch.optim.Adam(..., eps=1e-9, weight_decay=1.2e-6)``).

fairseq's ``--optimizer adam`` decouples the decay (AdamW: p <- p - lr * wd * p beside the Adam step), so there a
decay of 1.2e-6 shrinks a weight by about 1e-9 of itself per update. Coupled, the term wd * p is added to the
gradient before Adam's normalisation: a weight whose loss gradient is 0 (the embedding row of a word that has
not been in a batch yet) moves by about lr toward 0 at every update, whatever wd is (m / sqrt(v) = sign(p) when the
gradient is wd * p alone). The two differ most for rare words' embeddings.
"""

import ast
from dataclasses import dataclass, field
from typing import Any, List

import torch
from fairseq.dataclass import FairseqDataclass
from fairseq.optim import FairseqOptimizer, register_optimizer
from omegaconf import II


@dataclass
class AdamL2Config(FairseqDataclass):
    adam_betas: Any = field(default=(0.9, 0.999), metadata={"help": "betas for Adam optimizer"})
    adam_eps: float = field(default=1e-8, metadata={"help": "epsilon for Adam optimizer"})
    weight_decay: float = field(default=0.0, metadata={"help": "L2 weight decay, added to the gradient (coupled)"})
    lr: List[float] = II("optimization.lr")


@register_optimizer("adam_l2", dataclass=AdamL2Config)
class AdamL2(FairseqOptimizer):
    """``torch.optim.Adam`` (coupled L2 weight decay) under fairseq's optimizer interface."""

    def __init__(self, cfg: AdamL2Config, params):
        super().__init__(cfg)
        self._optimizer = torch.optim.Adam(params, **self.optimizer_config)

    @property
    def optimizer_config(self):
        """The torch optimizer's arguments (fairseq overrides a checkpoint's with these when resuming)."""
        betas = self.cfg.adam_betas  # "(0.9, 0.999)" from the command line, a list from a config
        if isinstance(betas, str):
            betas = ast.literal_eval(betas)
        return {"lr": self.cfg.lr[0], "betas": tuple(betas), "eps": self.cfg.adam_eps,
                "weight_decay": self.cfg.weight_decay}
