"""A pretrained HuggingFace encoder (BERT, RoBERTa, XLNet, ...) as the LAL parser's word vectors
(``--pretrained-encoder``; Mrini et al. 2020 sec. 4.1: "We use the large cased pre-trained XLNet as our
embedding model").

``transformers`` is an optional, heavy dependency (the ``[pretrained]`` extra): it is imported only inside the
functions that need it, never at module level, so the package imports without it.

What a checkpoint holds, so that it loads with ``weights_only=True`` (:mod:`fairseq_tree.safe_loading`) and needs
nothing from the network or the disk where it was trained:

* the encoder's weights: ordinary entries ``pretrained.encoder.*`` of the model's state dict (plain tensors);
* its configuration: ``args.pretrained_config``, the ``config.json`` text (a string, never a pickled
  ``PretrainedConfig``), from which the module is rebuilt before the weights are loaded;
* its tokenizer: the files ``save_pretrained`` writes, as a tar archive in the uint8 buffer
  ``pretrained.tokenizer_archive`` (bytes in a tensor, unpacked to a temporary directory on first use).

forward(B, T, pt_tokens, pt_mask, pt_word, pt_first, pt_last) -> [B, T, d_out]: the encoder over the subword
rows (:mod:`fairseq_tree.data.subwords`), pooled to the parser's tokens (``first`` / ``last`` subword: one gather;
``mean``: index_add over the subwords, then a division), then a bias-free projection to the content size (as the
authors' code). A token with no subword (padding, a word the tokenizer drops) gets ``empty``, a learned vector
initialised to zero. ``freeze``: the encoder gets no gradient and stays in eval mode (no dropout).
"""

import io
import json
import os
import tarfile
import tempfile
from typing import Optional, Tuple

import torch
import torch.nn as nn
from torch import Tensor

from fairseq_tree.data.subwords import SubwordBatcher

POOLINGS = ("first", "last", "mean")


def load_pretrained(name_or_dir: str) -> Tuple[nn.Module, bytes]:
    """-> (the encoder with its pretrained weights, its tokenizer's files as a tar archive). ``name_or_dir``: a
    local directory written by ``save_pretrained`` or a hub name (downloaded by transformers when online)."""
    try:
        from transformers import AutoModel, AutoTokenizer  # optional heavy dependency: the [pretrained] extra
    except ImportError as e:
        raise ImportError("--pretrained-encoder needs transformers: pip install 'fairseq-tree[pretrained]'") from e
    try:
        tokenizer = AutoTokenizer.from_pretrained(name_or_dir)
        encoder = AutoModel.from_pretrained(name_or_dir)
    except OSError as e:
        raise OSError(f"--pretrained-encoder {name_or_dir}: neither a local model directory (config.json, weights, "
                      f"tokenizer files) nor a hub name that can be downloaded here: {e}") from e
    with tempfile.TemporaryDirectory() as d:
        tokenizer.save_pretrained(d)
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            for name in sorted(os.listdir(d)):
                tar.add(os.path.join(d, name), arcname=name)
    return encoder, buf.getvalue()


def encoder_from_config(config_json: str) -> nn.Module:
    """A randomly initialised encoder of the architecture ``config_json`` describes (its weights come from the
    checkpoint's state dict next)."""
    from transformers import AutoConfig, AutoModel  # optional heavy dependency: the [pretrained] extra

    config = dict(json.loads(config_json))
    return AutoModel.from_config(AutoConfig.for_model(config.pop("model_type"), **config))


def tokenizer_from_archive(archive: bytes):
    from transformers import AutoTokenizer  # optional heavy dependency: the [pretrained] extra

    with tempfile.TemporaryDirectory() as d:
        with tarfile.open(fileobj=io.BytesIO(archive), mode="r") as tar:
            tar.extractall(d, filter="data")
        return AutoTokenizer.from_pretrained(d)


def default_max_length(encoder: nn.Module, tokenizer) -> int:
    """Subwords per chunk, specials included: the encoder's position table / the tokenizer's limit, at most 512."""
    limits = [512, getattr(encoder.config, "max_position_embeddings", None),
              getattr(tokenizer, "model_max_length", None)]
    return int(min(x for x in limits if isinstance(x, int) and x > 0))


class PretrainedWordEncoder(nn.Module):
    def __init__(self, encoder: nn.Module, tokenizer_archive: bytes, d_out: int, pooling: str = "first",
                 freeze: bool = False, max_length: Optional[int] = None):
        super().__init__()
        if pooling not in POOLINGS:
            raise ValueError(f"--pretrained-pooling {pooling}: one of {', '.join(POOLINGS)}")
        self.encoder, self.pooling, self.freeze, self.max_length = encoder, pooling, freeze, max_length
        hidden = encoder.config.hidden_size
        self.proj = nn.Linear(hidden, d_out, bias=False)
        self.empty = nn.Parameter(torch.zeros(hidden))
        archive = torch.frombuffer(bytearray(tokenizer_archive), dtype=torch.uint8).clone() if tokenizer_archive \
            else torch.zeros(0, dtype=torch.uint8)
        self.register_buffer("tokenizer_archive", archive)
        self._batcher = None
        if freeze:
            self.encoder.requires_grad_(False)
            self.encoder.eval()

    @property
    def config_json(self) -> str:
        return self.encoder.config.to_json_string(use_diff=False)

    def batcher(self) -> SubwordBatcher:
        """The collater's subword batcher, built on first use from the tokenizer archive (the checkpoint's own)."""
        if self._batcher is None:
            if self.tokenizer_archive.numel() == 0:
                raise RuntimeError("this pretrained-encoder model holds no tokenizer (its state dict has not been "
                                   "loaded yet, or the checkpoint lacks pretrained.tokenizer_archive)")
            os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")  # the collater may run in forked workers
            tokenizer = tokenizer_from_archive(self.tokenizer_archive.cpu().numpy().tobytes())
            self._batcher = SubwordBatcher(tokenizer, self.max_length or default_max_length(self.encoder, tokenizer))
        return self._batcher

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        key = prefix + "tokenizer_archive"
        if key in state_dict:  # its size is the saved tokenizer's, not the freshly built module's
            self.tokenizer_archive = state_dict[key].detach().to("cpu", torch.uint8).clone()
            self._batcher = None
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def train(self, mode: bool = True):
        super().train(mode)
        if self.freeze:
            self.encoder.eval()
        return self

    def forward(self, B: int, T: int, pt_tokens: Tensor, pt_mask: Tensor, pt_word: Tensor, pt_first: Tensor,
                pt_last: Tensor) -> Tensor:
        with torch.set_grad_enabled(torch.is_grad_enabled() and not self.freeze):
            hid = self.encoder(input_ids=pt_tokens, attention_mask=pt_mask).last_hidden_state  # [R, S, H]
        R, S, H = hid.shape
        flat = hid.reshape(R * S, H)
        empty = self.empty.to(hid.dtype)
        if self.pooling == "mean":
            w = pt_word.reshape(-1)
            valid = w.ge(0)
            idx = w.masked_select(valid)
            sums = flat.new_zeros(B * T, H).index_add_(0, idx, flat[valid])
            count = flat.new_zeros(B * T).index_add_(0, idx, flat.new_ones(idx.numel()))
            words = torch.where(count[:, None] > 0, sums / count.clamp(min=1)[:, None], empty)
        else:
            at = (pt_first if self.pooling == "first" else pt_last).reshape(-1)
            table = torch.cat([flat, empty[None]], 0)  # row R * S: the empty vector
            words = table[at.masked_fill(at.lt(0), R * S)]
        return self.proj(words.view(B, T, H))


__all__ = ["PretrainedWordEncoder", "load_pretrained", "encoder_from_config", "tokenizer_from_archive", "POOLINGS"]
