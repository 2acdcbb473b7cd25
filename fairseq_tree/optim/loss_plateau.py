"""``--lr-scheduler loss_plateau``: the learning rate halved when the validation loss stops falling, as the
StructFormer code trains (``torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, 'min', 0.5, patience=2,
threshold=0)``, stepped at the end of each epoch on that epoch's validation loss; its ``main.py``).

fairseq's own ``reduce_lr_on_plateau`` differs where it matters for the induction recipes: it steps on
``--best-checkpoint-metric`` (there wsj22 UF1, maximised), not on the loss; its checkpoint keeps ``best`` and
``last_epoch`` but not the count of epochs without improvement, so a resume starts that count afresh; and its
threshold defaults to 1e-4. This scheduler steps on the loss (recorded by the task: side channel 4 of
:mod:`fairseq_tree.side_channels`), keeps its counters in the checkpoint, and defaults to the code's values.
Validate at the end of every epoch (``--validate-interval 1``), as their loop does: an epoch that trained and
ended without a validation raises rather than leave the rate silently unchanged.
"""

from dataclasses import dataclass, field
from typing import List

import torch
from fairseq.dataclass import FairseqDataclass
from fairseq.optim.lr_scheduler import FairseqLRScheduler, register_lr_scheduler
from omegaconf import II

from fairseq_tree.side_channels import VALIDATION_LOSSES

#: the torch scheduler's state that a checkpoint carries (its settings come from the command line)
COUNTERS = ("best", "num_bad_epochs", "last_epoch", "cooldown_counter", "_last_lr")


@dataclass
class LossPlateauConfig(FairseqDataclass):
    lr_shrink: float = field(default=0.5, metadata={"help": "factor of each reduction"})
    lr_patience: int = field(default=2, metadata={
        "help": "epochs without a lower validation loss that are tolerated: the rate is reduced at the next one"})
    lr_threshold: float = field(default=0.0, metadata={
        "help": "relative decrease that counts as lower (torch's threshold, mode 'rel'; 0: any decrease)"})
    lr: List[float] = II("optimization.lr")
    valid_subset: str = II("dataset.valid_subset")


@register_lr_scheduler("loss_plateau", dataclass=LossPlateauConfig)
class LossPlateau(FairseqLRScheduler):
    """torch's ``ReduceLROnPlateau`` ('min') on each epoch's validation loss."""

    def __init__(self, cfg: LossPlateauConfig, optimizer):
        super().__init__(cfg, optimizer)
        if len(cfg.lr) > 1:
            raise ValueError("--lr-scheduler loss_plateau takes one --lr")
        if "," in str(cfg.valid_subset):
            raise ValueError(f"--lr-scheduler loss_plateau steps on one validation's loss: --valid-subset "
                             f"{cfg.valid_subset} names several")
        self.plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(
            self.optimizer.optimizer, mode="min", factor=cfg.lr_shrink, patience=cfg.lr_patience,
            threshold=cfg.lr_threshold)
        self.num_updates = 0
        self.started_at = None  # the update count this process started training from (a resume: the checkpoint's)
        self.epoch = None  # the epoch whose end the scheduler last stepped at (None: none yet)
        self.stepped_at = None  # and that step's update count
        self.pending = None  # a resumed checkpoint's loss not yet stepped on

    def state_dict(self):
        """The torch scheduler's counters, the epoch of its last step, and a validation loss it has not stepped on
        yet: fairseq saves an epoch's last checkpoint after that epoch's validation but before its ``lr_step``."""
        full = self.plateau.state_dict()
        state = {k: full[k] for k in COUNTERS}
        pending = VALIDATION_LOSSES.latest()
        if pending is not None and pending[0] == self.num_updates and self.stepped_at != self.num_updates:
            state["pending_loss"] = pending[1]
        return {**state, "epoch": self.epoch}

    def load_state_dict(self, state_dict):
        state = dict(state_dict)
        self.epoch, self.pending = state.pop("epoch", None), state.pop("pending_loss", None)
        self.plateau.load_state_dict({**self.plateau.state_dict(), **state})
        self.optimizer.set_lr(state["_last_lr"][0])
        self.started_at = None  # fairseq sets the checkpoint's update count next

    def step_update(self, num_updates):
        if self.started_at is None:
            self.started_at = num_updates
        self.num_updates = num_updates
        return self.optimizer.get_lr()

    def step(self, epoch, val_loss=None):
        """At the end of an epoch (``val_loss``: fairseq's best-checkpoint metric, None without a validation),
        and when training starts or resumes (``epoch``: the one about to train or go on)."""
        if val_loss is not None:
            self._step(epoch, VALIDATION_LOSSES.at(self.num_updates))
        elif self.started_at is not None and self.num_updates > self.started_at:
            raise RuntimeError(f"--lr-scheduler loss_plateau: epoch {epoch} ended at update {self.num_updates} "
                               "without a validation; validate at the end of every epoch (--validate-interval 1)")
        elif self.pending is not None and (self.epoch or 0) < epoch - 1:
            self._step(epoch - 1, self.pending)  # resumed after an epoch's last checkpoint: its step is still due
        self.pending = None
        return self.optimizer.get_lr()

    def _step(self, epoch: int, loss: float) -> None:
        self.plateau.step(loss)
        self.epoch, self.stepped_at = epoch, self.num_updates
