"""``structformer``: StructFormer (Shen et al. 2021), a masked-LM encoder that induces dependency and constituency
structure, for the ``tree_induction`` task.

Parser network over the token embeddings (no positions) -> syntactic distances τ [B, T-1] and heights δ [B, T]
-> the soft dependency graph p_D [B, T, T] (:mod:`fairseq_tree.modules.structformer_parser`, O(T^2) memory)
-> a pre-LN Transformer encoder (paper Section 5: layer norm in front of each sublayer, as T5) whose every
self-attention is dependency-constrained (:mod:`fairseq_tree.modules.dependency_attention`), a final LayerNorm
and the masked-LM head of :mod:`fairseq_tree.models.constituent_transformer` (RoBERTa head tied to the token
embeddings). Embeddings: token x sqrt(d) + sinusoidal positions (learned with ``--encoder-learned-pos``), dropout.

Token layout ``<s> w_1 .. w_n </s> <pad>..``: BOS, EOS and padding are outside the parser (zeros to the convs),
every distance, height and dependency; they neither attend nor are attended (p_D rows/columns are 0), so a
sentence's outputs do not depend on its batch.

Paper vs the authors' code, and the flag for each difference (paper is the default):

==============================  ==========================  ============================================
item                            paper (default)             authors' code (flag)
==============================  ==========================  ============================================
parser conv layers              3 (Section 5)               class default 4 (``--sf-conv-layers 4``;
                                                            README/run uses 3)
conv kernel 2W+1                not given                   9 (``--sf-conv-size``, default 9)
LayerNorm in parser (eqs. 1-3)  none                        non-affine LN before each tanh
                                                            (``--sf-parser-layernorm``)
distance calibration            none                        shift τ by the max span margin
                                                            (``--sf-calibrate``, per sentence;
                                                            ``--sf-calibrate-batch``: the code's max over
                                                            the training batch, per sentence in eval)
relations                       parent, dependent           + sibling (``--sf-relations
                                                            parent,dependent,sibling``)
FFN activation                  ReLU (Vaswani et al.)       LeakyReLU (``--sf-leaky-relu``)
attention dropout               0.1 (dropout 0.1)           0 (``--attention-dropout 0``)
positions                       sinusoidal (not stated)     learned, 500 (``--encoder-learned-pos``)
embeddings                      x sqrt(d) (not stated)      unscaled (``--no-scale-embedding``), also
                                                            into the parser
masked-LM output                RoBERTa head (not stated)   dropout + tied linear (``--lm-head linear``)
input embedding dropout         --dropout (not stated)      none (``--embed-dropout 0``)
FFN activation dropout          0 (not stated)              --dropout (``--activation-dropout 0.1``)
init of q/k/v, FFN              xavier over each fused      xavier per d x d map, PyTorch's default FFN
                                map, zero biases (not       (``--sf-code-init``)
                                stated)
init of embeddings, positions   normal(0, d^-1/2) (not      U(-0.1, 0.1) (``--embed-init uniform``)
                                stated)
==============================  ==========================  ============================================

Parsing (``induce``): ``--sf-parse-method distance`` (default, the paper's evaluation): Algorithm 1 on τ for the
tree and eq. 17 (argmax p_D, the word of largest height is the root) for the heads; ``joint``: Algorithm 3
(same tree; heads from the tree and δ).
"""

from __future__ import annotations

from typing import Dict, Optional

import torch
import torch.nn as nn
import torch.nn.functional as F
from fairseq import utils
from fairseq.models import register_model, register_model_architecture
from torch import Tensor

from fairseq_tree.models.architecture import set_default
from fairseq_tree.models.hub_interface import FromPretrained
from fairseq_tree.models.induced_structure import InducedStructure
from fairseq_tree.models.masked_lm_encoder import MaskedLMEncoder, MaskedLMModel, add_masked_lm_args
from fairseq_tree.modules.dependency_attention import RELATIONS, DependencyAttention, dependency_relations
from fairseq_tree.modules.structformer_parser import (
    PARSE_METHODS,
    StructFormerParser,
    dependency_distribution,
    distance_to_spans,
    heads_from_dependency,
    joint_parse,
    word_masks,
)


def _relations(args):
    names = tuple(r.strip() for r in str(args.sf_relations).split(",") if r.strip())
    for r in names:
        if r not in RELATIONS:
            raise ValueError(f"--sf-relations: unknown relation {r!r}; choose from {RELATIONS}")
    return names


class StructFormerLayer(nn.Module):
    """Pre-LN block: x + Drop(DepAttn(LN(x))), then x + Drop(FFN(LN(x)))."""

    def __init__(self, args):
        super().__init__()
        d = args.encoder_embed_dim
        code_init = getattr(args, "sf_code_init", False)
        self.attn = DependencyAttention(d, args.encoder_attention_heads, len(_relations(args)),
                                        args.attention_dropout, code_init=code_init)
        self.attn_norm = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, args.encoder_ffn_embed_dim)
        self.fc2 = nn.Linear(args.encoder_ffn_embed_dim, d)
        if not code_init:  # xavier + zero bias; the authors' code keeps PyTorch's default Linear init here
            for m in (self.fc1, self.fc2):
                nn.init.xavier_uniform_(m.weight)
                nn.init.zeros_(m.bias)
        self.ffn_norm = nn.LayerNorm(d)
        self.activation_fn = (F.leaky_relu if args.sf_leaky_relu else utils.get_activation_fn(args.activation_fn))
        self.dropout, self.activation_dropout = args.dropout, args.activation_dropout

    def forward(self, x, rel, word):
        h, _ = self.attn(self.attn_norm(x), rel, word)
        x = x + F.dropout(h, self.dropout, self.training)
        h = F.dropout(self.activation_fn(self.fc1(self.ffn_norm(x))), self.activation_dropout, self.training)
        return x + F.dropout(self.fc2(h), self.dropout, self.training)


class StructFormerEncoder(MaskedLMEncoder):
    def build_structure(self, args) -> None:
        calibrate = "batch" if getattr(args, "sf_calibrate_batch", False) else bool(args.sf_calibrate)
        self.parser = StructFormerParser(args.encoder_embed_dim, args.sf_conv_layers, args.sf_conv_size,
                                         args.sf_parser_layernorm, calibrate)
        self.relations = _relations(args)

    def build_layer(self, args, index: int) -> nn.Module:
        return StructFormerLayer(args)

    def build_final_norm(self, args, d: int):
        return nn.LayerNorm(d)  # pre-LN blocks only

    def parse(self, src_tokens: Tensor):
        """-> (distance [B, T-1], height [B, T], p_D [B, T, T], root [B, T], word [B, T]), structure in fp32."""
        word, split = word_masks(src_tokens, self.bos, self.eos, self.pad)
        emb = self.embed_scale * self.embed_tokens(src_tokens)  # the parser shares the token embeddings
        distance, height = self.parser(emb, word, split)
        s = self.parser.scales
        p_D, root = dependency_distribution(distance, height, word, split, s[0], s[1])
        return distance, height, p_D, root, word

    def extract_features(self, src_tokens: Tensor, return_all_hiddens: bool = False):
        """-> (x [B, T, d], extra) with, fp32 over positions: extra['distance'] [B, T-1] (τ between positions t and
        t+1, 0 unless both are words), extra['height'] [B, T] (δ, 0 off words), extra['dependency'] [B, T, T]
        (p_D(j|i), row i = the dependent), extra['root'] [B, T] (the self mass eq. 12 drops: rows + root = 1 on
        words), extra['word_mask'] [B, T] and, if asked, extra['inner_states'] (list of [B, T, d])."""
        distance, height, p_D, root, word = self.parse(src_tokens)
        rel = dependency_relations(p_D, self.relations)
        x = self.embed(src_tokens)
        inner = [x] if return_all_hiddens else None
        for layer in self.layers:
            x = layer(x, rel, word)
            if inner is not None:
                inner.append(x)
        x = self.final_norm(x)
        extra = {"distance": distance, "height": height, "dependency": p_D, "root": root, "word_mask": word,
                 "inner_states": inner}
        return x, extra


@register_model("structformer")
class StructFormerModel(FromPretrained, MaskedLMModel):
    """Masked-LM StructFormer. ``forward`` -> (logits [B, T, V] or [M, V] with ``masked_tokens``, extra);
    ``induce`` -> :class:`InducedStructure` (spans and heads)."""

    HUB_INTERFACE = "InductionHubInterface"  # from_pretrained -> fairseq_tree.hub.InductionHubInterface
    ENCODER = StructFormerEncoder
    BASE_ARCH = "structformer"

    @staticmethod
    def add_args(parser):
        add_masked_lm_args(parser, attention_dropout="dropout on the attention weights (code: 0)",
                           encoder_learned_pos="learned positions (the code's --pos_emb)")
        a = parser.add_argument
        a("--sf-conv-layers", type=int, metavar="N", help="parser convolution layers L_p (paper 3)")
        a("--sf-conv-size", type=int, metavar="K", help="parser convolution kernel 2W+1 (code 9)")
        a("--sf-parser-layernorm", action="store_true",
          help="non-affine LayerNorm before each tanh of the parser (authors' code; not in eqs. 1-3)")
        a("--sf-calibrate", action="store_true",
          help="the code's distance calibration (shift τ by the largest span margin), per sentence")
        a("--sf-calibrate-batch", action="store_true",
          help="the calibration as the authors' code trains it: in training the margin is the largest over the "
               "whole batch (each process's own under distributed training; implies --sf-calibrate; evaluation "
               "and parsing stay per sentence, as the code parses one sentence at a time)")
        a("--sf-code-init", action="store_true",
          help="init as the authors' code: xavier over each d x d block of the fused q/k/v map and PyTorch's "
               "default FFN init (default: xavier over each map whole, zero biases); with --embed-init uniform "
               "for its embeddings")
        a("--sf-relations", type=str, metavar="R,R",
          help=f"comma list of attention relations from {RELATIONS} (paper: parent,dependent)")
        a("--sf-leaky-relu", action="store_true", help="LeakyReLU FFN activation (authors' code)")
        a("--sf-parse-method", choices=PARSE_METHODS,
          help="induce(): 'distance' (Algorithm 1 + eq. 17 heads, paper) or 'joint' (Algorithm 3)")

    # ------------------------------------------------------------------------------------------- parsing
    @torch.no_grad()
    def induce(self, src_tokens: Tensor, src_lengths: Optional[Tensor] = None, method: Optional[str] = None,
               maps: bool = True, **unused) -> InducedStructure:
        """Induce trees and heads (eval mode, no grad). ``method``: 'distance' (default ``--sf-parse-method``) or
        'joint'. Words are the tokens other than BOS/EOS/pad. ``maps`` (fp32 CPU, over word positions, 0 past a
        sentence's end): 'dependency' [B, n_max, n_max] p(parent j | word i), 'root' [B, n_max],
        'distance' [B, n_max - 1], 'height' [B, n_max]."""
        method = method or getattr(self.args, "sf_parse_method", None) or "distance"
        if method not in PARSE_METHODS:
            raise ValueError(f"unknown parse method {method!r}; choose from {PARSE_METHODS}")
        was_training = self.training
        self.eval()
        try:
            distance, height, p_D, root, word = self.encoder.parse(src_tokens)
        finally:
            self.train(was_training)
        return structure_from_parse(distance, height, p_D, root, word, method, maps)


def structure_from_parse(distance: Tensor, height: Tensor, p_D: Tensor, root: Tensor, word: Tensor,
                         method: str = "distance", maps: bool = True) -> InducedStructure:
    """The parse step of :meth:`StructFormerModel.induce`, from the encoder's structure over token positions
    (:meth:`StructFormerEncoder.parse`: distance [B, T-1], height [B, T], p_D [B, T, T] with row i = the dependent,
    root [B, T], word [B, T] bool): the words of each sentence are gathered in order, then Algorithm 1 + eq. 17
    (``method='distance'``: head of word i = argmax_j p_D(j|i), the highest word the root) or Algorithm 3
    (``'joint'``). -> :class:`InducedStructure` (maps over word positions, see ``induce``)."""
    B, T = word.shape
    lengths = word.sum(1)
    n_max = int(lengths.max()) if B else 0
    nm = max(n_max, 1)
    # positions of the words, in order (a stable sort of ~word puts words first), padded past n_b
    order = torch.sort((~word).to(torch.int8), dim=1, stable=True).indices[:, :nm]
    wvalid = torch.arange(nm, device=word.device)[None] < lengths[:, None]
    pair = wvalid[:, :, None] & wvalid[:, None, :]
    P = p_D.gather(1, order[:, :, None].expand(-1, -1, T)).gather(2, order[:, None, :].expand(-1, nm, -1))
    P = P.masked_fill(~pair, 0.0).float().cpu()
    H = height.gather(1, order).masked_fill(~wvalid, 0.0).float().cpu()
    Rt = root.gather(1, order).masked_fill(~wvalid, 0.0).float().cpu()
    if n_max >= 2:
        D = distance.gather(1, order[:, : n_max - 1].clamp_max(T - 2))  # split after word k sits at its position
        D = D.masked_fill(~wvalid[:, 1:n_max], 0.0).float().cpu()
    else:
        D = distance.new_zeros(B, 0).float().cpu()
    spans, heads = [], []
    for b in range(B):
        n = int(lengths[b])
        d_b, h_b = D[b, : max(n - 1, 0)].numpy(), H[b, :n].numpy()
        if method == "joint":
            s, hd = joint_parse(d_b, h_b)
        else:
            s, hd = distance_to_spans(d_b), heads_from_dependency(P[b, :n, :n].numpy(), h_b)
        spans.append(s)
        heads.append(hd)
    out_maps: Dict[str, Tensor] = {}
    if maps and n_max >= 1:
        out_maps = {"dependency": P, "root": Rt, "distance": D, "height": H}
    return InducedStructure(lengths=lengths.cpu(), spans=spans, heads=heads, maps=out_maps)


def build_standalone(dictionary, arch: str = "structformer_small", **overrides) -> StructFormerModel:
    """Build the model without a task (benchmarks, notebooks): ``dictionary`` a fairseq Dictionary (its bos/eos/pad
    define the layout), ``arch`` one of the registered architectures, ``overrides`` argument values."""
    return StructFormerModel.build_standalone(dictionary, arch, **overrides)


@register_model_architecture("structformer", "structformer")
def structformer_base(args):
    """Paper Section 5: L = 8, d = 512, 8 heads, FFN 2048, dropout 0.1, 3 parser conv layers."""
    for name, value in (("encoder_embed_dim", 512), ("encoder_layers", 8), ("encoder_attention_heads", 8),
                        ("encoder_ffn_embed_dim", 2048), ("dropout", 0.1), ("attention_dropout", 0.1),
                        ("activation_dropout", 0.0), ("activation_fn", "relu"), ("max_positions", 512),
                        ("sf_conv_layers", 3), ("sf_conv_size", 9), ("sf_relations", "parent,dependent"),
                        ("sf_parse_method", "distance"), ("lm_head", "roberta")):
        set_default(args, name, value)
    for flag in ("encoder_learned_pos", "sf_parser_layernorm", "sf_calibrate", "sf_calibrate_batch", "sf_leaky_relu",
                 "sf_code_init", "no_scale_embedding"):
        set_default(args, flag, False)


@register_model_architecture("structformer", "structformer_small")
def structformer_small(args):
    """CPU experiments: d = 256, L = 8, 4 heads, FFN 1024."""
    for name, value in (("encoder_embed_dim", 256), ("encoder_layers", 8), ("encoder_attention_heads", 4),
                        ("encoder_ffn_embed_dim", 1024)):
        set_default(args, name, value)
    structformer_base(args)


@register_model_architecture("structformer", "structformer_tiny")
def structformer_tiny(args):
    """Tests: d = 32, L = 2, 2 heads, FFN 64, 2 parser conv layers of kernel 3, no dropout."""
    for name, value in (("encoder_embed_dim", 32), ("encoder_layers", 2), ("encoder_attention_heads", 2),
                        ("encoder_ffn_embed_dim", 64), ("dropout", 0.0), ("attention_dropout", 0.0),
                        ("activation_dropout", 0.0), ("max_positions", 256), ("sf_conv_layers", 2),
                        ("sf_conv_size", 3)):
        set_default(args, name, value)
    structformer_base(args)
