"""Task ``tree_translation``: translation from source trees (Nguyen et al., ICLR 2020).

Data: a directory written by ``fairseq-tree-preprocess`` (leaves, ``.nodes``, ``.spans``, target,
``dict.SRC.txt``, ``dict.TGT.txt``, ``dict.SRC.labels.txt``, ``bpe.codes``). Node labels have their own
dictionary and embedding table, so a label can never collide with a word.

``fairseq-interactive`` reads one source per line: a bracketed tree (``--tree-input brackets``, the
default) or raw text that is tokenized and parsed on the fly (``--tree-input raw`` with the same parser
backends as preprocessing: ``--tree-parser stanza --stanza-model-dir DIR``, ``--tree-parser lal
--tree-parser-model CKPT``, ``--tree-parser induced --tree-parser-model CKPT``). Either way the words are
split with the data directory's ``bpe.codes`` into POS-labelled subtrees exactly as in preprocessing. A line that
cannot be read or parsed is reported with its number and skipped; the other lines keep their numbers as ids
(``S-0`` is line 1).
"""

import logging
import os
from dataclasses import dataclass, field
from typing import Optional

import torch
from fairseq import utils
from fairseq.data import data_utils
from fairseq.tasks import register_task
from fairseq.tasks.translation import TranslationConfig, TranslationTask, load_langpair_dataset

from fairseq_tree.data import TreeLanguagePairDataset
from fairseq_tree.inference.export import resolve_folder
from fairseq_tree.parsers import ParseError
from fairseq_tree.parsers.raw_text import RawTextParser
from fairseq_tree.side_channels import InteractiveTrees
from fairseq_tree.tasks.criterion_check import CriterionCheck
from fairseq_tree.tasks.data_paths import split_data_path
from fairseq_tree.tasks.leftovers import KeepsLeftoverSentences
from fairseq_tree.text.bpe import Segmenter
from fairseq_tree.trees import expand_subwords, tree_from_brackets

logger = logging.getLogger(__name__)


@dataclass
class TreeTranslationConfig(TranslationConfig):
    tree_input: str = field(default="brackets", metadata={
        "help": "fairseq-interactive input: 'brackets' (one bracketed tree per line) or 'raw' (text, "
                "tokenized and parsed on the fly with --tree-parser)"})
    tree_parser: str = field(default="stanza", metadata={
        "help": "parser backend for --tree-input raw: stanza (--stanza-model-dir), lal or induced "
                "(--tree-parser-model)"})
    tree_parser_model: Optional[str] = field(default=None, metadata={
        "help": "the parser's checkpoint (or fairseq-tree-export folder) for --tree-parser lal / induced"})
    tree_parser_device: Optional[str] = field(default=None, metadata={
        "help": "where the raw-text parser runs: cpu, cuda, cuda:N (default: the GPU when there is one)"})
    stanza_model_dir: Optional[str] = field(default=None, metadata={
        "help": "stanza models for --tree-input raw (a dir written by scripts/recipes/train_stanza_parser.sh)"})
    tree_bpe_codes: Optional[str] = field(default=None, metadata={
        "help": "BPE codes for interactive input (default: DATA/bpe.codes if it exists)"})
    tree_unary: str = field(default="lowest", metadata={"help": "unary-chain label kept (as in preprocessing)"})
    tree_batch_by: str = field(default="positions", metadata={
        "help": "what --max-tokens counts on the source side: 'positions' (leaves + nodes, the encoder's length, "
                "as the authors' code batches) or 'leaves' (the words only: the same sentences per batch as a "
                "transformer on the same data, for comparisons at equal updates)"})
    check_replica_sync: int = field(default=0, metadata={
        "help": "in data-parallel training, every N updates compare a checksum of the weights across ranks "
                "and stop if they differ (fairseq checks nothing on CPU); 0 = off"})


def parser_options(cfg: TreeTranslationConfig) -> dict:
    """The raw-text backend's options from the task's flags (stanza: its model directory; lal / induced: the
    checkpoint, or a fairseq-tree-export folder: its ``model.pt`` with the folder's dictionaries)."""
    device = getattr(cfg, "tree_parser_device", None)
    if cfg.tree_parser == "stanza":
        return {"model_dir": cfg.stanza_model_dir, "device": device}
    model = getattr(cfg, "tree_parser_model", None)
    if not model:
        raise ValueError(f"--tree-parser {cfg.tree_parser} needs --tree-parser-model CKPT (a checkpoint or a "
                         "fairseq-tree-export folder)")
    data = None
    if os.path.isdir(model):
        model, data = resolve_folder(model, None, None)
    return {"model": model, "data": data, "device": device}


class _TreeInputParser:
    """fairseq-interactive input line -> subword tree (bracketed input, or raw text parsed on the fly),
    split with the data directory's BPE codes exactly as ``fairseq-tree-preprocess`` does."""

    def __init__(self, cfg: TreeTranslationConfig):
        codes = cfg.tree_bpe_codes or os.path.join(utils.split_paths(cfg.data)[0], "bpe.codes")
        self.segment = Segmenter(codes if os.path.exists(codes) else None)
        self.unary = cfg.tree_unary
        self.parse_raw = None
        if cfg.tree_input == "raw":
            self.parse_raw = RawTextParser(cfg.tree_parser, "moses", cfg.source_lang, **parser_options(cfg))
            self.parse_raw.backend  # noqa: B018  (load the parser now: a bad model fails before any input)
        elif cfg.tree_input != "brackets":
            raise ValueError(f"--tree-input must be brackets or raw, not {cfg.tree_input!r}")

    def __call__(self, line: str):
        line = line.strip()
        if self.parse_raw is not None:
            line = self.parse_raw([line])[0]
        return expand_subwords(tree_from_brackets(line, unary=self.unary), self.segment)


@register_task("tree_translation", dataclass=TreeTranslationConfig)
class TreeTranslationTask(KeepsLeftoverSentences, CriterionCheck, TranslationTask):
    """Translation whose source side is a tree: ``net_input`` gains ``src_nodes`` [B, M] (label ids)
    and ``src_spans`` [B, M, 2] (half-open leaf spans, post-order)."""

    cfg: TreeTranslationConfig
    COMPATIBLE_CRITERIA = ("cross_entropy", "label_smoothed_cross_entropy")

    def __init__(self, cfg: TreeTranslationConfig, src_dict, tgt_dict, label_dict):
        super().__init__(cfg, src_dict, tgt_dict)
        self.label_dict = label_dict
        self._input_parser = None
        self._interactive = InteractiveTrees()
        self._lines_read = 0  # fairseq-interactive's input lines so far (to name a bad one)

    @classmethod
    def setup_task(cls, cfg: TreeTranslationConfig, **kwargs):
        data = utils.split_paths(cfg.data)[0]
        if cfg.source_lang is None or cfg.target_lang is None:
            cfg.source_lang, cfg.target_lang = data_utils.infer_language_pair(data)
        dicts = {}
        for key, name in (("src", f"dict.{cfg.source_lang}.txt"), ("tgt", f"dict.{cfg.target_lang}.txt"),
                          ("labels", f"dict.{cfg.source_lang}.labels.txt")):
            path = os.path.join(data, name)
            if not os.path.exists(path):
                raise FileNotFoundError(f"{path}: missing (is {data} a fairseq-tree-preprocess directory?)")
            dicts[key] = cls.load_dictionary(path)
            logger.info("[%s] dictionary: %d types", name, len(dicts[key]))
        return cls(cfg, dicts["src"], dicts["tgt"], dicts["labels"])

    @property
    def label_dictionary(self):
        return self.label_dict

    def load_dataset(self, split, epoch=1, combine=False, **kwargs):
        if self.cfg.num_batch_buckets > 0:
            # fairseq would pad and order by leaf-length buckets alone: the nodes' count M still varies per
            # batch (no fixed shapes, the point of buckets) and positions-batching would count the wrong length
            raise ValueError("tree_translation does not support --num-batch-buckets: fairseq buckets the leaves "
                             "only, not the nodes")
        data_path = split_data_path(self.cfg.data, split, self.cfg.train_subset, epoch)
        src, tgt = self.cfg.source_lang, self.cfg.target_lang
        base = load_langpair_dataset(
            data_path, split, src, self.src_dict, tgt, self.tgt_dict, combine=False,
            dataset_impl=self.cfg.dataset_impl, upsample_primary=self.cfg.upsample_primary,
            left_pad_source=self.cfg.left_pad_source, left_pad_target=self.cfg.left_pad_target,
            max_source_positions=self.cfg.max_source_positions,
            max_target_positions=self.cfg.max_target_positions, load_alignments=False,
            truncate_source=False, num_buckets=self.cfg.num_batch_buckets, shuffle=(split != "test"),
            pad_to_multiple=self.cfg.required_seq_len_multiple)
        prefix = os.path.join(data_path, f"{split}.{src}-{tgt}.{src}")
        nodes = data_utils.load_indexed_dataset(prefix + ".nodes", None, self.cfg.dataset_impl)
        spans = data_utils.load_indexed_dataset(prefix + ".spans", None, self.cfg.dataset_impl)
        if nodes is None or spans is None:
            raise FileNotFoundError(f"{prefix}.nodes / .spans: tree side missing (run fairseq-tree-preprocess)")
        self.datasets[split] = TreeLanguagePairDataset(base, nodes, spans, self.label_dict,
                                                       batch_by=self.cfg.tree_batch_by)

    def optimizer_step(self, optimizer, model, update_num):
        super().optimizer_step(optimizer, model, update_num)
        n = self.cfg.check_replica_sync
        if n and (update_num + 1) % n == 0:
            check_replica_sync(model, update_num + 1)

    # ------------------------------------------------------------------ fairseq-interactive
    # fairseq-interactive passes inference_step only src_tokens/src_lengths: the tree side of each batch travels
    # through an InteractiveTrees (fairseq_tree/side_channels.py says why and how).
    def get_interactive_tokens_and_lengths(self, lines, encode_fn):
        """fairseq-interactive's input: a line that cannot be read or parsed is logged with its number (counted
        over the whole run) and skipped; the others keep their line numbers as ids (the dataset's collater
        maps them back), so ``S-k`` / ``H-k`` is still line k + 1."""
        kept, tokens = [], []
        for k, line in enumerate(lines):
            try:
                tokens.append(self.encode_tree_input(line))
                kept.append(k)
            except (ValueError, ParseError) as e:
                logger.error("input line %d: %s (skipped)", self._lines_read + k + 1, getattr(e, "message", e))
        self._lines_read += len(lines)
        self._interactive.keep_ids(kept)
        return tokens, [len(t) for t in tokens]

    def encode_tree_inputs(self, lines) -> list:
        """The hub's input: every line encoded (:meth:`encode_tree_input`), ids as given; a bad line raises
        ValueError naming its number (nothing of the call stays recorded)."""
        tokens = []
        for k, line in enumerate(lines):
            try:
                tokens.append(self.encode_tree_input(line))
            except (ValueError, ParseError) as e:
                self._interactive.take(len(tokens))
                raise ValueError(f"sentence {k + 1}: {getattr(e, 'message', e)}") from None
        self._interactive.keep_ids(list(range(len(tokens))))
        return tokens

    def encode_tree_input(self, line: str) -> torch.Tensor:
        """One input line (a bracketed tree, or raw text with ``--tree-input raw``) -> its leaf ids [n]; its
        tree side is recorded for the batch (side channel 2). TreeFormatError / ParseError on a bad line."""
        if self._input_parser is None:
            self._input_parser = _TreeInputParser(self.cfg)
        tree = self._input_parser(line)
        self._interactive.add(torch.tensor([self.label_dict.index(x) for x in tree.labels], dtype=torch.long),
                              torch.tensor(tree.flat_spans(), dtype=torch.long))
        return torch.tensor([self.src_dict.index(w) for w in tree.words], dtype=torch.long)

    def build_dataset_for_inference(self, src_tokens, src_lengths, constraints=None):
        nodes, spans = self._interactive.take(len(src_tokens))
        base = super().build_dataset_for_inference(src_tokens, src_lengths, constraints)
        dataset = TreeLanguagePairDataset(base, _ListDataset(nodes), _ListDataset(spans), self.label_dict)
        dataset.on_collate = self._interactive.collated
        return dataset

    def inference_step(self, generator, models, sample, prefix_tokens=None, constraints=None):
        self._interactive.restore(sample["net_input"])
        return super().inference_step(generator, models, sample, prefix_tokens, constraints)


def check_replica_sync(model, update: int) -> None:
    """All ranks must hold the same weights: compare a float64 checksum across ranks (gloo or nccl)."""
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() < 2:
        return
    with torch.no_grad():
        local = torch.stack([sum(p.detach().double().sum() for p in model.parameters()),
                             sum(p.detach().double().abs().sum() for p in model.parameters())])
    gathered = [torch.zeros_like(local) for _ in range(dist.get_world_size())]
    dist.all_gather(gathered, local)
    values = [g.cpu().tolist() for g in gathered]
    if any(v != values[0] for v in values):
        raise RuntimeError(f"replicas diverged at update {update}: weight checksums per rank {values}")
    logger.info("update %d: weights identical on %d ranks (checksum %.10f)", update, len(values), values[0][0])


class _ListDataset(list):
    @property
    def sizes(self):
        return [len(x) for x in self]
