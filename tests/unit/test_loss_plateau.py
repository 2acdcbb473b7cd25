"""``--lr-scheduler loss_plateau`` (the StructFormer code's ReduceLROnPlateau on each epoch's validation loss):
learning rates against sequences worked by hand, the checkpoint state across a resume, and the loud failures.
fairseq-train end to end: test_tree_induction.py::test_loss_plateau_halves_on_the_loss_and_resumes_exactly."""

import pytest
import torch

from fairseq_tree.optim.adam_l2 import AdamL2, AdamL2Config
from fairseq_tree.optim.loss_plateau import LossPlateau, LossPlateauConfig
from fairseq_tree.side_channels import VALIDATION_LOSSES


def scheduler(lr=1e-3, **kwargs):
    """A scheduler over a real fairseq optimizer, as fairseq builds it (its first step_update(0))."""
    optimizer = AdamL2(AdamL2Config(lr=[lr]), [torch.nn.Parameter(torch.zeros(2))])
    s = LossPlateau(LossPlateauConfig(lr=[lr], valid_subset="valid", **kwargs), optimizer)
    s.step_update(0)
    s.step(1, None)  # fairseq's call when training starts
    return s


def epoch_end(s, epoch, loss, updates_per_epoch=10):
    """What fairseq-train does at the end of epoch ``epoch``: the updates, the validation (the task records its
    loss), then lr_step with the best-checkpoint metric (a UF1 here: the scheduler must not use it) -> lr."""
    n = epoch * updates_per_epoch
    assert s.step_update(n) == s.optimizer.get_lr()  # fairseq logs the rate step_update returns
    VALIDATION_LOSSES.record(n, loss)
    return s.step(epoch, val_loss=100.0 - epoch)


# by hand, patience 2 (the code's): a loss counts as lower only below the best so far (threshold 0); the third
# epoch in a row without one halves the rate and starts the count again
LOSSES = [5.0, 4.0, 4.0, 4.5, 4.2, 3.9, 3.9, 3.95, 4.0, 3.8]
RATES = [1e-3, 1e-3, 1e-3, 1e-3, 5e-4, 5e-4, 5e-4, 5e-4, 2.5e-4, 2.5e-4]


def test_loss_plateau_halves_after_three_epochs_without_a_lower_validation_loss():
    s = scheduler()
    assert s.optimizer.get_lr() == 1e-3
    assert [epoch_end(s, e, loss) for e, loss in enumerate(LOSSES, 1)] == pytest.approx(RATES)


def test_loss_plateau_patience_shrink_and_relative_threshold():
    # patience 0, shrink 0.1, threshold 5%: lower means below 0.95 x best. 4.9 and 4.8 are not (best 5.0: 4.75),
    # 4.7 is
    s = scheduler(lr_patience=0, lr_shrink=0.1, lr_threshold=0.05)
    rates = [epoch_end(s, e, loss) for e, loss in enumerate([5.0, 4.9, 4.8, 4.7], 1)]
    assert rates == pytest.approx([1e-3, 1e-4, 1e-5, 1e-5])


def test_loss_plateau_resumes_with_its_count_and_the_loss_fairseq_saved_before_stepping():
    """fairseq saves an epoch's last checkpoint after its validation, before lr_step: the resumed scheduler
    steps on that loss when fairseq resumes into the next epoch, and not after a mid-epoch checkpoint."""
    s = scheduler()
    for e, loss in enumerate(LOSSES[:3], 1):
        epoch_end(s, e, loss)  # best 4.0, one epoch without a lower loss
    s.step_update(40)
    VALIDATION_LOSSES.record(40, LOSSES[3])  # epoch 4's validation (4.5: the second without); saved here
    state = s.state_dict()
    assert state["num_bad_epochs"] == 1 and state["pending_loss"] == 4.5 and state["epoch"] == 3

    # fairseq resumes into epoch 5: a new scheduler, its state, the checkpoint's update count, lr_step(5)
    r = scheduler()
    r.load_state_dict(state)
    r.step_update(40)
    assert r.step(5, None) == pytest.approx(1e-3) and r.step(5, None) == pytest.approx(1e-3)  # fairseq calls twice
    assert {k: r.state_dict()[k] for k in ("best", "num_bad_epochs", "epoch")} == {"best": 4.0, "num_bad_epochs": 2,
                                                                                    "epoch": 4}
    rates = [epoch_end(r, e, loss) for e, loss in enumerate(LOSSES[4:], 5)]
    assert rates == pytest.approx(RATES[4:])  # 4.2 at epoch 5: the third without a lower loss, as uninterrupted

    # the same checkpoint read as a mid-epoch one (fairseq resumes within epoch 4): the loss is not an epoch's
    m = scheduler()
    m.load_state_dict(state)
    m.step_update(40)
    m.step(4, None)
    assert m.state_dict()["num_bad_epochs"] == 1 and m.state_dict()["epoch"] == 3


def test_loss_plateau_resumed_after_the_first_epochs_checkpoint_steps_on_its_loss():
    # patience 0: epoch 1 sets the best (5.0), epoch 2's 5.0 is not lower and halves the rate, as uninterrupted
    s = scheduler(lr_patience=0)
    s.step_update(10)
    VALIDATION_LOSSES.record(10, 5.0)  # epoch 1's validation; its checkpoint is saved here, before any step
    r = scheduler(lr_patience=0)
    r.load_state_dict(s.state_dict())
    r.step_update(10)
    r.step(2, None)
    assert epoch_end(r, 2, 5.0) == pytest.approx(5e-4)


def test_loss_plateau_saves_only_a_loss_it_has_not_stepped_on():
    s = scheduler()
    epoch_end(s, 1, 5.0)
    assert "pending_loss" not in s.state_dict()  # stepped on at the epoch's end
    s.step_update(15)
    assert "pending_loss" not in s.state_dict()  # a mid-epoch checkpoint without a validation of its own
    VALIDATION_LOSSES.record(15, 4.0)
    assert s.state_dict()["pending_loss"] == 4.0  # a mid-epoch validation's (resuming within epoch 2 skips it)


def test_loss_plateau_options_and_defaults_are_the_codes():
    """fairseq-train's options for the scheduler, with their help, defaulting to the code's ReduceLROnPlateau
    ('min', 0.5, patience=2, threshold=0)."""
    from fairseq import options

    argv = ["data", "--task", "tree_induction", "--arch", "structformer_tiny", "--lr-scheduler", "loss_plateau"]
    args = options.parse_args_and_arch(options.get_training_parser(), argv)
    assert (args.lr_shrink, args.lr_patience, args.lr_threshold) == (0.5, 2, 0.0)
    assert options.parse_args_and_arch(options.get_training_parser(), argv + ["--lr-patience", "5"]).lr_patience == 5
    parser = options.get_training_parser()
    options.parse_args_and_arch(parser, argv, parse_known=True)  # adds the scheduler's options to the parser
    text = " ".join(parser.format_help().split())
    assert "--lr-shrink LR_SHRINK factor of each reduction" in text and "relative decrease that counts" in text


def test_loss_plateau_restores_a_reduced_rate():
    s = scheduler()
    for e, loss in enumerate(LOSSES[:5], 1):
        epoch_end(s, e, loss)
    r = scheduler()
    r.load_state_dict(s.state_dict())
    assert r.optimizer.get_lr() == pytest.approx(5e-4)


def test_loss_plateau_fails_loudly():
    s = scheduler()
    s.step_update(10)
    with pytest.raises(RuntimeError, match=r"epoch 1 ended at update 10 without a validation.*--validate-interval 1"):
        s.step(1, None)
    VALIDATION_LOSSES.record(10, 4.0)
    s.step_update(20)
    with pytest.raises(RuntimeError, match="no validation loss recorded at update 20"):
        s.step(2, val_loss=50.0)  # a stale loss (the task did not record this validation's)
    optimizer = AdamL2(AdamL2Config(lr=[1e-3]), [torch.nn.Parameter(torch.zeros(2))])
    with pytest.raises(ValueError, match="valid,valid1 names several"):
        LossPlateau(LossPlateauConfig(lr=[1e-3], valid_subset="valid,valid1"), optimizer)
    with pytest.raises(ValueError, match="one --lr"):
        LossPlateau(LossPlateauConfig(lr=[1e-3, 5e-4], valid_subset="valid"), optimizer)
