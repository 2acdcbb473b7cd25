"""``constituent_transformer``: Tree Transformer with constituent attention (Wang, Lee & Chen, EMNLP 2019),
a masked-LM encoder for the ``tree_induction`` task.

A Transformer encoder (token embeddings x sqrt(d) + sinusoidal positions, dropout; pre-LN residual blocks with
a final LayerNorm as the authors' code, ``--encoder-post-norm`` for the original post-LN block; GELU FFN) whose
every layer multiplies its attention probabilities by that layer's constituent prior
(:mod:`fairseq_tree.modules.constituent_attention`), and a masked-LM head tied to the token embeddings
(dense + activation + LayerNorm + tied projection + bias, as RoBERTa; the code's head is one untied Linear).

Token layout ``<s> w_1 .. w_n </s> <pad>..``: BOS, EOS and padding are outside every link and prior; a word
attends to the words of its sentence only, BOS/EOS/pad attend to themselves only (see the module's docstring).

Paper vs the authors' code, and the flag for each difference (paper is the default):

==========================  ==============================  ===============================================
item                        paper (default)                 authors' code (flag)
==========================  ==============================  ===============================================
link score scale            d_model / 2                     256 whatever d (``--ca-link-scale 256``)
C diagonal                  1 (empty product of eq. 3)      ≈ 3.2e-5 (l+1) (``--ca-code-diagonal``)
link maps' input            the attention's input           own LayerNorm of the layer input (``--ca-own-norm``)
Algorithm 1 minimum layer   m = 3 (best in Fig. 4a)         2 (``--ca-parse-min-layer 2``)
Algorithm 1 children        always one layer down           down only if all links > 0.7
                                                            (``--ca-parse-code-rule``, value
                                                            ``--ca-parse-inner-threshold``)
Algorithm 1 top layer       L - 1                           9 hard-coded (same for L = 10)
BOS                         outside the structure           ``[CLS]`` in the link chain and the prior
                                                            (``--ca-bos-in-chain``; its link is not parsed)
init of q/k/v, link maps    xavier over each fused map,     xavier per d x d map, default biases
                            zero biases                     (``--ca-code-init``)
==========================  ==============================  ===============================================

``--no-constituent-attention`` turns the prior off (C = 1 within the sentence): the same network without the
module, for ablations and timing.
"""

from __future__ import annotations

from typing import Dict, List, Optional

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
from fairseq_tree.modules.constituent_attention import (
    PARSE_METHODS,
    ConstituentSelfAttention,
    parse_links,
    structure_masks,
)


class ConstituentTransformerLayer(nn.Module):
    def __init__(self, args, layer_index: int):
        super().__init__()
        d = args.encoder_embed_dim
        self.layer_index = layer_index
        self.pre_norm = not args.encoder_post_norm
        self.attn = ConstituentSelfAttention(
            d, args.encoder_attention_heads, args.attention_dropout, link_scale=args.ca_link_scale,
            own_norm=args.ca_own_norm, code_diagonal=args.ca_code_diagonal,
            enabled=not args.no_constituent_attention, code_init=args.ca_code_init)
        self.attn_norm = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, args.encoder_ffn_embed_dim)
        self.fc2 = nn.Linear(args.encoder_ffn_embed_dim, d)
        for m in (self.fc1, self.fc2):
            nn.init.xavier_uniform_(m.weight)
            if args.ca_code_init:  # PyTorch's default bias, as the authors' code
                nn.init.uniform_(m.bias, -m.in_features ** -0.5, m.in_features ** -0.5)
            else:
                nn.init.zeros_(m.bias)
        self.ffn_norm = nn.LayerNorm(d)
        self.activation_fn = utils.get_activation_fn(args.activation_fn)
        self.dropout, self.activation_dropout = args.dropout, args.activation_dropout

    def forward(self, x, a_prev, word, link, allowed):
        residual = x
        h = self.attn_norm(x) if self.pre_norm else x
        h, a, C = self.attn(h, x, a_prev, word, link, allowed, self.layer_index)
        x = residual + F.dropout(h, self.dropout, self.training)
        if not self.pre_norm:
            x = self.attn_norm(x)
        residual = x
        h = self.ffn_norm(x) if self.pre_norm else x
        h = F.dropout(self.activation_fn(self.fc1(h)), self.activation_dropout, self.training)
        x = residual + F.dropout(self.fc2(h), self.dropout, self.training)
        if not self.pre_norm:
            x = self.ffn_norm(x)
        return x, a, C


class ConstituentTransformerEncoder(MaskedLMEncoder):
    def build_layer(self, args, index: int) -> nn.Module:
        return ConstituentTransformerLayer(args, index)

    def extract_features(self, src_tokens: Tensor, return_all_hiddens: bool = False):
        """-> (x [B, T, d], extra) with extra['link_probs'] (list over layers of a^l [B, T-1], fp32: entry t links
        positions t and t+1, 0 where they are not two words; 'break_probs' is the same list under the authors'
        name), extra['priors'] (list of C^l [B, T, T] fp32), extra['word_mask'] [B, T] and, if asked,
        extra['inner_states'] (list of [B, T, d], embeddings first)."""
        chain, link, allowed = structure_masks(src_tokens, self.bos, self.eos, self.pad,
                                               bos_in_chain=self.args.ca_bos_in_chain)
        word = chain & src_tokens.ne(self.bos)
        x = self.embed(src_tokens)
        inner = [x] if return_all_hiddens else None
        a = None
        links: List[Tensor] = []
        priors: List[Tensor] = []
        for layer in self.layers:
            x, a_new, C = layer(x, a, chain, link, allowed)
            if a_new is not None:
                a = a_new
                links.append(a)
                priors.append(C)
            if inner is not None:
                inner.append(x)
        if self.final_norm is not None:
            x = self.final_norm(x)
        extra = {"link_probs": links, "break_probs": links, "priors": priors, "word_mask": word,
                 "inner_states": inner}
        return x, extra


@register_model("constituent_transformer")
class ConstituentTransformerModel(FromPretrained, MaskedLMModel):
    """Masked-LM Tree Transformer. ``forward`` -> (logits [B, T, V] or [M, V] with ``masked_tokens``, extra);
    ``induce`` -> :class:`InducedStructure`."""

    HUB_INTERFACE = "InductionHubInterface"  # from_pretrained -> fairseq_tree.hub.InductionHubInterface
    ENCODER = ConstituentTransformerEncoder
    BASE_ARCH = "constituent_transformer"

    @staticmethod
    def add_args(parser):
        add_masked_lm_args(parser)
        a = parser.add_argument
        a("--encoder-post-norm", action="store_true",
          help="post-LN blocks (original Transformer); default pre-LN + final LayerNorm (authors' code)")
        a("--no-constituent-attention", action="store_true",
          help="ablation: no constituent prior (a plain Transformer with the same token layout)")
        a("--ca-link-scale", type=float, metavar="S",
          help="divisor of the neighbour link scores (eq. 5); 0 = d_model / 2 (paper); the code uses 256")
        a("--ca-code-diagonal", action="store_true",
          help="C_ii = 1 - (1 - sqrt(1e-9))^(l+1) ≈ 0 as the authors' code (paper: 1)")
        a("--ca-bos-in-chain", action="store_true",
          help="BOS takes part in the links, the prior and the attention as the authors' code's [CLS] (default: "
               "outside the structure); its link to the first word is not parsed")
        a("--ca-code-init", action="store_true",
          help="init as the authors' code: xavier over each d x d block of the fused projections and PyTorch's "
               "default biases (default: xavier over each projection, zero biases)")
        a("--ca-own-norm", action="store_true",
          help="link maps read their own LayerNorm of the layer input (authors' code); default: the attention's "
               "input")
        a("--ca-parse-method", choices=PARSE_METHODS, help="default parsing of induce()")
        a("--ca-parse-min-layer", type=int, metavar="M", help="Algorithm 1 minimum layer (paper best 3, code 2)")
        a("--ca-parse-threshold", type=float, metavar="T", help="Algorithm 1 breakpoint threshold (0.8)")
        a("--ca-parse-code-rule", action="store_true",
          help="Algorithm 1 with the code's rule: a child goes one layer down only if all its links > "
               "--ca-parse-inner-threshold")
        a("--ca-parse-inner-threshold", type=float, metavar="T", help="value of the code rule (0.7)")
        a("--ca-parse-layer", type=int, metavar="L", help="layer of greedy parsing (default: the min layer)")

    # ------------------------------------------------------------------------------------------- parsing
    @torch.no_grad()
    def induce(self, src_tokens: Tensor, src_lengths: Optional[Tensor] = None, method: Optional[str] = None,
               min_layer: Optional[int] = None, threshold: Optional[float] = None, code_rule: Optional[bool] = None,
               inner_threshold: Optional[float] = None, layer: Optional[int] = None,
               top_layer: Optional[int] = None, maps: bool = True, **unused) -> InducedStructure:
        """Induce trees (eval mode, no grad). Options default to the model's ``--ca-parse-*`` values:
        ``method`` 'algorithm1' (paper) or 'greedy' (one layer, ``layer``); ``min_layer`` m, ``threshold`` (0.8),
        ``code_rule`` (the code's extra 0.7 rule, value ``inner_threshold``), ``top_layer`` (L-1).

        Words are the tokens other than BOS/EOS/pad (word k at position k + 1 in the task's layout).
        ``maps['prior_layer{l}']`` [B, n_max, n_max] fp32 CPU: the constituent prior of layer l over words;
        ``maps['links']`` [B, L, n_max - 1]: a^l between consecutive words (0 past a sentence's end)."""
        if self.args.no_constituent_attention:
            raise RuntimeError("induce(): model trained with --no-constituent-attention has no structure")
        def g(value, name, default):
            if value is not None:
                return value
            value = getattr(self.args, name, None)
            return default if value is None else value

        method = g(method, "ca_parse_method", "algorithm1")
        min_layer = g(min_layer, "ca_parse_min_layer", 3)
        threshold = g(threshold, "ca_parse_threshold", 0.8)
        code_rule = g(code_rule, "ca_parse_code_rule", False)
        inner = g(inner_threshold, "ca_parse_inner_threshold", 0.7) if code_rule else None
        layer = g(layer, "ca_parse_layer", None)
        was_training = self.training
        self.eval()
        try:
            _, extra = self.encoder.extract_features(src_tokens)
        finally:
            self.train(was_training)
        word = extra["word_mask"]
        B, T = word.shape
        lengths = word.sum(1)
        n_max = int(lengths.max()) if B else 0
        # positions of the words, in order (padded with 0 past n_b): a stable sort of ~word puts words first
        order = torch.sort((~word).to(torch.int8), dim=1, stable=True).indices[:, :max(n_max, 1)]
        wvalid = torch.arange(max(n_max, 1), device=word.device)[None] < lengths[:, None]
        links = torch.stack(extra["link_probs"], 1).float()  # [B, L, T-1]
        if n_max >= 2:
            idx = order[:, : n_max - 1].clamp_max(T - 2)  # the link after word k sits at word k's position
            wl = links.gather(2, idx[:, None, :].expand(-1, links.size(1), -1))
            wl = wl.masked_fill(~wvalid[:, None, 1:n_max], 0.0).cpu()
        else:
            wl = links.new_zeros(B, links.size(1), 0).cpu()
        spans = []
        wl_np = wl.numpy()
        for b in range(B):
            n = int(lengths[b])
            spans.append(parse_links(wl_np[b, :, : max(n - 1, 0)], method, min_layer, threshold, inner, layer,
                                     top_layer) if n >= 2 else [])
        out_maps: Dict[str, Tensor] = {}
        if maps and n_max >= 1:
            o = order[:, :n_max]
            pair = wvalid[:, :n_max, None] & wvalid[:, None, :n_max]
            for i, C in enumerate(extra["priors"]):
                Cw = C.gather(1, o[:, :, None].expand(-1, -1, T)).gather(2, o[:, None, :].expand(-1, n_max, -1))
                out_maps[f"prior_layer{i}"] = Cw.masked_fill(~pair, 0.0).float().cpu()
            out_maps["links"] = wl
        return InducedStructure(lengths=lengths.cpu(), spans=spans, heads=None, maps=out_maps)


def build_standalone(dictionary, arch: str = "constituent_transformer_small",
                     **overrides) -> ConstituentTransformerModel:
    """Build the model without a task (benchmarks, notebooks): ``dictionary`` a fairseq Dictionary (its bos/eos/pad
    define the layout), ``arch`` one of the registered architectures, ``overrides`` argument values."""
    return ConstituentTransformerModel.build_standalone(dictionary, arch, **overrides)


@register_model_architecture("constituent_transformer", "constituent_transformer")
def constituent_transformer_base(args):
    """Paper Section 7.1: L = 10, d = 512, 8 heads, FFN 2048, dropout 0.1."""
    for name, value in (("encoder_embed_dim", 512), ("encoder_layers", 10), ("encoder_attention_heads", 8),
                        ("encoder_ffn_embed_dim", 2048), ("dropout", 0.1), ("attention_dropout", 0.1),
                        ("activation_dropout", 0.1), ("activation_fn", "gelu"), ("max_positions", 512),
                        ("ca_link_scale", 0.0), ("ca_parse_method", "algorithm1"), ("ca_parse_min_layer", 3),
                        ("ca_parse_threshold", 0.8), ("ca_parse_inner_threshold", 0.7)):
        set_default(args, name, value)
    for flag in ("encoder_learned_pos", "encoder_post_norm", "no_constituent_attention", "ca_code_diagonal",
                 "ca_own_norm", "ca_parse_code_rule", "ca_bos_in_chain", "ca_code_init"):
        set_default(args, flag, False)
    set_default(args, "ca_parse_layer", None)


@register_model_architecture("constituent_transformer", "constituent_transformer_small")
def constituent_transformer_small(args):
    """CPU experiments: d = 256, L = 6, 4 heads, FFN 1024."""
    for name, value in (("encoder_embed_dim", 256), ("encoder_layers", 6), ("encoder_attention_heads", 4),
                        ("encoder_ffn_embed_dim", 1024)):
        set_default(args, name, value)
    constituent_transformer_base(args)


@register_model_architecture("constituent_transformer", "constituent_transformer_tiny")
def constituent_transformer_tiny(args):
    """Tests: d = 32, L = 3, 2 heads, FFN 64, no dropout."""
    for name, value in (("encoder_embed_dim", 32), ("encoder_layers", 3), ("encoder_attention_heads", 2),
                        ("encoder_ffn_embed_dim", 64), ("dropout", 0.0), ("attention_dropout", 0.0),
                        ("activation_dropout", 0.0), ("max_positions", 256)):
        set_default(args, name, value)
    constituent_transformer_base(args)

