"""The adapters that let the plugin run on the fairseq 0.12.2 release as on fairseq-fixed 0.12.3.1 / main. 0.12.2
does not import on Python 3.11, so each adapter is exercised here with 0.12.2's signatures and state-dict layout as
read from its source (tag v0.12.2; the lines are quoted). scripts/check_fairseq_0122.sh runs the real release on
Python 3.10."""

import argparse

import pytest
import torch
from fairseq.models.transformer import TransformerConfig
from fairseq.modules import SinusoidalPositionalEmbedding
from fairseq.modules.transformer_layer import TransformerEncoderLayerBase
from omegaconf import OmegaConf

from fairseq_tree.modules.fairseq_layers import (
    FAST_PATH_COPIES,
    PlainTransformerEncoderLayer,
    upgrade_positions_buffer,
)
from fairseq_tree.tasks.criterion_check import CriterionCheck
from fairseq_tree.utils.signatures import accepted


# v0.12.2 fairseq/criterions/__init__.py:      def build_criterion(cfg, task):
def build_criterion_0122(cfg, task):
    return cfg, task


# v0.12.2 fairseq/tasks/fairseq_task.py:       def build_criterion(self, cfg: DictConfig):
class Task0122:
    def build_criterion(self, cfg):
        return "built", cfg


# fairseq-fixed 0.12.3.1 / main:               def build_criterion(self, cfg: DictConfig, from_checkpoint=False):
class TaskMain:
    def build_criterion(self, cfg, from_checkpoint=False):
        return "built", cfg, from_checkpoint


def test_accepted_keeps_only_what_the_signature_takes():
    assert accepted(build_criterion_0122, from_checkpoint=True) == {}
    assert accepted(TaskMain().build_criterion, from_checkpoint=True) == {"from_checkpoint": True}
    assert accepted(lambda cfg, **kw: None, from_checkpoint=True) == {"from_checkpoint": True}


@pytest.mark.parametrize("base,expected", [(Task0122, ("built", "cross")), (TaskMain, ("built", "cross", True))])
def test_criterion_check_calls_either_base_signature(base, expected):
    class Task(CriterionCheck, base):
        COMPATIBLE_CRITERIA = ("cross",)
        cfg = argparse.Namespace(_name="task")

    cfg = argparse.Namespace(criterion="cross")
    out = Task().build_criterion(cfg, from_checkpoint=True)
    assert out[0] == "built" and out[1] is cfg and out[2:] == expected[2:]


def test_criterion_config_replaced_under_the_run_root():
    """The task's default criterion replaces the run's cross_entropy node (omegaconf 2.0 keeps the old node's type
    unless it is deleted first: the adapter deletes it on every version)."""
    from fairseq_tree.tasks.criterion_check import _config_of

    root = OmegaConf.create({"criterion": {"_name": "cross_entropy", "sentence_avg": False}, "optimization": {}})
    node = _config_of("masked_lm", root.criterion)
    assert root.criterion._name == "masked_lm" and node._name == "masked_lm"


def tiny_cfg():
    return TransformerConfig.from_namespace(argparse.Namespace(
        encoder_embed_dim=8, encoder_ffn_embed_dim=16, encoder_attention_heads=2, dropout=0.0,
        attention_dropout=0.0, activation_dropout=0.0, encoder_normalize_before=False, activation_fn="relu"))


def test_plain_layer_is_fairseqs_layer_without_the_fast_path_copies():
    """Same parameters, values and outputs as fairseq's layer here; a 0.12.2 state dict, which also holds the 8
    fast-path copies (v0.12.2 fairseq/modules/transformer_layer.py, TransformerEncoderLayerBase.__init__:
    self.in_proj_weight = torch.nn.Parameter(...) ... self.fc2_bias), loads strictly and changes nothing."""
    torch.manual_seed(0)
    ref = TransformerEncoderLayerBase(tiny_cfg()).eval()
    torch.manual_seed(0)
    plain = PlainTransformerEncoderLayer(tiny_cfg()).eval()
    assert [n for n, _ in plain.named_parameters()] == [n for n, _ in ref.named_parameters()]
    assert not set(FAST_PATH_COPIES) & {n for n, _ in plain.named_parameters()}
    x, pad = torch.randn(5, 2, 8), torch.zeros(2, 5, dtype=torch.bool)
    torch.testing.assert_close(plain(x, pad), ref(x, pad))
    state = dict(ref.state_dict(), **{name: torch.zeros(3) for name in FAST_PATH_COPIES})  # as 0.12.2 writes it
    plain.load_state_dict(state, strict=True)
    torch.testing.assert_close(plain(x, pad), ref(x, pad))


def test_positions_buffer_follows_this_fairseq():
    """v0.12.2 fairseq/modules/sinusoidal_positional_embedding.py: self.register_buffer("_float_tensor",
    torch.FloatTensor(1)) (persistent); main: no such buffer. The key is added or dropped to match."""
    pos = SinusoidalPositionalEmbedding(8, 1, 16)
    has = "_float_tensor" in pos.state_dict()
    from_0122 = {"encoder.embed_positions._float_tensor": torch.FloatTensor(1), "encoder.x": torch.ones(1)}
    from_main = {"encoder.x": torch.ones(1)}
    out = upgrade_positions_buffer(pos, dict(from_0122), "encoder")
    assert ("encoder.embed_positions._float_tensor" in out) == has and "encoder.x" in out
    out = upgrade_positions_buffer(pos, dict(from_main), "encoder")
    assert ("encoder.embed_positions._float_tensor" in out) == has
    assert upgrade_positions_buffer(None, dict(from_0122), "encoder") == from_0122  # learned positions: untouched


def test_classification_task_has_no_target_dictionary():
    """v0.12.2 FairseqTask.target_dictionary raises NotImplementedError, which FairseqCriterion.__init__'s
    hasattr(task, "target_dictionary") does not catch: the task answers None."""
    from fairseq_tree.tasks.tree_classification import TreeClassificationTask

    assert TreeClassificationTask.target_dictionary.fget(None) is None
