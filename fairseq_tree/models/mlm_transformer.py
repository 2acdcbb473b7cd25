"""``mlm_transformer``: the plain masked-LM Transformer baseline of the ``tree_induction`` task, the same
network as ``constituent_transformer`` without the constituent prior, so that comparisons are like for like.

Same embeddings (token embeddings x sqrt(d) + sinusoidal positions, N(0, d^-1/2) init with a zero pad row,
dropout), same blocks (pre-LN residual blocks and a final LayerNorm by default, ``--encoder-post-norm`` for the
post-LN block; GELU FFN), same initialisation (xavier-uniform weights, zero biases: fairseq's q/k/v gain
1/sqrt(2) on d x d is the same distribution as xavier on the joint 3d x d map of constituent_transformer), same
RoBERTa masked-LM head tied to the token embeddings. The blocks are fairseq's own
:class:`fairseq.modules.TransformerEncoderLayer` (``F.multi_head_attention_forward``, the fast attention path).

Attention masking:

* default: a standard encoder, padding excluded with ``key_padding_mask`` (BOS and EOS are ordinary tokens);
* ``--word-only-attention``: the mask of ``constituent_transformer`` (a word attends to the words of its sentence
  only, BOS/EOS/pad attend to themselves only), passed as a per-sentence ``attn_mask`` [B*H, T, T]. With it the
  model is exactly ``constituent_transformer --no-constituent-attention`` (same parameters up to renaming,
  same outputs), at the cost of a B*H*T*T mask.

The parameter count equals that of ``constituent_transformer --no-constituent-attention``, i.e. that of
``constituent_transformer`` minus its link maps (L (2 d^2 + 2 d) without ``--ca-own-norm``).

Archs: ``mlm_transformer`` / ``_small`` / ``_tiny`` as the ``constituent_transformer`` ones; ``mlm_transformer_sf`` /
``_sf_small`` as ``structformer`` / ``_small`` (L = 8, ReLU FFN without activation dropout).

The model induces no structure: it has no ``induce`` (``hasattr(model, 'induce')`` is False, so the
``tree_induction`` task skips parsing; asking for it raises an AttributeError that says so).
"""

from __future__ import annotations

import argparse

import torch
import torch.nn as nn
from fairseq.models import register_model, register_model_architecture
from torch import Tensor

from fairseq_tree.models.architecture import set_default
from fairseq_tree.models.masked_lm_encoder import MaskedLMEncoder, MaskedLMModel, add_masked_lm_args
from fairseq_tree.modules.constituent_attention import structure_masks
from fairseq_tree.modules.fairseq_layers import PlainTransformerEncoderLayer


def _layer_args(args) -> argparse.Namespace:
    """The namespace fairseq's TransformerEncoderLayer reads (TransformerConfig.from_namespace)."""
    la = argparse.Namespace(**vars(args))
    la.encoder_normalize_before = not args.encoder_post_norm
    return la


class MLMTransformerEncoder(MaskedLMEncoder):
    def build_structure(self, args) -> None:
        self.num_heads = args.encoder_attention_heads
        self.word_only = bool(args.word_only_attention)

    def build_layer(self, args, index: int) -> nn.Module:
        return PlainTransformerEncoderLayer(_layer_args(args))

    def init_layers(self) -> None:
        # constituent_transformer's init: xavier weights (fairseq's q/k/v gain already matches), zero biases
        for layer in self.layers:
            for m in (layer.fc1, layer.fc2):
                nn.init.xavier_uniform_(m.weight)
            for m in (layer.fc1, layer.fc2, layer.self_attn.q_proj, layer.self_attn.k_proj,
                      layer.self_attn.v_proj, layer.self_attn.out_proj):
                nn.init.zeros_(m.bias)

    def _masks(self, src_tokens: Tensor, dtype: torch.dtype):
        """-> (key_padding_mask [B, T] bool or None, attn_mask [B*H, T, T] (1 = blocked) or None)."""
        if not self.word_only:
            pad = src_tokens.eq(self.pad)
            return (pad if pad.any() else None), None
        _, _, allowed = structure_masks(src_tokens, self.bos, self.eos, self.pad)
        B, T = src_tokens.shape
        # no key_padding_mask here: a pad query may see itself only, a fully masked row would give NaN
        blocked = (~allowed).to(dtype)[:, None].expand(B, self.num_heads, T, T).reshape(B * self.num_heads, T, T)
        return None, blocked

    def extract_features(self, src_tokens: Tensor, return_all_hiddens: bool = False):
        """src_tokens [B, T] -> (x [B, T, d], extra) with extra['word_mask'] [B, T] (not BOS/EOS/pad) and, if
        asked, extra['inner_states'] (list of [B, T, d], embeddings first)."""
        x = self.embed(src_tokens)
        inner = [x] if return_all_hiddens else None
        key_padding_mask, attn_mask = self._masks(src_tokens, x.dtype)
        x = x.transpose(0, 1)  # fairseq layers: [T, B, d]
        for layer in self.layers:
            x = layer(x, key_padding_mask, attn_mask=attn_mask)
            if inner is not None:
                inner.append(x.transpose(0, 1))
        x = x.transpose(0, 1)
        if self.final_norm is not None:
            x = self.final_norm(x)
        word = src_tokens.ne(self.bos) & src_tokens.ne(self.eos) & src_tokens.ne(self.pad)
        return x, {"inner_states": inner, "word_mask": word}


@register_model("mlm_transformer")
class MLMTransformerModel(MaskedLMModel):
    """Plain masked-LM Transformer. ``forward`` -> (logits [B, T, V] or [M, V] with ``masked_tokens``, extra)."""

    ENCODER = MLMTransformerEncoder
    BASE_ARCH = "mlm_transformer"

    @staticmethod
    def add_args(parser):
        add_masked_lm_args(parser)
        a = parser.add_argument
        a("--encoder-post-norm", action="store_true",
          help="post-LN blocks (original Transformer); default pre-LN + final LayerNorm (as constituent_transformer)")
        a("--word-only-attention", action="store_true",
          help="constituent_transformer's mask: a word attends to its sentence's words only, BOS/EOS/pad to "
               "themselves (= constituent_transformer --no-constituent-attention); default: key padding mask only")

    def __getattr__(self, name):
        # no induce(): ``hasattr(model, "induce")`` is False (the tree_induction task skips parsing), and a
        # direct call says why
        if name == "induce":
            raise AttributeError(
                "mlm_transformer is the plain masked-LM baseline and induces no structure (no induce()); use "
                "constituent_transformer or structformer for tree induction")
        return super().__getattr__(name)


def build_standalone(dictionary, arch: str = "mlm_transformer_small", **overrides) -> MLMTransformerModel:
    """Build the model without a task (benchmarks, notebooks): ``dictionary`` a fairseq Dictionary (its bos/eos/pad
    define the layout), ``arch`` one of the registered architectures, ``overrides`` argument values
    (e.g. ``encoder_layers=4, word_only_attention=True``)."""
    return MLMTransformerModel.build_standalone(dictionary, arch, **overrides)


@register_model_architecture("mlm_transformer", "mlm_transformer")
def mlm_transformer_base(args):
    """The size of constituent_transformer (Tree Transformer Section 7.1): L = 10, d = 512, 8 heads, FFN 2048,
    dropout 0.1."""
    for name, value in (("encoder_embed_dim", 512), ("encoder_layers", 10), ("encoder_attention_heads", 8),
                        ("encoder_ffn_embed_dim", 2048), ("dropout", 0.1), ("attention_dropout", 0.1),
                        ("activation_dropout", 0.1), ("activation_fn", "gelu"), ("max_positions", 512)):
        set_default(args, name, value)
    for flag in ("encoder_learned_pos", "encoder_post_norm", "word_only_attention"):
        set_default(args, flag, False)


@register_model_architecture("mlm_transformer", "mlm_transformer_small")
def mlm_transformer_small(args):
    """CPU experiments, as constituent_transformer_small: d = 256, L = 6, 4 heads, FFN 1024."""
    for name, value in (("encoder_embed_dim", 256), ("encoder_layers", 6), ("encoder_attention_heads", 4),
                        ("encoder_ffn_embed_dim", 1024)):
        set_default(args, name, value)
    mlm_transformer_base(args)


@register_model_architecture("mlm_transformer", "mlm_transformer_tiny")
def mlm_transformer_tiny(args):
    """Tests, as constituent_transformer_tiny: d = 32, L = 3, 2 heads, FFN 64, no dropout."""
    for name, value in (("encoder_embed_dim", 32), ("encoder_layers", 3), ("encoder_attention_heads", 2),
                        ("encoder_ffn_embed_dim", 64), ("dropout", 0.0), ("attention_dropout", 0.0),
                        ("activation_dropout", 0.0), ("max_positions", 256)):
        set_default(args, name, value)
    mlm_transformer_base(args)


@register_model_architecture("mlm_transformer", "mlm_transformer_sf")
def mlm_transformer_sf(args):
    """As structformer: L = 8, d = 512, 8 heads, FFN 2048, ReLU FFN without activation dropout."""
    for name, value in (("encoder_embed_dim", 512), ("encoder_layers", 8), ("encoder_attention_heads", 8),
                        ("encoder_ffn_embed_dim", 2048), ("activation_fn", "relu"), ("activation_dropout", 0.0)):
        set_default(args, name, value)
    mlm_transformer_base(args)


@register_model_architecture("mlm_transformer", "mlm_transformer_sf_small")
def mlm_transformer_sf_small(args):
    """As structformer_small: L = 8, d = 256, 4 heads, FFN 1024 (ReLU, no activation dropout)."""
    for name, value in (("encoder_embed_dim", 256), ("encoder_layers", 8), ("encoder_attention_heads", 4),
                        ("encoder_ffn_embed_dim", 1024)):
        set_default(args, name, value)
    mlm_transformer_sf(args)
