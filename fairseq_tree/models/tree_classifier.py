"""Tree classification models (Nguyen et al., ICLR 2020, Section 5.2 and Tables 2-3) for ``--task
tree_classification``.

* ``tree_classifier``: the tree2seq encoder (:class:`Tree2SeqEncoder`: self-attention over ``[leaves; nodes]``
  with the subtree mask, hierarchical accumulation and embeddings; ``--no-hierarchical-embeddings`` and
  ``--no-subtree-mask`` are Table 3's ablations) and one classification head applied to every leaf and node.
  The sentence's class is read at its root: the last node in post-order, or the leaf of a one-word sentence.
* ``transformer_classifier``: the baseline of the same size, fairseq's own :class:`TransformerEncoder` over
  ``<s> w_1 .. w_n`` (the tree is ignored), the same head on ``<s>`` (RoBERTa's / ``sentence_prediction``'s
  recipe). It classifies sentences only (train it ``--root-only``; ``--phrase-samples`` for Tai et al.'s
  phrase-level training).

Both: token embeddings randomly initialised (N(0, d^-1/2), as the paper: no pretrained vectors), x sqrt(d),
sinusoidal positions; the head is fairseq's :class:`RobertaClassificationHead` (dropout, dense d -> d, tanh,
dropout, d -> C). Output of ``forward``: ``{"sentence": [B, C], "leaves": [B, N, C] | None, "nodes":
[B, M, C] | None}`` (logits; padded positions hold garbage and have no target).

Archs (both models, same sizes): ``*_tiny`` is the paper's classification size (2 layers, d 64, 4 heads) with
FFN 256: the paper does not give the FFN size; 4 d is the Transformer's ratio (Vaswani et al.; the paper's WMT
models, 512 / 2048). ``*_small``: 4 layers, d 256, FFN 1024, 4 heads. ``tree_classifier`` /
``transformer_classifier``: 6 layers, d 512, FFN 2048, 8 heads (Transformer base).
"""

import torch
from fairseq.models import BaseFairseqModel, register_model, register_model_architecture
from fairseq.models.roberta.model import RobertaClassificationHead
from fairseq.models.transformer import TransformerEncoder, TransformerModel, base_architecture
from torch import Tensor

from fairseq_tree.models.architecture import require_task
from fairseq_tree.models.hub_interface import FromPretrained
from fairseq_tree.models.tree2seq_transformer import Tree2SeqEncoder, add_tree2seq_args, tree_defaults
from fairseq_tree.modules.fairseq_layers import PlainTransformerEncoder
from fairseq_tree.modules.tree_structure import TreeStructure, root_positions  # noqa: F401  (re-exported)


def add_head_args(parser) -> None:
    """The classification head's flags (the encoder's come from its model: decoder flags are accepted, unused)."""
    parser.add_argument("--pooler-dropout", type=float, metavar="D",
                        help="dropout in the classification head (default: --dropout)")
    parser.add_argument("--pooler-activation-fn", metavar="FN", help="activation of the head's dense layer (tanh)")


def build_head(args, num_classes: int) -> RobertaClassificationHead:
    d = args.encoder_embed_dim
    return RobertaClassificationHead(d, d, num_classes, args.pooler_activation_fn, args.pooler_dropout)


def classify_positions(head: RobertaClassificationHead, x: Tensor) -> Tensor:
    """The head on every position: x [B, T, C] -> logits [B, T, K] (the head reads position 0 of [B*T, 1, C])."""
    B, T, C = x.shape
    return head(x.reshape(B * T, 1, C)).view(B, T, -1)


@register_model("tree_classifier")
class TreeClassifierModel(FromPretrained, BaseFairseqModel):
    """The tree2seq encoder + a classification head on every leaf and node (see the module docstring)."""

    CLASSIFIES_UNITS = True  # every leaf and node, not the sentence only (inference.classify asks)

    HUB_INTERFACE = "ClassifierHubInterface"  # from_pretrained -> models.hub_interface.ClassifierHubInterface

    def __init__(self, args, encoder: Tree2SeqEncoder, head: RobertaClassificationHead):
        super().__init__()
        self.args, self.encoder, self.head = args, encoder, head

    @staticmethod
    def add_args(parser):
        add_tree2seq_args(parser)
        add_head_args(parser)

    @classmethod
    def build_model(cls, args, task):
        require_task("tree_classifier", task, "num_classes", "tree_classification")
        tree_classifier_base(args)
        args.max_source_positions = task.max_positions()
        d = args.encoder_embed_dim
        embed_tokens = TransformerModel.build_embedding(args, task.source_dictionary, d)
        embed_labels = TransformerModel.build_embedding(args, task.label_dictionary, d)
        encoder = Tree2SeqEncoder(args, task.source_dictionary, task.label_dictionary, embed_tokens, embed_labels)
        return cls(args, encoder, build_head(args, task.num_classes))

    def forward(self, src_tokens: Tensor, src_lengths: Tensor, src_nodes: Tensor, src_spans: Tensor,
                return_attention: bool = False) -> dict:
        """src_tokens [B, N], src_nodes [B, M], src_spans [B, M, 2] -> logits ``sentence`` [B, K], ``leaves``
        [B, N, K], ``nodes`` [B, M, K]; with ``return_attention`` also ``attention`` (per layer [H, B, T, T],
        T = N + M) and ``tree``."""
        out = self.encoder(src_tokens, src_lengths, src_nodes, src_spans, return_attention=return_attention)
        tree = out["tree"][0]
        logits = classify_positions(self.head, out["encoder_out"][0].transpose(0, 1))  # [B, N + M, K]
        root = root_positions(tree)
        sentence = logits.gather(1, root[:, None, None].expand(-1, 1, logits.size(-1))).squeeze(1)
        N = tree.num_leaves
        result = {"sentence": sentence, "leaves": logits[:, :N], "nodes": logits[:, N:]}
        if return_attention:
            result.update(attention=out["attention"], tree=tree)
        return result

    def max_positions(self):
        return self.args.max_source_positions


@register_model("transformer_classifier")
class TransformerClassifierModel(FromPretrained, BaseFairseqModel):
    """Baseline: fairseq's TransformerEncoder over ``<s> w_1 .. w_n`` and the head on ``<s>``."""

    HUB_INTERFACE = "ClassifierHubInterface"

    def __init__(self, args, encoder: TransformerEncoder, head: RobertaClassificationHead):
        super().__init__()
        self.args, self.encoder, self.head = args, encoder, head
        self.bos = encoder.dictionary.bos()

    @staticmethod
    def add_args(parser):
        TransformerModel.add_args(parser)
        add_head_args(parser)

    @classmethod
    def build_model(cls, args, task):
        require_task("transformer_classifier", task, "num_classes", "tree_classification")
        transformer_classifier_base(args)
        args.max_source_positions = task.max_positions() + 1  # + <s>
        embed_tokens = TransformerModel.build_embedding(args, task.source_dictionary, args.encoder_embed_dim)
        encoder = PlainTransformerEncoder(args, task.source_dictionary, embed_tokens)
        return cls(args, encoder, build_head(args, task.num_classes))

    def forward(self, src_tokens: Tensor, src_lengths: Tensor, **tree_inputs) -> dict:
        """src_tokens [B, N] (the tree inputs are ignored) -> ``sentence`` logits [B, K]."""
        tokens = torch.cat([src_tokens.new_full((src_tokens.size(0), 1), self.bos), src_tokens], 1)
        x = self.encoder(tokens, src_lengths + 1)["encoder_out"][0].transpose(0, 1)  # [B, 1 + N, C]
        return {"sentence": self.head(x), "leaves": None, "nodes": None}

    def max_positions(self):
        return self.args.max_source_positions - 1


# --------------------------------------------------------------------------------------------------
# architectures
# --------------------------------------------------------------------------------------------------

def _classifier_defaults(args) -> None:
    args.pooler_dropout = getattr(args, "pooler_dropout", None)
    if args.pooler_dropout is None:
        args.pooler_dropout = getattr(args, "dropout", 0.1)
    args.pooler_activation_fn = getattr(args, "pooler_activation_fn", None) or "tanh"
    base_architecture(args)


def _size(args, layers: int, dim: int, ffn: int, heads: int) -> None:
    args.encoder_layers = getattr(args, "encoder_layers", layers)
    args.encoder_embed_dim = getattr(args, "encoder_embed_dim", dim)
    args.encoder_ffn_embed_dim = getattr(args, "encoder_ffn_embed_dim", ffn)
    args.encoder_attention_heads = getattr(args, "encoder_attention_heads", heads)


@register_model_architecture("tree_classifier", "tree_classifier")
def tree_classifier_base(args):
    tree_defaults(args)
    _classifier_defaults(args)


@register_model_architecture("tree_classifier", "tree_classifier_tiny")
def tree_classifier_tiny(args):
    _size(args, 2, 64, 256, 4)
    tree_classifier_base(args)


@register_model_architecture("tree_classifier", "tree_classifier_small")
def tree_classifier_small(args):
    _size(args, 4, 256, 1024, 4)
    tree_classifier_base(args)


@register_model_architecture("transformer_classifier", "transformer_classifier")
def transformer_classifier_base(args):
    _classifier_defaults(args)


@register_model_architecture("transformer_classifier", "transformer_classifier_tiny")
def transformer_classifier_tiny(args):
    _size(args, 2, 64, 256, 4)
    transformer_classifier_base(args)


@register_model_architecture("transformer_classifier", "transformer_classifier_small")
def transformer_classifier_small(args):
    _size(args, 4, 256, 1024, 4)
    transformer_classifier_base(args)
