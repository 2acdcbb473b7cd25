"""The masked-LM skeleton shared by ``constituent_transformer``, ``structformer`` and ``mlm_transformer``.

Token layout of the ``tree_induction`` task: ``<s> w_1 .. w_n </s> <pad>..`` [B, T]. The encoder embeds tokens
(normal(0, d^-1/2) init, ``--embed-init xavier`` / ``uniform`` as the authors' Tree Transformer / StructFormer
code; pad row 0; scaled by sqrt(d)
unless ``--no-scale-embedding``) and positions, runs a stack of layers, an optional final LayerNorm and the LM head
tied to the token embeddings (fairseq's ``RobertaLMHead``; ``--lm-head linear``: dropout and the tied projection
alone, as the authors' StructFormer code; ``--lm-head untied``: a Linear of its own, as the authors' Tree
Transformer code). What differs between the three models is a hook each (as fairseq's
``TransformerEncoderBase.build_encoder_layer``):

* :meth:`MaskedLMEncoder.build_structure` -- modules built before the layers (StructFormer's parser network);
* :meth:`MaskedLMEncoder.build_layer` -- layer ``i`` of the stack; :meth:`MaskedLMEncoder.init_layers` re-initialises
  the built stack (the plain baseline's xavier/zero init);
* :meth:`MaskedLMEncoder.build_final_norm` -- the final LayerNorm or None (post-LN blocks);
* :meth:`MaskedLMEncoder.extract_features` -- the layers' forward and the structure outputs in ``extra``
  (link probabilities and priors, distances and dependencies, or only the word mask).

Modules are created in the same order as before this base existed (embeddings, positions, structure, layers,
final norm, LM head), so a seed gives the same initial weights and old checkpoints keep their state-dict keys.
"""

from __future__ import annotations

import math
from typing import Optional

import torch
import torch.nn as nn
import torch.nn.functional as F
from fairseq import utils
from fairseq.models import ARCH_CONFIG_REGISTRY, FairseqEncoder, FairseqEncoderModel
from fairseq.models.roberta.model import RobertaLMHead
from fairseq.modules import PositionalEmbedding
from torch import Tensor

from fairseq_tree.models.architecture import build_standalone_model
from fairseq_tree.modules.fairseq_layers import upgrade_positions_buffer


class MaskedLMEncoder(FairseqEncoder):
    """src_tokens [B, T] -> (logits [B, T, V], or [M, V] for the M ``masked_tokens``; extra dict)."""

    def __init__(self, args, dictionary):
        super().__init__(dictionary)
        self.args = args
        d = args.encoder_embed_dim
        self.pad, self.bos, self.eos = dictionary.pad(), dictionary.bos(), dictionary.eos()
        self.embed_tokens = nn.Embedding(len(dictionary), d, padding_idx=self.pad)
        init = getattr(args, "embed_init", None) or "normal"
        if init == "xavier":  # the authors' Tree Transformer code
            nn.init.xavier_uniform_(self.embed_tokens.weight)
        elif init == "uniform":  # the authors' StructFormer code
            nn.init.uniform_(self.embed_tokens.weight, -0.1, 0.1)
        else:
            nn.init.normal_(self.embed_tokens.weight, mean=0.0, std=d ** -0.5)
        nn.init.constant_(self.embed_tokens.weight[self.pad], 0.0)
        # the authors' StructFormer code feeds the embeddings unscaled (``--no-scale-embedding``)
        self.embed_scale = 1.0 if getattr(args, "no_scale_embedding", False) else math.sqrt(d)
        self.embed_positions = PositionalEmbedding(args.max_positions, d, self.pad,
                                                   learned=args.encoder_learned_pos)
        if init == "uniform" and isinstance(self.embed_positions, nn.Embedding):  # learned: U(-0.1, 0.1) too
            nn.init.uniform_(self.embed_positions.weight, -0.1, 0.1)
            nn.init.constant_(self.embed_positions.weight[self.pad], 0.0)
        self.build_structure(args)
        self.layers = nn.ModuleList([self.build_layer(args, i) for i in range(args.encoder_layers)])
        self.init_layers()
        self.final_norm = self.build_final_norm(args, d)
        head = getattr(args, "lm_head", None) or "roberta"
        if head == "linear":
            self.lm_head = TiedLinearLMHead(self.embed_tokens.weight, args.dropout)
        elif head == "untied":
            self.lm_head = UntiedLinearLMHead(d, len(dictionary))
        else:
            self.lm_head = RobertaLMHead(d, len(dictionary), args.activation_fn, weight=self.embed_tokens.weight)

    # ------------------------------------------------------------------------------------------- hooks
    def upgrade_state_dict_named(self, state_dict, name):
        """Checkpoints of fairseq 0.12.2 and main load in either (:func:`upgrade_positions_buffer`)."""
        return upgrade_positions_buffer(self.embed_positions, state_dict, name)

    def build_structure(self, args) -> None:
        """Modules the structure needs, built before the layers (none by default)."""

    def build_layer(self, args, index: int) -> nn.Module:
        raise NotImplementedError

    def init_layers(self) -> None:
        """Re-initialise ``self.layers`` once all are built (nothing by default)."""

    def build_final_norm(self, args, d: int):
        """Pre-LN blocks end with a LayerNorm; ``--encoder-post-norm`` blocks do not."""
        return None if args.encoder_post_norm else nn.LayerNorm(d)

    def extract_features(self, src_tokens: Tensor, return_all_hiddens: bool = False):
        """src_tokens [B, T] -> (x [B, T, d], extra): the layers and the model's structure outputs."""
        raise NotImplementedError

    # ------------------------------------------------------------------------------------------- shared
    def embed(self, src_tokens: Tensor) -> Tensor:
        """[B, T] -> scaled token + position embeddings [B, T, d], dropout applied (``--embed-dropout``, else
        ``--dropout``)."""
        x = self.embed_scale * self.embed_tokens(src_tokens) + self.embed_positions(src_tokens)
        p = getattr(self.args, "embed_dropout", None)
        return F.dropout(x, self.args.dropout if p is None else p, self.training)

    def max_positions(self):
        return self.args.max_positions

    def forward(self, src_tokens, src_lengths=None, masked_tokens=None, features_only=False,
                return_all_hiddens=False, **unused):
        x, extra = self.extract_features(src_tokens, return_all_hiddens)
        if not features_only:
            x = self.lm_head(x, masked_tokens=masked_tokens)
        return x, extra


class TiedLinearLMHead(nn.Module):
    """``--lm-head linear``, the authors' StructFormer code's output layer: dropout, then the tied embedding matrix
    and a bias (0 at init). x [B, T, d] (after the final LayerNorm) -> logits [B, T, V], or [M, V] for the M
    ``masked_tokens``."""

    def __init__(self, weight: Tensor, dropout: float):
        super().__init__()
        self.weight = weight
        self.bias = nn.Parameter(torch.zeros(weight.size(0)))
        self.dropout = dropout

    def forward(self, x: Tensor, masked_tokens: Optional[Tensor] = None) -> Tensor:
        if masked_tokens is not None:
            x = x[masked_tokens, :]
        return F.linear(F.dropout(x, self.dropout, self.training), self.weight) + self.bias


class UntiedLinearLMHead(nn.Linear):
    """``--lm-head untied``, the authors' Tree Transformer code's output layer: one Linear(d, V) of its own (xavier
    weight, PyTorch's default bias), no dropout. x [B, T, d] -> logits [B, T, V], or [M, V] for ``masked_tokens``."""

    def __init__(self, d: int, vocab: int):
        super().__init__(d, vocab)
        nn.init.xavier_uniform_(self.weight)

    def forward(self, x: Tensor, masked_tokens: Optional[Tensor] = None) -> Tensor:
        return super().forward(x if masked_tokens is None else x[masked_tokens, :])


LM_HEADS = ("roberta", "linear", "untied")
EMBED_INITS = ("normal", "xavier", "uniform")


def add_masked_lm_args(parser, **helps) -> None:
    """The flags every masked-LM encoder reads; ``helps`` gives a model's own help text for a flag (keyed by its
    dest, e.g. ``attention_dropout="..."``)."""
    h = {"max_positions": "longest input in tokens, BOS and EOS included",
         "encoder_learned_pos": "learned positions instead of sinusoidal", **helps}
    a = parser.add_argument
    a("--encoder-embed-dim", type=int, metavar="D")
    a("--encoder-layers", type=int, metavar="L")
    a("--encoder-attention-heads", type=int, metavar="H")
    a("--encoder-ffn-embed-dim", type=int, metavar="D")
    a("--dropout", type=float, metavar="P")
    a("--attention-dropout", type=float, metavar="P", help=h.get("attention_dropout"))
    a("--activation-dropout", type=float, metavar="P")
    a("--activation-fn", choices=utils.get_available_activation_fns())
    a("--max-positions", type=int, metavar="N", help=h["max_positions"])
    a("--encoder-learned-pos", action="store_true", help=h["encoder_learned_pos"])
    a("--no-scale-embedding", action="store_true",
      help="token embeddings not scaled by sqrt(d) (the authors' StructFormer code)")
    a("--lm-head", choices=LM_HEADS,
      help="masked-LM output: 'roberta' (dense, activation, LayerNorm, tied projection; default) or 'linear' "
           "(dropout and the tied projection, the authors' StructFormer code) or 'untied' (a Linear of its own, the "
           "authors' Tree Transformer code)")
    a("--embed-dropout", type=float, metavar="P",
      help="dropout on the input embeddings (default: --dropout; the authors' StructFormer code: 0)")
    a("--embed-init", choices=EMBED_INITS,
      help="token embeddings' init: normal(0, d^-1/2) (default, fairseq's), xavier_uniform (the authors' Tree "
           "Transformer code) or uniform: U(-0.1, 0.1) for tokens and learned positions (the authors' StructFormer "
           "code)")


class MaskedLMModel(FairseqEncoderModel):
    """A masked-LM model over a :class:`MaskedLMEncoder`: subclasses name their encoder class (``ENCODER``) and their
    base architecture (``BASE_ARCH``, a registered architecture name that fills every unset argument)."""

    ENCODER = MaskedLMEncoder
    BASE_ARCH = ""

    @classmethod
    def build_model(cls, args, task):
        ARCH_CONFIG_REGISTRY[cls.BASE_ARCH](args)
        return cls(args, cls.ENCODER(args, task.source_dictionary))

    @classmethod
    def build_standalone(cls, dictionary, arch: str, **overrides):
        """The model without a task (benchmarks, notebooks, tests); see :func:`build_standalone_model`."""
        return build_standalone_model(cls, cls.ENCODER, dictionary, arch, overrides)

    def __init__(self, args, encoder):
        super().__init__(encoder)
        self.args = args

    def forward(self, src_tokens, src_lengths=None, masked_tokens=None, features_only=False,
                return_all_hiddens=False, **unused):
        return self.encoder(src_tokens, src_lengths, masked_tokens=masked_tokens, features_only=features_only,
                            return_all_hiddens=return_all_hiddens)

    def max_positions(self):
        return self.encoder.max_positions()
