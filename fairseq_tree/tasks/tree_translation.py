"""Task ``tree_translation``: translation from source trees (Nguyen et al., ICLR 2020).

Data: a directory written by ``fairseq-tree-preprocess`` (leaves, ``.nodes``, ``.spans``, target,
``dict.SRC.txt``, ``dict.TGT.txt``, ``dict.SRC.labels.txt``, ``bpe.codes``). Node labels have their own
dictionary and embedding table, so a label can never collide with a word.

``fairseq-interactive`` reads one source per line: a bracketed tree (``--tree-input brackets``, the
default) or raw text that is tokenized and parsed on the fly (``--tree-input raw`` with the same parser
backends as preprocessing: ``--tree-parser stanza --stanza-model-dir DIR``, ``--tree-parser lal
--tree-parser-model CKPT``, ``--tree-parser induced --tree-parser-model CKPT``). Either way the words are
split with the data directory's ``bpe.codes`` into POS-labelled subtrees exactly as in preprocessing. A line that
cannot be read or parsed is reported with its number and skipped, and counted; the other lines keep their
numbers as ids (``S-0`` is line 1). When the first line fails, nothing has been translated and the run stops
(exit status 1) with the reason and its fix: raw text without ``--tree-input raw``, say. A sentence over the
model's positions (leaves + nodes) is refused, naming ``--skip-invalid-size-inputs-valid-test``, or skipped and
counted with it (:mod:`fairseq_tree.inference.input_policy`: the same policy in the hub and in preprocessing).

Without ``-s``/``-t`` the language pair is the one pair whose datasets DATA holds, filled in while the command line
is parsed (:class:`DataAndLanguagePair`): fairseq's translation task infers it only in ``setup_task``, after the
command line has become a config, and by then ``--tokenizer moses`` has been handed ``source_lang=None`` and hydra
has refused it (``ConfigCompositionException: Error merging override tokenizer.source_lang=null``).
"""

import argparse
import logging
import os
from dataclasses import dataclass, field
from typing import List, Optional, Tuple

import torch
from fairseq import utils
from fairseq.data import data_utils
from fairseq.dataclass import ChoiceEnum
from fairseq.tasks import register_task
from fairseq.tasks.translation import TranslationConfig, TranslationTask, load_langpair_dataset

from fairseq_tree.data import TreeLanguagePairDataset
from fairseq_tree.inference.export import resolve_folder
from fairseq_tree.inference.input_policy import InputRun, length_fix, over_length
from fairseq_tree.parsers import BACKENDS, ParseError
from fairseq_tree.parsers.raw_text import RawTextParser
from fairseq_tree.side_channels import InteractiveTrees
from fairseq_tree.tasks.criterion_check import CriterionCheck
from fairseq_tree.tasks.data_paths import record_absolute_data, split_data_path
from fairseq_tree.tasks.leftovers import KeepsLeftoverSentences
from fairseq_tree.text.bpe import Segmenter
from fairseq_tree.trees import TreeFormatError, expand_subwords, tree_from_brackets

logger = logging.getLogger(__name__)


@dataclass
class TreeTranslationConfig(TranslationConfig):
    # choices: argparse refuses another value on the command line, and fairseq's setup_task (the config merged
    # with this dataclass) in a hub's options
    tree_input: ChoiceEnum(["brackets", "raw"]) = field(default="brackets", metadata={
        "help": "fairseq-interactive input: 'brackets' (one bracketed tree per line) or 'raw' (text, "
                "tokenized and parsed on the fly with --tree-parser)"})
    tree_parser: ChoiceEnum(list(BACKENDS)) = field(default="stanza", metadata={
        "help": "parser backend for --tree-input raw: stanza (--stanza-model-dir), lal or induced "
                "(--tree-parser-model)"})
    tree_parser_model: Optional[str] = field(default=None, metadata={
        "help": "the parser's checkpoint (or fairseq-tree-export folder) for --tree-parser lal / induced"})
    tree_parser_device: Optional[str] = field(default=None, metadata={
        "help": "where the raw-text parser runs: cpu, cuda, cuda:N (default: the GPU when there is one)"})
    stanza_model_dir: Optional[str] = field(default=None, metadata={
        "help": "stanza models for --tree-input raw (a dir written by fairseq-tree-train-stanza)"})
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


def language_pairs(data: str) -> List[Tuple[str, str]]:
    """The language pairs ``SRC-TGT`` of the datasets ``{split}.SRC-TGT.*`` in a data directory, sorted ([] when
    it is not a directory); ``SRC-None`` (``--only-source``) is no pair."""
    if not os.path.isdir(data):
        return []
    pairs = {tuple(name.split(".")[1].split("-")) for name in os.listdir(data)
             if name.count(".") >= 2 and name.split(".")[1].count("-") == 1}
    return sorted(p for p in pairs if all(p) and "None" not in p)


class DataAndLanguagePair(argparse.Action):
    """The ``data`` positional: stores DATA and, where -s/-t are missing when it is read, fills them in from the
    one language pair DATA's datasets hold (a -s/-t later on the command line still overrides them). The
    Namespace must hold them before fairseq turns it into a config, where ``--tokenizer moses`` takes the same
    ``source_lang``/``target_lang`` and refuses None (see the module docstring)."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values)
        pairs = language_pairs(utils.split_paths(values)[0]) if values else []
        if len(pairs) == 1:
            for key, lang in zip(("source_lang", "target_lang"), pairs[0]):
                if getattr(namespace, key, None) is None:
                    setattr(namespace, key, lang)


class _DataWithLanguagePair:
    """A parser as ``gen_parser_from_dataclass`` sees it, whose ``data`` positional is :class:`DataAndLanguagePair`
    (every other call goes to the parser itself)."""

    def __init__(self, parser):
        self._parser = parser

    def __getattr__(self, name):
        return getattr(self._parser, name)

    def add_argument(self, *args, **kwargs):
        if args == ("data",) and "action" not in kwargs:
            kwargs["action"] = DataAndLanguagePair
        return self._parser.add_argument(*args, **kwargs)


class NotATree(TreeFormatError):
    """A line given as a bracketed tree that does not start with a bracket: raw text, most likely."""


def parser_options(cfg: TreeTranslationConfig) -> dict:
    """The raw-text backend's options from the task's flags (stanza: its model directory; lal / induced: the
    checkpoint, or a fairseq-tree-export folder: its ``model.pt`` with the folder's dictionaries)."""
    device = getattr(cfg, "tree_parser_device", None)
    if str(cfg.tree_parser) == "stanza":
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
        if str(cfg.tree_input) == "raw":
            self.parse_raw = RawTextParser(str(cfg.tree_parser), "moses", cfg.source_lang, **parser_options(cfg))
            self.parse_raw.backend  # noqa: B018  (load the parser now: a bad model fails before any input)

    def __call__(self, line: str):
        line = line.strip()
        if self.parse_raw is not None:
            line = self.parse_raw([line])[0]
        try:
            tree = tree_from_brackets(line, unary=self.unary)
        except TreeFormatError as e:
            if self.parse_raw is None and line and not line.startswith("("):
                raise NotATree(e.message) from None
            raise
        return expand_subwords(tree, self.segment)


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
        self._run = InputRun(cli=True)  # fairseq-interactive's input over the run (a hub call makes its own)

    @classmethod
    def add_args(cls, parser):
        """The dataclass's arguments, with a ``data`` positional that fills in -s/-t (:class:`DataAndLanguagePair`)."""
        super().add_args(_DataWithLanguagePair(parser))

    @classmethod
    def setup_task(cls, cfg: TreeTranslationConfig, **kwargs):
        record_absolute_data(cfg)  # the checkpoint's dictionaries, from any working directory
        data = utils.split_paths(cfg.data)[0]
        if cfg.source_lang is None or cfg.target_lang is None:
            pairs = language_pairs(data)
            if len(pairs) != 1:
                held = ", ".join("-".join(p) for p in pairs) or "none"
                raise ValueError(f"{data}: give -s SRC -t TGT: the language pair is inferred only from a data "
                                 f"directory holding one (datasets {{split}}.SRC-TGT.*), and it holds {held}")
            cfg.source_lang, cfg.target_lang = pairs[0]
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
        """fairseq-interactive's input (one chunk of ``--buffer-size`` lines): a line that cannot be read or parsed
        is logged with its number (counted over the whole run) and skipped, unless no line has been read yet: then
        the run stops, naming the fix (:meth:`InputRun.unreadable`). The others keep their line numbers as ids (the
        dataset's collater maps them back), so ``S-k`` / ``H-k`` is still line k + 1."""
        tokens = self._encode_lines(lines, self._run)
        return tokens, [len(t) for t in tokens]

    def encode_tree_inputs(self, lines) -> list:
        """The hub's input: every line encoded (:meth:`encode_tree_input`), ids as given; a bad line raises
        ValueError naming its number and the fix where there is one (nothing of the call stays recorded)."""
        self._run = InputRun(cli=False)
        return self._encode_lines(lines, self._run)

    def skipped_inputs(self) -> List[int]:
        """The lines of the last chunk encoded (a hub call's sentences) that the last batch iterator built over them
        skipped (over length, ``skip_invalid_size_inputs``), 0-based."""
        return list(self._run.skipped)

    def _encode_lines(self, lines, run: InputRun) -> list:
        """Encode a chunk of input lines (:meth:`encode_tree_input`) as ``run`` says: the hub stops at the first bad
        line, fairseq-interactive collects them (:meth:`InputRun.unreadable`)."""
        run.start(len(lines))
        tokens, failures = [], []
        for k, line in enumerate(lines):
            try:
                tokens.append(self.encode_tree_input(line))
                run.lines.append(k)
            except (ValueError, ParseError) as e:
                message = getattr(e, "message", str(e))
                if isinstance(e, NotATree):
                    message += f": not a bracketed tree; for raw text, give {run.option('raw')}"
                if not run.cli:
                    self._interactive.take(len(tokens))
                    run.refuse(k, message)
                failures.append((k, message))
        run.encoded += len(tokens)
        run.unreadable(failures)
        self._interactive.keep_ids(run.lines)
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
        dataset.input_run = self._run  # its ids are the run's encoded lines: over-length messages name them
        return dataset

    def filter_indices_by_size(self, indices, dataset, max_positions=None, ignore_invalid_inputs=False):
        """fairseq's length filter; over an input of fairseq-interactive or the hub, a sentence over the model's
        positions (leaves + nodes) is refused naming its line and the option that skips it, or skipped with a count
        (:mod:`fairseq_tree.inference.input_policy`). Datasets of the splits keep fairseq's own messages."""
        run = getattr(dataset, "input_run", None)
        if run is None or max_positions is None:
            return super().filter_indices_by_size(indices, dataset, max_positions, ignore_invalid_inputs)
        indices, ignored = dataset.filter_indices_by_size(indices, max_positions)
        limit = max_positions[0] if isinstance(max_positions, (tuple, list)) else max_positions
        for i in map(int, ignored):
            problem = over_length("source", int(dataset.size(i)[0]), "leaves + nodes", limit,
                                  "the model's maximum")
            if not ignore_invalid_inputs:
                run.refuse(run.lines[i], f"{problem}: {length_fix(run.option('skip_long'))}")
            run.skip(run.lines[i], problem)
        return indices

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
