"""fairseq's encoder layer and sinusoidal positions as the plugin uses them, the same under fairseq 0.12.2 and
fairseq-fixed 0.12.3.1 / main (read from both sources):

* 0.12.2's ``TransformerEncoderLayerBase.__init__`` adds 8 zero-initialised copies of its weights for the
  "BetterTransformer" fast path (``in_proj_weight`` ... ``fc2_bias``): never trained, they double a small model's
  parameter count, make DDP fail without ``--find-unused-parameters``, appear as unexpected keys in the other
  version, and its ``_load_from_state_dict`` switches eval to a kernel that gives wrong outputs for post-norm
  ReLU layers. :class:`PlainTransformerEncoderLayer` drops them and loads as ``nn.Module`` does.
* 0.12.2's ``SinusoidalPositionalEmbedding`` keeps a persistent ``_float_tensor`` buffer, main's does not:
  :func:`upgrade_positions_buffer` adds or drops the key so a checkpoint of either version loads in the other.
"""

import torch
from fairseq.distributed import fsdp_wrap
from fairseq.models.transformer import TransformerConfig, TransformerEncoder
from fairseq.modules import SinusoidalPositionalEmbedding
from fairseq.modules.checkpoint_activations import checkpoint_wrapper
from fairseq.modules.transformer_layer import TransformerEncoderLayerBase
from torch import nn

#: the parameters 0.12.2's encoder layer adds for its fast path (fairseq/modules/transformer_layer.py, v0.12.2)
FAST_PATH_COPIES = ("in_proj_weight", "in_proj_bias", "out_proj_weight", "out_proj_bias", "fc1_weight", "fc1_bias",
                    "fc2_weight", "fc2_bias")


class PlainTransformerEncoderLayer(TransformerEncoderLayerBase):
    """fairseq's post/pre-norm encoder layer without 0.12.2's fast-path copies (a no-op on main). ``cfg``: a
    ``TransformerConfig`` or the flat namespace fairseq's ``TransformerEncoderLayer(args)`` takes."""

    def __init__(self, cfg, return_fc: bool = False):
        super().__init__(TransformerConfig.from_namespace(cfg), return_fc=return_fc)
        for name in FAST_PATH_COPIES:
            self._parameters.pop(name, None)

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        for name in FAST_PATH_COPIES:  # a 0.12.2 checkpoint holds them
            state_dict.pop(prefix + name, None)
        nn.Module._load_from_state_dict(self, state_dict, prefix, *args, **kwargs)


class PlainTransformerEncoder(TransformerEncoder):
    """fairseq's ``TransformerEncoder`` built of :class:`PlainTransformerEncoderLayer` (its checkpoint and FSDP
    wrapping kept)."""

    def build_encoder_layer(self, args):
        cfg = TransformerConfig.from_namespace(args)  # TransformerEncoder hands over its cfg or the args
        layer = PlainTransformerEncoderLayer(cfg, return_fc=self.return_fc)
        if cfg.checkpoint_activations:
            layer = checkpoint_wrapper(layer, offload_to_cpu=cfg.offload_activations)
        # as fairseq: a checkpointed layer is always FSDP-wrapped, whatever its size
        return fsdp_wrap(layer, min_num_params=cfg.min_params_to_wrap if not cfg.checkpoint_activations else 0)


def upgrade_positions_buffer(embed_positions, state_dict: dict, name: str) -> dict:
    """Add (0.12.2) or drop (main) ``{name}.embed_positions._float_tensor`` as this fairseq's sinusoidal positions
    expect, so checkpoints load across the two versions; other positions are left alone."""
    if isinstance(embed_positions, SinusoidalPositionalEmbedding):
        key = f"{name}.embed_positions._float_tensor" if name else "embed_positions._float_tensor"
        if "_float_tensor" in embed_positions.state_dict():
            state_dict.setdefault(key, torch.FloatTensor(1))
        else:
            state_dict.pop(key, None)
    return state_dict


__all__ = ["FAST_PATH_COPIES", "PlainTransformerEncoder", "PlainTransformerEncoderLayer", "upgrade_positions_buffer"]
