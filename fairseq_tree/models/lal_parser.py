"""``lal_parser``: the Label Attention Layer parser (Mrini et al. 2020), constituency + dependency.

"The authors' code" below is `KhalilMrini/LAL-Parser` @ 4b13962, ``src_joint/KM_parser.py`` (the model; its
heads are a count, never tied to labels) and ``src_joint/main.py`` (training).

Tokens (BOS w_1..w_n EOS) are ``LN([content ; position])``: content = word embedding + POS-tag embedding
(``--no-pos-tags`` drops it) + a character CNN (max-pooled), position = a learned table.

Pretrained encoder (``--pretrained-encoder NAME_OR_DIR``, the paper's XLNet / BERT, sec. 4.1; needs the
``[pretrained]`` extra): the sentence's subwords (:mod:`fairseq_tree.data.subwords`, made by the collater from the
words as strings) go through the HuggingFace encoder, are pooled back to one vector per token
(``--pretrained-pooling first|last|mean``) and projected, bias-free, to d_content by
:meth:`LALParserModel.extra_content` (:mod:`fairseq_tree.modules.pretrained_encoder`): that vector is added to
the content (word + tag + characters), before the LayerNorm, where the paper's "embedding model" sits.
``--pretrained-replace-words`` drops the learned word embedding and the character CNN, so the content is the
pretrained vector + the tag embedding: the paper's "sum of word and part-of-speech embeddings" with XLNet as the
word embedding, and the authors' best script (word embeddings off, tags on). Pooling: the first subword by
default (the issue's choice); the authors' code takes the last one (``--pretrained-pooling last``, see
docs/lal.md, from the notes on the authors' code). ``--pretrained-lr`` gives the encoder its own learning
rate (the task's ``optimizer_step``), ``--pretrained-freeze`` freezes it.

Then ``--encoder-layers`` partitioned self-attention layers (Kitaev & Klein) and one Label Attention Layer
(:mod:`fairseq_tree.modules.label_attention`) with one head per constituent label by default (``--lal-heads``).
Ablations: ``--lal-no-pwff``, ``--lal-no-residual-dropout``.

Span features (eq. 5): each label head's output block u_{t,l} [d_proj] is split in a forward and a backward
half; fencepost k (0..n) = [fwd(token k) ; bwd(token k+1)] for every head, and span (i, j) = f_j - f_i.
Span label scores (eq. 6) ``W2 ReLU(LN(W1 (f_j - f_i) + b1)) + b2`` are computed as ``W1 f_j - W1 f_i`` so only
[B, n+1, n+1, hidden] is held, never [B, n+1, n+1, H * d_proj]. The empty label has score 0.

``--lal-tie-heads`` makes head l responsible for label l: the score of label l reads only head l's block,
through its own small MLP (hidden ``--lal-tied-hidden``), and the LAL's feed-forward layer, if on, acts per
head. (The authors' code never ties them; their 112 heads are just a count.)

Dependencies (eq. 10): biaffine arc scores between dependent word d (1..n) and head word h (0..n, 0 = the BOS
token as root) from the LAL output; relation labels (eq. 11) are a biaffine classifier of the (dependent,
head) pair, i.e. conditioned on the head.
"""

import argparse
import math
from typing import Dict, Optional

import torch
import torch.nn as nn
import torch.nn.functional as F
from fairseq.models import BaseFairseqModel, register_model, register_model_architecture
from torch import Tensor

from fairseq_tree.models.architecture import require_task, set_default
from fairseq_tree.models.hub_interface import FromPretrained
from fairseq_tree.modules.chart import cky, eisner
from fairseq_tree.modules.label_attention import LabelAttention, PartitionedSelfAttentionLayer
from fairseq_tree.modules.pretrained_encoder import (
    POOLINGS,
    PretrainedWordEncoder,
    encoder_from_config,
    load_pretrained,
)

NEG = -1e9


class CharCNN(nn.Module):
    """chars [B, T, C] -> [B, T, d_out]: embedding, conv (width 3), ReLU, max over the word's characters."""

    def __init__(self, num_chars, pad, d_char, d_out):
        super().__init__()
        self.pad = pad
        self.emb = nn.Embedding(num_chars, d_char, padding_idx=pad)
        self.conv = nn.Conv1d(d_char, d_out, 3, padding=1)

    def forward(self, chars: Tensor) -> Tensor:
        B, T, C = chars.shape
        x = self.emb(chars.view(B * T, C)).transpose(1, 2)  # [BT, d_char, C]
        y = F.relu(self.conv(x)).masked_fill(chars.view(B * T, 1, C).eq(self.pad), 0.0)
        return y.max(-1).values.view(B, T, -1)


class Biaffine(nn.Module):
    """s[b, i, j] = x_i^T W y_j + U^T x_i + V^T y_j + b, with ``out`` channels: [B, N, M, out]."""

    def __init__(self, d, out=1):
        super().__init__()
        self.W = nn.Parameter(torch.zeros(out, d, d))
        self.U, self.V = nn.Linear(d, out, bias=True), nn.Linear(d, out, bias=False)

    def forward(self, x: Tensor, y: Tensor) -> Tensor:
        bil = torch.einsum("bid,ode,bje->bijo", x, self.W, y)
        return bil + self.U(x)[:, :, None, :] + self.V(y)[:, None, :, :]


@register_model("lal_parser")
class LALParserModel(FromPretrained, BaseFairseqModel):
    HUB_INTERFACE = "ParserHubInterface"  # from_pretrained -> fairseq_tree.hub.ParserHubInterface

    @staticmethod
    def add_args(parser):
        a = parser.add_argument
        a("--d-content", type=int, metavar="D", help="content partition size")
        a("--d-position", type=int, metavar="D", help="position partition size")
        a("--encoder-layers", type=int, metavar="N", help="partitioned self-attention layers before the LAL")
        a("--attention-heads", type=int, metavar="N")
        a("--d-kv", type=int, metavar="D", help="self-attention key/value size per head (split in halves)")
        a("--d-ff", type=int, metavar="D")
        a("--dropout", type=float, metavar="P")
        a("--attention-dropout", type=float, metavar="P")
        a("--relu-dropout", type=float, metavar="P")
        a("--no-pos-tags", action="store_true", help="no POS-tag embedding in the content")
        a("--d-char", type=int, metavar="D", help="character embedding size (0: no character features)")
        a("--word-unk-alpha", type=float, metavar="A",
          help="training: replace a word seen c times by <unk> with probability A/(A+c) (0: never)")
        a("--lal-heads", type=int, metavar="N", help="label attention heads (0: one per constituent label)")
        a("--lal-d-kv", type=int, metavar="D", help="LAL query/key/value size per head")
        a("--lal-d-proj", type=int, metavar="D", help="LAL output size per head")
        a("--lal-d-ff", type=int, metavar="D")
        a("--lal-no-pwff", action="store_true", help="ablation: no position-wise feed-forward layer in the LAL")
        a("--lal-no-residual-dropout", action="store_true", help="ablation: no residual dropout in the LAL")
        a("--lal-tie-heads", action="store_true", help="head l scores label l only (needs --lal-heads 0)")
        a("--lal-tied-hidden", type=int, metavar="D", help="per-label MLP size with --lal-tie-heads")
        a("--label-hidden", type=int, metavar="D", help="span label MLP hidden size (eq. 6)")
        a("--d-biaffine", type=int, metavar="D", help="arc MLP size (eq. 10)")
        a("--d-rel", type=int, metavar="D", help="relation MLP size (eq. 11)")
        a("--max-positions", type=int, metavar="N")
        a("--pretrained-encoder", metavar="NAME_OR_DIR",
          help="HuggingFace encoder (a save_pretrained directory or a hub name) whose pooled subword vectors are "
               "projected into the content embedding (needs the [pretrained] extra)")
        a("--pretrained-pooling", choices=POOLINGS, help="which subwords make a word's vector (default: first)")
        a("--pretrained-replace-words", action="store_true",
          help="the pretrained vector replaces the word embedding and the character CNN (the paper's setting)")
        a("--pretrained-lr", type=float, metavar="LR",
          help="the pretrained encoder's learning rate (follows --lr's schedule, scaled); default: --lr")
        a("--pretrained-freeze", action="store_true", help="no gradient into the pretrained encoder")
        a("--pretrained-max-length", type=int, metavar="N",
          help="subwords per encoder call, specials included; longer sentences are split at word boundaries "
               "and rejoined (default: the encoder's limit, at most 512)")
        # set when the model is first built: the encoder's config.json text, so that a checkpoint rebuilds it
        a("--pretrained-config", help=argparse.SUPPRESS)

    def __init__(self, args, dicts: Dict, num_labels: int, num_rels: int):
        super().__init__()
        self.args = args
        wd, td, cd = dicts["words"], dicts["tags"], dicts["chars"]
        self.word_pad, self.word_unk = wd.pad(), wd.unk()
        dc, dp = args.d_content, args.d_position
        self.num_labels, self.num_rels = num_labels, num_rels
        self.pretrained = self._build_pretrained(args, dc)
        replace = self.pretrained is not None and args.pretrained_replace_words
        if args.pretrained_replace_words and self.pretrained is None:
            raise ValueError("--pretrained-replace-words needs --pretrained-encoder")
        self.embed_words = None if replace else nn.Embedding(len(wd), dc, padding_idx=wd.pad())
        self.embed_tags = None if args.no_pos_tags else nn.Embedding(len(td), dc, padding_idx=td.pad())
        self.chars = CharCNN(len(cd), cd.pad(), args.d_char, dc) if args.d_char > 0 and not replace else None
        self.embed_positions = nn.Parameter(torch.randn(args.max_positions, dp) * 0.1)
        self.embed_ln = nn.LayerNorm(dc + dp)
        counts = torch.tensor([float(c) for c in wd.count], dtype=torch.float)
        counts[: wd.nspecial] = float("inf")  # never replace BOS/EOS/pad
        self.register_buffer("unk_prob", args.word_unk_alpha / (args.word_unk_alpha + counts), persistent=False)
        self.layers = nn.ModuleList([
            PartitionedSelfAttentionLayer(dc, dp, args.attention_heads, args.d_kv, args.d_ff, args.dropout,
                                          args.attention_dropout, args.relu_dropout)
            for _ in range(args.encoder_layers)])
        H = args.lal_heads or num_labels
        if args.lal_tie_heads and H != num_labels:
            raise ValueError(f"--lal-tie-heads needs one head per label ({num_labels}), got --lal-heads {H}")
        self.lal_heads, self.tied = H, args.lal_tie_heads
        self.lal = LabelAttention(dc, dp, H, args.lal_d_kv, args.lal_d_proj, args.dropout, args.attention_dropout,
                                  residual_dropout=not args.lal_no_residual_dropout, pwff=not args.lal_no_pwff,
                                  d_ff=args.lal_d_ff, relu_dropout=args.relu_dropout, per_head_ffn=self.tied)
        dh = args.lal_d_proj
        if self.tied:
            e = args.lal_tied_hidden
            self.span_w1 = nn.Parameter(torch.randn(H, dh, e) / math.sqrt(dh))
            self.span_b1 = nn.Parameter(torch.zeros(H, e))
            self.span_ln = nn.LayerNorm(e)
            self.span_w2 = nn.Parameter(torch.randn(H, e) / math.sqrt(e))
            self.span_b2 = nn.Parameter(torch.zeros(H))
        else:
            self.span_w1 = nn.Linear(H * dh, args.label_hidden)
            self.span_ln = nn.LayerNorm(args.label_hidden)
            self.span_w2 = nn.Linear(args.label_hidden, num_labels)
        d_all = H * dh
        self.arc_dep, self.arc_head = nn.Linear(d_all, args.d_biaffine), nn.Linear(d_all, args.d_biaffine)
        self.arc = Biaffine(args.d_biaffine, 1)
        self.rel_dep, self.rel_head = nn.Linear(d_all, args.d_rel), nn.Linear(d_all, args.d_rel)
        self.rel = Biaffine(args.d_rel, max(num_rels, 1))
        # without POS-tag input the parser predicts the tags it writes out (not in the paper; its tags are inputs)
        self.tagger = nn.Linear(d_all, len(td)) if args.no_pos_tags else None

    @classmethod
    def build_model(cls, args, task):
        require_task("lal_parser", task, "label_names", "constituency_parsing")
        lal_parser_base(args)
        return cls(args, task.dicts, task.num_labels, task.num_relations)

    def max_positions(self):
        return self.args.max_positions  # tokens, BOS and EOS included (as the dataset's sizes)

    @staticmethod
    def _build_pretrained(args, d_content) -> Optional[PretrainedWordEncoder]:
        """The pretrained encoder: loaded from ``--pretrained-encoder`` when the model is first built (its config
        then kept in ``args.pretrained_config``), rebuilt from that config when a checkpoint is loaded (weights
        and tokenizer come from the checkpoint's state dict)."""
        if not args.pretrained_encoder:
            return None
        if args.pretrained_config:
            encoder, archive = encoder_from_config(args.pretrained_config), b""
        else:
            encoder, archive = load_pretrained(args.pretrained_encoder)
        module = PretrainedWordEncoder(encoder, archive, d_content, args.pretrained_pooling, args.pretrained_freeze,
                                       args.pretrained_max_length)
        args.pretrained_config = module.config_json
        return module

    def subword_batcher(self):
        """The collater's words -> subwords function (:class:`fairseq_tree.data.subwords.SubwordBatcher`), or
        None without a pretrained encoder."""
        return None if self.pretrained is None else self.pretrained.batcher()

    def pretrained_parameters(self):
        """The pretrained encoder's own parameters (those ``--pretrained-lr`` applies to); empty without one."""
        return [] if self.pretrained is None else list(self.pretrained.encoder.parameters())

    def extra_content(self, src_tokens: Tensor, **pt) -> Optional[Tensor]:
        """The pretrained encoder's pooled, projected word vectors [B, T, d_content] (added to the content), from
        the collater's ``pt_*`` inputs; None without a pretrained encoder."""
        if self.pretrained is None:
            return None
        missing = [k for k in ("pt_tokens", "pt_mask", "pt_word", "pt_first", "pt_last") if pt.get(k) is None]
        if missing:
            raise ValueError(f"this model has a pretrained encoder but the batch lacks {missing}: build batches "
                             "with the task this model was built by (it gives the collater the model's tokenizer)")
        B, T = src_tokens.shape
        return self.pretrained(B, T, pt["pt_tokens"], pt["pt_mask"], pt["pt_word"], pt["pt_first"], pt["pt_last"])

    # ------------------------------------------------------------------------------------------ encoder
    def encode(self, src_tokens: Tensor, src_tags: Tensor, src_chars: Tensor, **pt):
        """-> (h [B, T, H, d_proj] LAL output per head, LAL attention [B, H, T], pad mask [B, T]).
        ``pt``: the pretrained encoder's ``pt_*`` inputs from the collater (with ``--pretrained-encoder``)."""
        B, T = src_tokens.shape
        pad = src_tokens.eq(self.word_pad)
        words = src_tokens
        if self.training and self.args.word_unk_alpha > 0:
            drop = torch.rand(words.shape, device=words.device) < self.unk_prob[words]
            words = words.masked_fill(drop, self.word_unk)
        parts = [self.extra_content(src_tokens, **pt)]
        if self.embed_words is not None:
            parts.append(self.embed_words(words))
        if self.embed_tags is not None:
            parts.append(self.embed_tags(src_tags))
        if self.chars is not None:
            parts.append(self.chars(src_chars))
        parts = [p for p in parts if p is not None]
        if not parts:
            raise ValueError("no content embedding: --pretrained-replace-words with --no-pos-tags needs the "
                             "pretrained encoder's vectors")
        content = parts[0]
        for p in parts[1:]:
            content = content + p
        if T > self.embed_positions.size(0):
            raise ValueError(f"sentence of {T - 2} words exceeds --max-positions {self.args.max_positions}")
        pos = self.embed_positions[:T][None].expand(B, -1, -1)
        x = self.embed_ln(torch.cat([content, pos], -1))
        x = F.dropout(x, self.args.dropout, self.training).masked_fill(pad[..., None], 0.0)
        for layer in self.layers:
            x = layer(x, pad)
        h, attn = self.lal(x, pad)
        h = h.masked_fill(pad[..., None], 0.0)
        return h.view(B, T, self.lal_heads, -1), attn, pad

    def span_scores(self, h: Tensor) -> Tensor:
        """h [B, T, H, d_proj] -> label scores [B, n+1, n+1, L] of every span (i, j) of fenceposts."""
        half = h.size(-1) // 2
        f = torch.cat([h[:, :-1, :, :half], h[:, 1:, :, half:]], -1)  # fenceposts [B, n+1, H, d_proj]
        if self.tied:
            g = torch.einsum("bkhd,hde->bkhe", f, self.span_w1)  # [B, n+1, L, e]
            z = g[:, None] - g[:, :, None] + self.span_b1  # [B, i, j, L, e]: W1 (f_j - f_i) + b1
            z = F.relu(self.span_ln(z))
            return (z * self.span_w2).sum(-1) + self.span_b2
        g = F.linear(f.flatten(2), self.span_w1.weight)  # [B, n+1, hidden]: W1 f_k, bias added once below
        z = g[:, None, :, :] - g[:, :, None, :] + self.span_w1.bias  # [B, i, j, hidden]
        return self.span_w2(F.relu(self.span_ln(z)))

    def forward(self, src_tokens, src_tags, src_chars, src_lengths, **kwargs) -> Dict[str, Tensor]:
        """-> label_scores [B, n+1, n+1, L]; arc_scores [B, n+1, n+1] (dependent d, head h; heads > n_b and
        h == d masked to -1e9); rel_dep / rel_head [B, n+1, d_rel]; attention [B, H, T]; tag_scores [B, n, tags]
        (word d at index d-1) with ``--no-pos-tags``, else None."""
        pt = {k: v for k, v in kwargs.items() if k.startswith("pt_")}
        h, attn, pad = self.encode(src_tokens, src_tags, src_chars, **pt)
        B, T = src_tokens.shape
        hw = h.flatten(2)[:, :-1]  # BOS (root) + words + (padding): [B, n+1, H*d_proj]
        dep, head = F.relu(self.arc_dep(hw)), F.relu(self.arc_head(hw))
        arcs = self.arc(dep, head).squeeze(-1)  # [B, d, h]
        n1 = T - 1
        idx = torch.arange(n1, device=hw.device)
        valid_h = idx[None, :] <= src_lengths[:, None]  # [B, h]
        mask = ~valid_h[:, None, :] | idx[None, :, None].eq(idx[None, None, :])
        arcs = arcs.masked_fill(mask, NEG)
        out_tags = self.tagger(hw[:, 1:]) if self.tagger is not None else None  # [B, n, tags] or None
        return {"label_scores": self.span_scores(h), "arc_scores": arcs, "tag_scores": out_tags,
                "rel_dep": F.relu(self.rel_dep(hw)), "rel_head": F.relu(self.rel_head(hw)),
                "attention": attn, "lengths": src_lengths}

    def rel_scores(self, out: Dict[str, Tensor], heads: Tensor) -> Tensor:
        """Relation scores of each dependent given its head: heads [B, n+1] -> [B, n+1, R]."""
        rh = out["rel_head"].gather(1, heads[..., None].expand(-1, -1, out["rel_head"].size(-1)))
        x, y = out["rel_dep"], rh
        bil = torch.einsum("bid,ode,bie->bio", x, self.rel.W, y)
        return bil + self.rel.U(x) + self.rel.V(y)

    @torch.no_grad()
    def parse(self, net_input: Dict[str, Tensor]):
        """Decode: CKY for constituents, Eisner (projective, one root child) for dependencies.
        Returns (spans: list of (start, end, class) per sentence, heads [B, n+1], rels [B, n+1], out);
        ``out['tag_scores']`` holds predicted tags' scores for ``--no-pos-tags`` models."""
        out = self.forward(**net_input)
        lengths = net_input["src_lengths"]
        spans, _ = cky(out["label_scores"], lengths)
        heads, _ = eisner(out["arc_scores"].transpose(1, 2), lengths)
        rels = self.rel_scores(out, heads).argmax(-1)
        return spans, heads, rels, out


@register_model_architecture("lal_parser", "lal_parser")
def lal_parser_base(args):
    """The paper's sizes (sec. 4.1, authors' best script): d_model 1024, 3 layers, 8 heads, LAL 128/128."""
    for name, value in (("d_content", 512), ("d_position", 512), ("encoder_layers", 3), ("attention_heads", 8),
                        ("d_kv", 64), ("d_ff", 2048), ("dropout", 0.2), ("attention_dropout", 0.2),
                        ("relu_dropout", 0.2), ("d_char", 64), ("word_unk_alpha", 1.0), ("lal_heads", 0),
                        ("lal_d_kv", 128), ("lal_d_proj", 128), ("lal_d_ff", 2048), ("lal_tied_hidden", 16),
                        ("label_hidden", 250), ("d_biaffine", 1024), ("d_rel", 128), ("max_positions", 512),
                        ("pretrained_encoder", None), ("pretrained_pooling", "first"), ("pretrained_lr", None),
                        ("pretrained_max_length", None), ("pretrained_config", None)):
        set_default(args, name, value)
    for flag in ("no_pos_tags", "lal_no_pwff", "lal_no_residual_dropout", "lal_tie_heads", "pretrained_replace_words",
                 "pretrained_freeze"):
        set_default(args, flag, False)


@register_model_architecture("lal_parser", "lal_parser_small")
def lal_parser_small(args):
    """A CPU-sized parser for the PTB sample."""
    for name, value in (("d_content", 128), ("d_position", 128), ("encoder_layers", 2), ("attention_heads", 4),
                        ("d_kv", 32), ("d_ff", 512), ("lal_d_kv", 32), ("lal_d_proj", 32), ("lal_d_ff", 512),
                        ("label_hidden", 128), ("d_biaffine", 256), ("d_rel", 64), ("d_char", 32),
                        ("lal_tied_hidden", 8)):
        set_default(args, name, value)
    lal_parser_base(args)


@register_model_architecture("lal_parser", "lal_parser_tiny")
def lal_parser_tiny(args):
    """For tests: one small layer, no dropout."""
    for name, value in (("d_content", 64), ("d_position", 32), ("encoder_layers", 1), ("attention_heads", 4),
                        ("d_kv", 16), ("d_ff", 128), ("lal_d_kv", 16), ("lal_d_proj", 16), ("lal_d_ff", 64),
                        ("label_hidden", 64), ("d_biaffine", 64), ("d_rel", 32), ("d_char", 16), ("dropout", 0.0),
                        ("attention_dropout", 0.0), ("relu_dropout", 0.0), ("word_unk_alpha", 0.0),
                        ("lal_tied_hidden", 8), ("max_positions", 300)):
        set_default(args, name, value)
    lal_parser_base(args)
