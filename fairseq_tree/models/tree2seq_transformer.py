"""``tree2seq``: Transformer translation from source trees with hierarchical accumulation
(Nguyen et al., "Tree-structured Attention with Hierarchical Accumulation", ICLR 2020).

Encoder: self-attention over ``[leaves; nodes]`` with the subtree mask (node queries see their own
subtree's leaves and nodes, leaf queries see leaves), node values replaced by the hierarchical
accumulation of the values, hierarchical embeddings; leaves and nodes share every layer weight.
Leaves get token embeddings + positions, nodes get label embeddings (their own table, no positions).
Decoder: fairseq's Transformer decoder whose cross-attention attends over ``[nodes; leaves]`` (no
subtree mask) with node values accumulated from the encoder output; that encoder side depends only on
the source, so each layer computes it once and keeps it in ``incremental_state`` during beam search.

Defaults follow the paper; the authors' code's choices are flags (``--tree-vertical-index depth``,
``--tree-mean-without-leaf``, ``--tree-leaf-weights per-head``). Ablations (paper Table 3):
``--no-hierarchical-embeddings``, ``--no-subtree-mask``.
"""

import math
from dataclasses import dataclass, field, fields
from typing import Dict, List, Optional, Tuple

import torch
import torch.nn as nn
from fairseq import utils
from fairseq.dataclass import ChoiceEnum
from fairseq.dataclass.utils import gen_parser_from_dataclass
from fairseq.distributed import fsdp_wrap
from fairseq.models import FairseqEncoder, register_model, register_model_architecture
from fairseq.models.transformer import (
    TransformerConfig,
    TransformerDecoderBase,
    TransformerModel,
    base_architecture,
    transformer_iwslt_de_en,
    transformer_vaswani_wmt_en_de_big,
)
from fairseq.modules import FairseqDropout, LayerNorm, PositionalEmbedding
from fairseq.modules.checkpoint_activations import checkpoint_wrapper
from fairseq.modules.transformer_layer import TransformerDecoderLayerBase
from torch import Tensor

from fairseq_tree.models.architecture import require_task
from fairseq_tree.models.hub_interface import FromPretrained
from fairseq_tree.modules.fairseq_layers import upgrade_positions_buffer
from fairseq_tree.modules.tree_attention import TreeMultiheadAttention
from fairseq_tree.modules.tree_compile import (
    BACKENDS,
    DEFAULT_MULTIPLE,
    SCOPES,
    LayerCompiler,
    compiler_for,
    tracing,
)
from fairseq_tree.modules.tree_kernels import KERNELS
from fairseq_tree.modules.tree_structure import DEFAULT_MAX_INDEX, TreeStructure
from fairseq_tree.side_channels import TreeContext


@dataclass
class Tree2SeqConfig(TransformerConfig):
    """fairseq's :class:`TransformerConfig` plus the tree flags: the one place their defaults (the paper's
    settings) live. ``add_args`` generates every flag from it; :meth:`from_namespace` (fairseq's) turns a
    checkpoint's or the command line's Namespace into it, unset tree flags taking these defaults, so a Namespace
    built by hand (tests) or saved before a flag existed gets the paper's values. Models are still registered on
    fairseq's legacy route: a ``TransformerConfig`` subclass fails hydra's compose as a model dataclass in
    fairseq-fixed 0.12.3.1 (``OverrideParseException: model.encoder=<class ...EncDecBaseConfig>``)."""

    no_hierarchical_embeddings: bool = field(default=False, metadata={
        "help": "ablation: no hierarchical embeddings (paper Table 3, -HierEmb)"})
    no_subtree_mask: bool = field(default=False, metadata={
        "help": "ablation: node queries see every leaf and node (paper Table 3, -SubMask)"})
    hier_embed_size: int = field(default=DEFAULT_MAX_INDEX, metadata={
        "help": "|E|: rows of the vertical and horizontal hierarchical embeddings (paper Section 7.4: 100)"})
    tree_vertical_index: ChoiceEnum(["path", "depth"]) = field(default="path", metadata={
        "help": "vertical embedding index: nodes on the path from the leaf (paper) or the node's depth from the "
                "root (authors' code)"})
    tree_mean_without_leaf: bool = field(default=False, metadata={
        "help": "upward mean divides by the number of nodes only, the leaf in the sum but not in the count "
                "(authors' code); default: the paper's |path| incl. the leaf"})
    tree_leaf_weights: ChoiceEnum(["vector", "per-head"]) = field(default="vector", metadata={
        "help": "w = L u_s with one vector u_s (paper) or a per-head Linear with bias (code)"})
    tree_kernels: ChoiceEnum(list(KERNELS)) = field(default="eager", metadata={
        "help": "the tree work of each layer's values (hierarchical accumulation, pair embeddings, leaf weights): "
                "eager operators (default), fused Triton kernels (CUDA; needs triton), or auto (fused on CUDA where "
                "triton is installed, else eager); the default stays eager until GPU rows show fused faster"})
    tree_compile: bool = field(default=False, metadata={
        "help": "train steps through torch.compile'd encoder and decoder layers, the leaves, nodes, target length "
                "and pairs padded to buckets (--tree-compile-multiple); validation and decoding stay eager"})
    tree_compile_multiple: int = field(default=DEFAULT_MULTIPLE, metadata={
        "help": "--tree-compile's bucket: N, M, T and the pair count are padded up to multiples of it"})
    tree_compile_scope: ChoiceEnum(list(SCOPES)) = field(default="stack", metadata={
        "help": "--tree-compile's graphs: each layer loop as one graph (stack: 2 compiled calls a step) or each "
                "layer its own call (layer: about half the compile time, 1 call per layer)"})
    tree_compile_backend: ChoiceEnum(list(BACKENDS)) = field(default="inductor", metadata={
        "help": "--tree-compile's backend: inductor (generated fused kernels), cudagraphs (the traced graphs "
                "captured and replayed as CUDA graphs, per bucket: no code generation, the host out of the "
                "layers' step), or aot_eager (the traced graphs run as they are, on any device)"})


#: the tree flags (the fields Tree2SeqConfig adds to TransformerConfig)
TREE_FLAGS = tuple(f.name for f in fields(Tree2SeqConfig) if f.name not in {g.name for g in fields(TransformerConfig)})


def tree_config(args) -> Tree2SeqConfig:
    """A Namespace (or a config) -> :class:`Tree2SeqConfig`, unset tree flags at their defaults."""
    return args if isinstance(args, Tree2SeqConfig) else Tree2SeqConfig.from_namespace(args)


def _tree_attention_kwargs(cfg: Tree2SeqConfig) -> dict:
    size = cfg.hier_embed_size
    return dict(
        hier_embed=not cfg.no_hierarchical_embeddings,
        max_horizontal=size,
        max_vertical=size,
        vertical_index=str(cfg.tree_vertical_index),
        count_leaf_in_mean=not cfg.tree_mean_without_leaf,
        leaf_weights=str(cfg.tree_leaf_weights).replace("-", "_"),
        kernels=str(cfg.tree_kernels),
    )


def add_tree2seq_args(parser) -> None:
    """Every flag of :class:`Tree2SeqConfig` (fairseq's Transformer flags and the tree flags), without defaults
    so that the architectures can set theirs (fairseq's ``TransformerModel.add_args`` convention)."""
    gen_parser_from_dataclass(parser, Tree2SeqConfig(), delete_default=True, with_prefix="")


# --------------------------------------------------------------------------------------------------
# encoder
# --------------------------------------------------------------------------------------------------

class Tree2SeqEncoderLayer(nn.Module):
    """Tree self-attention + position-wise FFN, post-LN (paper, default) or pre-LN (``--encoder-normalize-before``)."""

    def __init__(self, cfg: Tree2SeqConfig):
        super().__init__()
        d = cfg.encoder.embed_dim
        self.normalize_before = cfg.encoder.normalize_before
        self.self_attn = TreeMultiheadAttention(
            d, cfg.encoder.attention_heads, dropout=cfg.attention_dropout, self_attention=True,
            subtree_mask=not cfg.no_subtree_mask, **_tree_attention_kwargs(cfg))
        self.self_attn_layer_norm = LayerNorm(d)
        self.dropout_module = FairseqDropout(cfg.dropout, module_name=self.__class__.__name__)
        self.activation_fn = utils.get_activation_fn(activation=str(cfg.activation_fn))
        self.activation_dropout_module = FairseqDropout(
            float(cfg.activation_dropout or 0), module_name=self.__class__.__name__)
        self.fc1 = nn.Linear(d, cfg.encoder.ffn_embed_dim)
        self.fc2 = nn.Linear(cfg.encoder.ffn_embed_dim, d)
        self.final_layer_norm = LayerNorm(d)
        self.compiler: Optional[LayerCompiler] = None  # set by the encoder with --tree-compile

    def forward(self, x: Tensor, tree: TreeStructure, need_head_weights: bool = False):
        """x: [N + M, B, C] (leaves then nodes) -> same shape; attention [H, B, T, T] if asked. In training with
        ``--tree-compile``, :meth:`forward_eager` through ``torch.compile`` (see ``tree_compile``)."""
        if self.compiler is not None and self.training and not need_head_weights:
            return self.compiler.compiled(Tree2SeqEncoderLayer.forward_eager)(self, x, tree)
        return self.forward_eager(x, tree, need_head_weights)

    def forward_eager(self, x: Tensor, tree: TreeStructure, need_head_weights: bool = False):
        """The layer: x [N + M, B, C] -> ([N + M, B, C], attention [H, B, T, T] or None)."""
        residual = x
        if self.normalize_before:
            x = self.self_attn_layer_norm(x)
        x, attn = self.self_attn.forward_self(x, tree, need_head_weights=need_head_weights)
        x = residual + self.dropout_module(x)
        if not self.normalize_before:
            x = self.self_attn_layer_norm(x)
        residual = x
        if self.normalize_before:
            x = self.final_layer_norm(x)
        x = self.fc2(self.activation_dropout_module(self.activation_fn(self.fc1(x))))
        x = residual + self.dropout_module(x)
        if not self.normalize_before:
            x = self.final_layer_norm(x)
        return x, attn


class Tree2SeqEncoder(FairseqEncoder):
    """Encodes ``[leaves; nodes]``. ``encoder_out['encoder_out'][0]`` is [N + M, B, C] (leaves first),
    ``encoder_out['tree'][0]`` the batch's :class:`TreeStructure` (for the decoder and reordering)."""

    def __init__(self, cfg, dictionary, label_dictionary, embed_tokens, embed_labels):
        """cfg: a :class:`Tree2SeqConfig` (or a Namespace, converted by :func:`tree_config`)."""
        super().__init__(dictionary)
        cfg = tree_config(cfg)
        self.label_dictionary = label_dictionary
        d = embed_tokens.embedding_dim
        self.padding_idx = embed_tokens.padding_idx
        self.label_padding_idx = embed_labels.padding_idx
        self.max_source_positions = cfg.max_source_positions
        self.embed_tokens, self.embed_labels = embed_tokens, embed_labels
        self.embed_scale = 1.0 if cfg.no_scale_embedding else math.sqrt(d)
        self.embed_positions = None if cfg.no_token_positional_embeddings else PositionalEmbedding(
            cfg.max_source_positions, d, self.padding_idx, learned=cfg.encoder.learned_pos)
        self.dropout_module = FairseqDropout(cfg.dropout, module_name=self.__class__.__name__)
        self.layers = nn.ModuleList([self.build_encoder_layer(cfg) for _ in range(cfg.encoder.layers)])
        self.layer_norm = LayerNorm(d) if cfg.encoder.normalize_before else None
        self.max_hier_index = cfg.hier_embed_size
        self.compiler = compiler_for(cfg)
        for layer in self.layers:
            layer.compiler = self.compiler

    @property
    def compiling(self) -> bool:
        """Whether this forward goes through the compiled layers (``--tree-compile``, training)."""
        return self.compiler is not None and self.training

    @staticmethod
    def build_encoder_layer(cfg: Tree2SeqConfig) -> nn.Module:
        """A tree layer, with fairseq's activation checkpointing (``--checkpoint-activations``, ``--offload-
        activations``) and FSDP wrapping, as fairseq's ``TransformerEncoderBase.build_encoder_layer`` does."""
        layer = Tree2SeqEncoderLayer(cfg)
        if cfg.checkpoint_activations:
            layer = checkpoint_wrapper(layer, offload_to_cpu=cfg.offload_activations)
        return fsdp_wrap(layer, min_num_params=cfg.min_params_to_wrap if not cfg.checkpoint_activations else 0)

    def upgrade_state_dict_named(self, state_dict, name):
        """Checkpoints of fairseq 0.12.2 and main load in either (:func:`upgrade_positions_buffer`)."""
        return upgrade_positions_buffer(self.embed_positions, state_dict, name)

    def build_tree(self, src_tokens: Tensor, src_nodes: Tensor, src_spans: Tensor) -> TreeStructure:
        return TreeStructure.build(src_spans, src_nodes.eq(self.label_padding_idx),
                                   src_tokens.eq(self.padding_idx), max_horizontal=self.max_hier_index,
                                   max_vertical=self.max_hier_index,
                                   pair_multiple=self.compiler.multiple if self.compiling else 1)

    def forward(self, src_tokens: Tensor, src_lengths: Optional[Tensor] = None, src_nodes: Optional[Tensor] = None,
                src_spans: Optional[Tensor] = None, return_all_hiddens: bool = False, return_attention: bool = False):
        """src_tokens [B, N] leaves, src_nodes [B, M] label ids, src_spans [B, M, 2] half-open spans.
        With ``return_attention``, ``out['attention']`` holds each layer's self-attention probabilities
        [H, B, N + M, N + M] (queries and keys ``[leaves; nodes]``)."""
        if src_nodes is None or src_spans is None:
            raise ValueError("tree2seq needs src_nodes and src_spans: use --task tree_translation")
        tree = self.build_tree(src_tokens, src_nodes, src_spans)
        leaves = self.embed_scale * self.embed_tokens(src_tokens)
        if self.embed_positions is not None:
            leaves = leaves + self.embed_positions(src_tokens)
        nodes = self.embed_scale * self.embed_labels(src_nodes)
        x = self.dropout_module(torch.cat([leaves, nodes], 1)).transpose(0, 1)  # [N + M, B, C]
        if self.compiling and self.layers:  # the layers' per-batch tensors, built before (outside) the graphs
            dtypes = {x.dtype}
            if torch.is_autocast_enabled(x.device.type):
                dtypes.add(torch.get_autocast_dtype(x.device.type))
            self.layers[0].self_attn.prepare(tree, sorted(dtypes, key=str))
            x = x.contiguous()  # the layers' input layout, so that the first layer shares their graph
        padding_mask = tree.pad_mask
        states = [x] if return_all_hiddens else []
        attention = []
        if self.compiling and not return_attention and self.compiler.stacks(self.layers, Tree2SeqEncoderLayer):
            outs = self.compiler.compiled(Tree2SeqEncoder.forward_stack)(self, x, tree)  # one graph, all layers
            x = outs[-1] if outs else x
            states += list(outs) if return_all_hiddens else []
        else:
            for layer in self.layers:
                x, attn = layer(x, tree, need_head_weights=return_attention)
                if return_all_hiddens:
                    states.append(x)
                if return_attention:
                    attention.append(attn)
        if self.layer_norm is not None:
            x = self.layer_norm(x)
        return {
            "encoder_out": [x], "encoder_padding_mask": [padding_mask], "encoder_embedding": [],
            "encoder_states": states, "tree": [tree], "src_tokens": [], "src_lengths": [],
            **({"attention": attention} if return_attention else {}),
        }

    def forward_stack(self, x: Tensor, tree: TreeStructure) -> Tuple[Tensor, ...]:
        """The layer loop of a train step (what ``--tree-compile-scope stack`` compiles as one graph): x [N + M, B, C]
        -> every layer's output [N + M, B, C], the last one last."""
        outs = []
        for layer in self.layers:
            x, _ = layer.forward_eager(x, tree)
            outs.append(x)
        return tuple(outs)

    @torch.jit.unused
    def reorder_encoder_out(self, encoder_out: Dict[str, List], new_order: Tensor):
        out = {
            "encoder_out": [x.index_select(1, new_order) for x in encoder_out["encoder_out"]],
            "encoder_padding_mask": [x.index_select(0, new_order) for x in encoder_out["encoder_padding_mask"]],
            "encoder_embedding": [], "src_tokens": [], "src_lengths": [],
            "encoder_states": [x.index_select(1, new_order) for x in encoder_out["encoder_states"]],
            "tree": [t.index_select(new_order) for t in encoder_out["tree"]],
        }
        return out

    def max_positions(self):
        return self.max_source_positions


# --------------------------------------------------------------------------------------------------
# decoder
# --------------------------------------------------------------------------------------------------

class TreeCrossAttention(nn.Module):
    """fairseq's ``encoder_attn`` call signature over :class:`TreeMultiheadAttention`'s cross mode.

    The batch's tree comes from the decoder's :class:`~fairseq_tree.side_channels.TreeContext` (fairseq's layer
    passes no tree: see :mod:`fairseq_tree.side_channels`); ``key`` is the encoder output ``[leaves; nodes]``. The
    accumulated encoder side is cached in ``incremental_state`` by the attention itself."""

    def __init__(self, attn: TreeMultiheadAttention, context: TreeContext):
        super().__init__()
        self.attn = attn
        self.context = context

    def forward(self, query, key, value, key_padding_mask=None, incremental_state=None, need_weights=False,
                need_head_weights=False, **unused):
        """fairseq's layer also passes ``static_kv=True`` (the encoder side never changes): in ``unused``."""
        tree = self.context.tree_for(key)
        return self.attn.forward_cross(query, key, tree, incremental_state=incremental_state,
                                       need_weights=need_weights, need_head_weights=need_head_weights)


class Tree2SeqDecoderLayer(TransformerDecoderLayerBase):
    def __init__(self, cfg, context, no_encoder_attn=False, add_bias_kv=False, add_zero_attn=False):
        self._context = context
        super().__init__(cfg, no_encoder_attn, add_bias_kv, add_zero_attn)

    compiler: Optional[LayerCompiler] = None  # set by the decoder with --tree-compile

    def forward(self, x, encoder_out=None, encoder_padding_mask=None, incremental_state=None,
                prev_self_attn_state=None, prev_attn_state=None, self_attn_mask=None, self_attn_padding_mask=None,
                need_attn: bool = False, need_head_weights: bool = False):
        """fairseq's decoder layer; in training with ``--tree-compile`` (no incremental state), :meth:`forward_train`
        through ``torch.compile`` (:mod:`fairseq_tree.modules.tree_compile`), or traced into the decoder's graph."""
        if (self.compiler is not None and self.training and incremental_state is None
                and prev_self_attn_state is None and prev_attn_state is None and not self.cross_self_attention):
            # one layout and always a padding mask (fairseq passes None when no target is padded): fewer graphs
            if self_attn_padding_mask is None:
                self_attn_padding_mask = x.new_zeros(x.size(1), x.size(0), dtype=torch.bool)
            # inside the decoder's compiled stack, traced as part of its graph; else compiled on its own
            forward = Tree2SeqDecoderLayer.forward_train
            return (forward if tracing() else self.compiler.compiled(forward))(
                self, x.contiguous(), encoder_out, encoder_padding_mask, self_attn_mask, self_attn_padding_mask,
                need_attn or need_head_weights, need_head_weights)
        return super().forward(x, encoder_out, encoder_padding_mask, incremental_state, prev_self_attn_state,
                               prev_attn_state, self_attn_mask, self_attn_padding_mask, need_attn, need_head_weights)

    def forward_train(self, x: Tensor, encoder_out: Optional[Tensor], encoder_padding_mask: Optional[Tensor],
                      self_attn_mask: Optional[Tensor], self_attn_padding_mask: Optional[Tensor], need_attn: bool,
                      need_head_weights: bool):
        """fairseq's ``TransformerDecoderLayerBase.forward`` without incremental state (the train step; the graph
        ``--tree-compile`` compiles): fairseq's reads each attention's ``_incremental_state_id`` (a string per
        layer) even then, which would make one graph per layer. x [T, B, C] -> (x [T, B, C], attention or None,
        None)."""
        residual = x
        if self.normalize_before:
            x = self.self_attn_layer_norm(x)
        x, attn = self.self_attn(query=x, key=x, value=x, key_padding_mask=self_attn_padding_mask,
                                 need_weights=False, attn_mask=self_attn_mask)
        if self.c_attn is not None:
            T, B = x.size(0), x.size(1)
            x = torch.einsum("tbhd,h->tbhd", x.view(T, B, self.nh, self.head_dim), self.c_attn)
            x = x.reshape(T, B, self.embed_dim)
        if self.attn_ln is not None:
            x = self.attn_ln(x)
        x = self.residual_connection(self.dropout_module(x), residual)
        if not self.normalize_before:
            x = self.self_attn_layer_norm(x)
        if self.encoder_attn is not None and encoder_out is not None:
            residual = x
            if self.normalize_before:
                x = self.encoder_attn_layer_norm(x)
            x, attn = self.encoder_attn(query=x, key=encoder_out, value=encoder_out,
                                        key_padding_mask=encoder_padding_mask, need_weights=need_attn,
                                        need_head_weights=need_head_weights)
            x = self.residual_connection(self.dropout_module(x), residual)
            if not self.normalize_before:
                x = self.encoder_attn_layer_norm(x)
        residual = x
        if self.normalize_before:
            x = self.final_layer_norm(x)
        x = self.activation_dropout_module(self.activation_fn(self.fc1(x)))
        if self.ffn_layernorm is not None:
            x = self.ffn_layernorm(x)
        x = self.dropout_module(self.fc2(x))
        if self.w_resid is not None:
            residual = torch.mul(self.w_resid, residual)
        x = self.residual_connection(x, residual)
        if not self.normalize_before:
            x = self.final_layer_norm(x)
        return x, attn, None

    def build_encoder_attention(self, embed_dim, cfg):
        attn = TreeMultiheadAttention(
            embed_dim, cfg.decoder.attention_heads, kdim=cfg.encoder.embed_dim, vdim=cfg.encoder.embed_dim,
            dropout=cfg.attention_dropout, encoder_decoder_attention=True, **_tree_attention_kwargs(cfg))
        return TreeCrossAttention(attn, self._context)


#: the largest causal mask a compiled decoder builds ahead (targets longer than this regrow it: one more graph)
MAX_FUTURE_MASK = 2048


class Tree2SeqDecoder(TransformerDecoderBase):
    """fairseq's Transformer decoder with tree cross-attention over ``[nodes; leaves]``."""

    def build_decoder_layer(self, cfg, no_encoder_attn=False):
        # fairseq's __init__ builds the layers before a subclass' __init__ body runs: the context is made here
        context = self.__dict__.setdefault("tree_context", TreeContext())
        layer = Tree2SeqDecoderLayer(cfg, context, no_encoder_attn)
        checkpoint = cfg.checkpoint_activations
        if checkpoint:
            layer = checkpoint_wrapper(layer, offload_to_cpu=cfg.offload_activations)
        min_params_to_wrap = cfg.min_params_to_wrap if not checkpoint else 0
        return fsdp_wrap(layer, min_num_params=min_params_to_wrap)

    compiler: Optional[LayerCompiler] = None  # set by the model with --tree-compile

    def extract_features_scriptable(self, prev_output_tokens, encoder_out, incremental_state=None,
                                    full_context_alignment=False, alignment_layer=None, alignment_heads=None):
        """fairseq's, the batch's tree set for the cross-attentions. In training with ``--tree-compile-scope stack``
        (no incremental state), fairseq's function itself through ``torch.compile``: embeddings, every layer, the
        final norm in one graph (the target's padding test splits off the embeddings: two graphs)."""
        self.tree_context.set(encoder_out["tree"][0] if encoder_out is not None else None)
        features = TransformerDecoderBase.extract_features_scriptable
        if (self.compiler is not None and self.training and incremental_state is None
                and self.compiler.stacks(self.layers, Tree2SeqDecoderLayer)):
            self.future_mask_of_max_size()
            features = self.compiler.compiled(features)
        return features(self, prev_output_tokens, encoder_out, incremental_state, full_context_alignment,
                        alignment_layer, alignment_heads)

    def future_mask_of_max_size(self) -> None:
        """fairseq's causal mask cache (``_future_mask``, an empty tensor until the first batch, then regrown to the
        longest target seen) built once at the largest size, before the compiled graph reads it: its rank and size
        would otherwise be guards, a new graph each time it grows."""
        n = min(self.max_positions(), MAX_FUTURE_MASK)
        if self._future_mask.size(0) < n:  # fairseq's initial torch.empty(0) has size 0
            self.buffered_future_mask(self.embed_tokens.weight.new_empty(n, 0))


# --------------------------------------------------------------------------------------------------
# model
# --------------------------------------------------------------------------------------------------

@register_model("tree2seq")
class Tree2SeqModel(FromPretrained, TransformerModel):
    """Tree-to-sequence Transformer (see the module docstring); data from ``--task tree_translation``."""

    @staticmethod
    def add_args(parser):
        add_tree2seq_args(parser)

    @classmethod
    def build_model(cls, args, task):
        """fairseq's ``TransformerModelBase.build_model`` (embedding sharing and its checks, layers to keep,
        activation offloading) on :class:`Tree2SeqConfig`, through the :meth:`build_encoder` and
        :meth:`build_decoder` hooks. The hook gets no task: the label dictionary rides on the config for the
        duration of the call (side channel 3 of :mod:`fairseq_tree.side_channels`)."""
        require_task("tree2seq", task, "label_dictionary", "tree_translation")
        tree2seq_base(args)
        cfg = Tree2SeqConfig.from_namespace(args)
        cfg.label_dictionary = task.label_dictionary
        try:
            return super(TransformerModel, cls).build_model(cfg, task)
        finally:
            del cfg.label_dictionary

    @classmethod
    def build_encoder(cls, cfg: Tree2SeqConfig, src_dict, embed_tokens):
        """The tree encoder, its node-label embedding built here (after fairseq's token embeddings)."""
        embed_labels = cls.build_embedding(cfg, cfg.label_dictionary, cfg.encoder.embed_dim)
        return Tree2SeqEncoder(cfg, src_dict, cfg.label_dictionary, embed_tokens, embed_labels)

    @classmethod
    def build_decoder(cls, cfg: Tree2SeqConfig, tgt_dict, embed_tokens):
        return Tree2SeqDecoder(cfg, tgt_dict, embed_tokens, no_encoder_attn=cfg.no_cross_attention)

    def __init__(self, args, encoder, decoder):
        super().__init__(args, encoder, decoder)
        compiler = getattr(encoder, "compiler", None)  # --tree-compile: the decoder and its layers share the encoder's
        if isinstance(decoder, Tree2SeqDecoder):
            decoder.compiler = compiler
        for layer in getattr(decoder, "layers", []):
            if isinstance(layer, Tree2SeqDecoderLayer):
                layer.compiler = compiler

    def forward(self, src_tokens, src_lengths, prev_output_tokens, src_nodes=None, src_spans=None,
                return_all_hiddens: bool = True, features_only: bool = False,
                alignment_layer: Optional[int] = None, alignment_heads: Optional[int] = None):
        """fairseq's forward. In training with ``--tree-compile``, the batch is first padded to the buckets
        (:meth:`LayerCompiler.pad_batch`) and the decoder output cut back to the target length."""
        T = prev_output_tokens.size(1)
        if self.encoder.compiling and src_nodes is not None and src_spans is not None:
            src_tokens, src_nodes, src_spans, prev_output_tokens = self.encoder.compiler.pad_batch(
                src_tokens, src_nodes, src_spans, prev_output_tokens, self.encoder.padding_idx,
                self.encoder.label_padding_idx, self.decoder.padding_idx)
        encoder_out = self.encoder(src_tokens, src_lengths=src_lengths, src_nodes=src_nodes, src_spans=src_spans,
                                   return_all_hiddens=return_all_hiddens)
        x, extra = self.decoder(prev_output_tokens, encoder_out=encoder_out, features_only=features_only,
                                alignment_layer=alignment_layer, alignment_heads=alignment_heads,
                                src_lengths=src_lengths, return_all_hiddens=return_all_hiddens)
        if x.size(1) != T:
            x = x[:, :T]
            if extra.get("attn") and extra["attn"][0] is not None:
                extra["attn"] = [extra["attn"][0][:, :T]]
        return x, extra


# --------------------------------------------------------------------------------------------------
# architectures (paper settings; tiny for CPU runs and tests)
# --------------------------------------------------------------------------------------------------

def tree_defaults(args) -> None:
    """Set the tree flags left unset (missing or None) to :class:`Tree2SeqConfig`'s defaults (the paper's)."""
    defaults = Tree2SeqConfig()
    for name in TREE_FLAGS:
        if getattr(args, name, None) is None:
            setattr(args, name, getattr(defaults, name))


def _size(args, dim: int, ffn: int, heads: int, layers: int) -> None:
    """Encoder and decoder of the same size; options given on the command line win (fairseq's getattr rule)."""
    for side in ("encoder", "decoder"):
        for name, value in (("embed_dim", dim), ("ffn_embed_dim", ffn), ("attention_heads", heads),
                            ("layers", layers)):
            setattr(args, f"{side}_{name}", getattr(args, f"{side}_{name}", value))


@register_model_architecture("tree2seq", "tree2seq")
def tree2seq_base(args):
    tree_defaults(args)
    base_architecture(args)


@register_model_architecture("tree2seq", "tree2seq_iwslt_de_en")
def tree2seq_iwslt_de_en(args):
    tree_defaults(args)
    transformer_iwslt_de_en(args)  # fairseq's: d 512, FFN 1024, 4 heads, 6 + 6 layers


@register_model_architecture("tree2seq", "tree2seq_wmt_en_de")
def tree2seq_wmt_en_de(args):
    tree2seq_base(args)  # d 512, ffn 2048, 8 heads, 6 + 6 layers: fairseq's transformer base


@register_model_architecture("tree2seq", "tree2seq_wmt_en_de_big")
def tree2seq_wmt_en_de_big(args):
    tree_defaults(args)
    transformer_vaswani_wmt_en_de_big(args)  # fairseq's big: d 1024, FFN 4096, 16 heads, dropout 0.3


@register_model_architecture("tree2seq", "tree2seq_multi30k_tiny")
def tree2seq_multi30k_tiny(args):
    """The size of Wu et al. 2021's text-only ``transformer_tiny`` on Multi30k (github LividWo/Revisit-MMT,
    fairseq/models/transformer.py): d 128, FFN 256, 4 heads, 4 + 4 layers."""
    _size(args, dim=128, ffn=256, heads=4, layers=4)
    tree2seq_base(args)


@register_model_architecture("tree2seq", "tree2seq_tiny")
def tree2seq_tiny(args):
    _size(args, dim=64, ffn=128, heads=2, layers=2)
    tree2seq_base(args)
