"""Task ``tree_induction``: masked-LM training of unsupervised parsers (constituent attention, Wang et al. 2019;
StructFormer, Shen et al. 2021) and of the plain ``mlm_transformer`` baseline under the same data and loss.

Data: ``fairseq-preprocess --only-source`` on plain text, one sentence of words per line (``dict.txt``,
``{split}.bin/.idx``); ``fairseq-tree-induction-text`` writes such text from treebanks and raw
text with the literature's normalisation. A ``fairseq-tree-preprocess --only-source`` directory works too (its
leaves are read; run it without BPE for word-level trees). One sentence per sample, ``<s> w_1 .. w_n </s>``, never
packed
(:mod:`fairseq_tree.data.masked_sentence_dataset`). Trees are over the tokens, so the text must have one token
per word: run no BPE. A user who wants subwords gets trees over subwords; to score them against a treebank,
merge each word's pieces first (not done here).

Masking: ``--mask-prob``, ``--leave-unmasked-prob``, ``--random-token-prob``; unset values take the paper's
defaults of the model being trained: 0.15 BERT-style (0.1 kept, 0.1 random) for constituent attention and
``mlm_transformer``, 0.3 always ``<mask>`` for ``structformer`` and the plain MLM of its size
(``mlm_transformer_sf*``). BOS, EOS, padding and ``<unk>`` are never
masked; masks are seeded by (``--seed``, epoch, sentence).

Validation: masked-word perplexity (the criterion's ``ppl``) on the ``valid`` split. With
``--eval-treebank FILE.mrg [--eval-deps FILE.conllu]`` the ``valid`` split *is* that treebank's words
(punctuation removed and normalised as the training text), and every validation also parses it with
``model.induce`` and logs ``uf1`` (sentence-level mean unlabeled F1, the literature's rules, see
:mod:`fairseq_tree.evaluation.unsupervised`), ``corpus_uf1``, and with dependencies ``uas``/``uuas``: select
checkpoints with ``--best-checkpoint-metric uf1 --maximize-best-checkpoint-metric``.
"""

import gc
import logging
import os
from dataclasses import dataclass, field
from typing import Optional

import numpy as np
from fairseq import metrics
from fairseq.data import AppendTokenDataset, Dictionary, ListDataset, data_utils
from fairseq.dataclass import FairseqDataclass
from fairseq.tasks import FairseqTask, register_task
from omegaconf import II

from fairseq_tree.data.masked_sentence_dataset import MaskedSentenceDataset, MaskPolicy
from fairseq_tree.evaluation.unsupervised import attachment, read_gold, scored_spans, sentence_f1
from fairseq_tree.side_channels import VALIDATION_LOSSES
from fairseq_tree.tasks.criterion_check import CriterionCheck
from fairseq_tree.tasks.data_paths import record_absolute_data
from fairseq_tree.tasks.leftovers import KeepsLeftoverSentences

logger = logging.getLogger(__name__)

#: per-model paper defaults of (mask prob, leave unmasked, random token)
# (mlm_transformer_sf is StructFormer's size and is compared with it: same masking)
PAPER_MASKING = {"structformer": MaskPolicy(0.3, 0.0, 0.0), "mlm_transformer_sf": MaskPolicy(0.3, 0.0, 0.0)}
DEFAULT_MASKING = MaskPolicy(0.15, 0.1, 0.1)


@dataclass
class TreeInductionConfig(FairseqDataclass):
    data: Optional[str] = field(default=None, metadata={
        "help": "fairseq-preprocess --only-source directory (dict.txt, train.bin/idx, valid.bin/idx)"})
    mask_prob: Optional[float] = field(default=None, metadata={
        "help": "fraction of words predicted (default per model: 0.15; structformer 0.3)"})
    leave_unmasked_prob: Optional[float] = field(default=None, metadata={
        "help": "of the predicted words, fraction left unchanged (default 0.1; structformer 0)"})
    random_token_prob: Optional[float] = field(default=None, metadata={
        "help": "of the predicted words, fraction replaced by a random word (default 0.1; structformer 0)"})
    mask_sampling: str = field(default="count", metadata={
        "help": "count: floor(p n + u) of the n words chosen (fairseq's MaskTokensDataset); bernoulli: each word "
                "independently with probability p (the authors' Tree Transformer code)"})
    mask_bos_unk: bool = field(default=False, metadata={
        "help": "BOS and <unk> may be chosen for prediction too (the authors' Tree Transformer code)"})
    unsorted_batches: bool = field(default=False, metadata={
        "help": "training batches of sentences in a random order, drawn afresh each epoch (the authors' Tree "
                "Transformer code), instead of sentences of similar length"})
    # read by FairseqTask.get_batch_iterator (fairseq-fixed, main); fairseq 0.12.2's iterators keep their workers
    # whatever it says (persistent_workers=num_workers > 0), so begin_epoch ends them there
    persistent_workers: bool = field(default=False, metadata={
        "help": "keep an epoch's data workers alive after it (fairseq's default): the masks change each epoch, so "
                "fairseq builds a new iterator each epoch and persistent workers pile up, a process per epoch"})
    max_positions: int = field(default=512, metadata={"help": "longest sentence in tokens (words + BOS + EOS)"})
    eval_treebank: Optional[str] = field(default=None, metadata={
        "help": "a .mrg treebank: the valid split becomes its words, and validation logs uf1 (and uas)"})
    eval_deps: Optional[str] = field(default=None, metadata={
        "help": "gold dependencies (.conllu) of --eval-treebank, sentence by sentence: logs uas/uuas"})
    eval_keep_case: bool = field(default=False, metadata={
        "help": "do not lower-case the treebank's words (match the training text's normalisation)"})
    eval_keep_digits: bool = field(default=False, metadata={
        "help": "do not map words containing a digit to N (match the training text's normalisation)"})
    seed: int = II("common.seed")
    train_subset: str = II("dataset.train_subset")


def score_batch(structure, gold) -> dict:
    """Counts of one validation batch, summed over batches by ``reduce_metrics``: ``f1_sum``/``f1_count``
    (sentence-level UF1), ``tp``/``pred``/``gold`` (corpus UF1), and with gold heads and induced heads
    ``uas_correct``/``uuas_correct``/``dep_total``. Rules of :mod:`fairseq_tree.evaluation.unsupervised`."""

    out = dict(f1_sum=0.0, f1_count=0, tp=0, pred=0, gold=0)
    for g, spans in zip(gold, structure.spans):
        n = len(g)
        if n < 2:
            continue
        G, P = scored_spans(g.spans, n), scored_spans(spans, n)
        out["f1_sum"] += sentence_f1(G, P)
        out["f1_count"] += 1
        out["tp"] += len(G & P)
        out["pred"] += len(P)
        out["gold"] += len(G)
    if structure.heads is not None and gold and gold[0].heads is not None:
        att = attachment([g.heads for g in gold], structure.heads)  # UUAS over undirected edge sets
        out.update(uas_correct=att["uas_correct"], uuas_correct=att["uuas_correct"], dep_total=att["words"])
    return out


@register_task("tree_induction", dataclass=TreeInductionConfig)
class TreeInductionTask(KeepsLeftoverSentences, CriterionCheck, FairseqTask):
    cfg: TreeInductionConfig
    COMPATIBLE_CRITERIA = ("masked_lm",)
    DEFAULT_CRITERION = "masked_lm"

    def __init__(self, cfg: TreeInductionConfig, dictionary: Dictionary):
        super().__init__(cfg)
        self.dictionary = dictionary
        self.mask_idx = dictionary.add_symbol("<mask>")
        # one policy object shared by every dataset: build_model fills in the model's defaults
        self.policy = MaskPolicy(cfg.mask_prob, cfg.leave_unmasked_prob, cfg.random_token_prob, cfg.mask_sampling,
                                 cfg.mask_bos_unk)
        self.eval_gold = None  # list of gold sentences of --eval-treebank, in valid-dataset order

    @classmethod
    def data_layout(cls, data: str):
        """-> (dictionary path, split -> dataset prefix, EOS stored?) for the two layouts a directory may have:
        ``fairseq-preprocess --only-source`` (``dict.txt``, ``{split}.bin``; lines end with EOS) or
        ``fairseq-tree-preprocess --only-source`` (``dict.SRC.txt``, leaves ``{split}.SRC-None.SRC.bin``, no EOS;
        its node/span files are not used)."""
        if os.path.exists(os.path.join(data, "dict.txt")):
            return os.path.join(data, "dict.txt"), lambda split: os.path.join(data, split), True
        langs = [f[len("dict."):-len(".txt")] for f in sorted(os.listdir(data)) if f.startswith("dict.")
                 and f.endswith(".txt") and f.count(".") == 2] if os.path.isdir(data) else []
        if len(langs) == 1:
            src = langs[0]
            return (os.path.join(data, f"dict.{src}.txt"),
                    lambda split: os.path.join(data, f"{split}.{src}-None.{src}"), False)
        raise FileNotFoundError(f"{data}: no dict.txt (fairseq-preprocess --only-source) and not exactly one "
                                f"dict.SRC.txt (fairseq-tree-preprocess --only-source); found {langs}")

    @classmethod
    def setup_task(cls, cfg: TreeInductionConfig, **kwargs):
        record_absolute_data(cfg)  # the checkpoint's dictionaries, from any working directory
        if cfg.data is None:
            raise ValueError("tree_induction: give the data directory (fairseq-preprocess --only-source)")
        path, _, _ = cls.data_layout(cfg.data)
        dictionary = Dictionary.load(path)
        logger.info("dictionary %s: %d types", path, len(dictionary))
        return cls(cfg, dictionary)

    @property
    def source_dictionary(self):
        return self.dictionary

    @property
    def target_dictionary(self):
        return self.dictionary

    def max_positions(self):
        return self.cfg.max_positions

    # ------------------------------------------------------------------------------------------- model
    def build_model(self, cfg, from_checkpoint=False):
        model = super().build_model(cfg, from_checkpoint)
        arch = getattr(cfg, "arch", "") or ""
        paper = next((p for name, p in PAPER_MASKING.items() if arch.startswith(name)), DEFAULT_MASKING)
        for name in ("prob", "leave_unmasked", "random_token"):
            if getattr(self.policy, name) is None:
                setattr(self.policy, name, getattr(paper, name))
        self.policy.check()
        logger.info("masking for %s: %s", arch, self.policy)
        return model

    # ------------------------------------------------------------------------------------------- data
    def begin_epoch(self, epoch, model):
        """End the data workers of the epochs before this one (unless ``--persistent-workers``). A fairseq
        ``EpochBatchIterator`` holds itself in a reference cycle (its ``FrozenBatchSampler`` keeps its bound
        ``ordered_batches``), so the previous epoch's iterator, with its DataLoader and, where the workers are
        persistent (fairseq 0.12.2 whatever the flag says), their processes, lives until Python's cycle collector
        runs, which may be many epochs later. fairseq's train loop has dropped that iterator and not yet started
        this epoch's workers when it calls this hook, so one collection here keeps one epoch's workers alive."""
        super().begin_epoch(epoch, model)
        if not self.cfg.persistent_workers:
            gc.collect()  # once per epoch: 0.2 s with 590k objects (measured), against minutes of training

    def load_dataset(self, split, epoch=1, combine=False, **kwargs):
        if split == "valid" and self.cfg.eval_treebank:
            tokens = self._treebank_tokens()
        else:
            _, prefix_of, has_eos = self.data_layout(self.cfg.data)
            prefix = prefix_of(split)
            tokens = data_utils.load_indexed_dataset(prefix, self.dictionary, None, combine=combine)
            if tokens is None:
                raise FileNotFoundError(f"{prefix}.bin/.idx: split {split!r} not found in {self.cfg.data}")
            if not has_eos:
                tokens = AppendTokenDataset(tokens, self.dictionary.eos())
        self.datasets[split] = MaskedSentenceDataset(
            tokens, self.dictionary, self.mask_idx, self.policy, seed=self.cfg.seed,
            tag="treebank" if split == "valid" and self.cfg.eval_treebank else None,
            unsorted=self.cfg.unsorted_batches and split == self.cfg.train_subset)
        logger.info("%s: %d sentences", split, len(self.datasets[split]))

    def _treebank_tokens(self):
        gold = read_gold(self.cfg.eval_treebank, self.cfg.eval_deps, lowercase=not self.cfg.eval_keep_case,
                         digits=not self.cfg.eval_keep_digits)
        kept = [g for g in gold if len(g.words) >= 1]
        if len(kept) < len(gold):
            logger.warning("%s: %d of %d sentences have no word after punctuation removal: not evaluated",
                           self.cfg.eval_treebank, len(gold) - len(kept), len(gold))
        self.eval_gold = kept
        toks = [self.dictionary.encode_line(" ".join(g.words), add_if_not_exist=False, append_eos=True).long()
                for g in kept]
        unk = sum(int(t.eq(self.dictionary.unk()).sum()) for t in toks)
        logger.info("%s: %d sentences, %d words, %d unknown to the dictionary", self.cfg.eval_treebank,
                    len(toks), sum(len(g.words) for g in kept), unk)
        return ListDataset(toks, np.array([len(t) for t in toks]))

    # ------------------------------------------------------------------------------------------- validation
    def valid_step(self, sample, model, criterion):
        loss, sample_size, logging_output = super().valid_step(sample, model, criterion)
        if sample.get("tag") == "treebank" and self.eval_gold is not None and hasattr(model, "induce"):
            structure = model.induce(sample["original_tokens"], sample["net_input"]["src_lengths"], maps=False)
            gold = [self.eval_gold[i] for i in sample["id"].tolist()]
            logging_output.update({f"_ev_{k}": v for k, v in score_batch(structure, gold).items()})
        return loss, sample_size, logging_output

    def reduce_metrics(self, logging_outputs, criterion):
        """Sums the counts of :func:`score_batch` over batches (and workers) and derives the scores."""
        super().reduce_metrics(logging_outputs, criterion)
        keys = {k for log in logging_outputs for k in log if k.startswith("_ev_")}
        if not keys:
            return
        for k in keys:
            metrics.log_scalar(k, sum(log.get(k, 0) for log in logging_outputs))

        def ratio(num, den, scale=100.0):
            def f(meters):
                d = meters[den].sum if den in meters else 0
                return round(scale * meters[num].sum / d, 2) if d else 0.0
            return f

        metrics.log_derived("uf1", ratio("_ev_f1_sum", "_ev_f1_count"))
        if "_ev_tp" in keys:
            metrics.log_derived("corpus_uf1", lambda m: round(
                200.0 * m["_ev_tp"].sum / max(m["_ev_pred"].sum + m["_ev_gold"].sum, 1), 2))
        if "_ev_uas_correct" in keys:
            metrics.log_derived("uas", ratio("_ev_uas_correct", "_ev_dep_total"))
            metrics.log_derived("uuas", ratio("_ev_uuas_correct", "_ev_dep_total"))

    def post_validate(self, model, stats, agg):
        """fairseq's hook after each validation: its loss (the meter's unrounded mean; ``stats`` rounds to 3
        decimals) at this update count, for ``--lr-scheduler loss_plateau`` (side channel 4)."""
        VALIDATION_LOSSES.record(stats["num_updates"], agg["loss"].avg)
