"""Task ``positions_matched_translation``: fairseq's translation on a positions-matched data-bin (written by
``fairseq-tree-positions-matched`` from a tree data-bin: each source is its n leaves followed by its
m node labels as tokens), batched as tree2seq's ``--tree-batch-by`` is: by the leaves (the default: the very
batches fairseq's translation task draws from the words alone, and tree2seq's with ``--tree-batch-by leaves``)
or by all n + m positions. A control for what the trees buy: as many encoder positions and the same labels as
tree2seq, no tree. Any fairseq translation model (``--arch transformer``) trains on it unchanged.
"""

import os
from dataclasses import dataclass, field

import numpy as np
from fairseq.tasks import register_task
from fairseq.tasks.translation import TranslationConfig, TranslationTask

from fairseq_tree.data import LeafBatchedLanguagePairDataset
from fairseq_tree.tasks.data_paths import record_absolute_data, split_data_path
from fairseq_tree.tasks.leftovers import KeepsLeftoverSentences

LEAF_SIZES = "{split}.{src}-{tgt}.{src}.leaves.npy"  # [N] int: the leaves of each source (the rest are labels)


@dataclass
class PositionsMatchedTranslationConfig(TranslationConfig):
    pm_batch_by: str = field(default="leaves", metadata={
        "help": "what --max-tokens counts on the source side: 'leaves' (the words only, as --tree-batch-by "
                "leaves) or 'positions' (leaves + label tokens, as --tree-batch-by positions)"})


@register_task("positions_matched_translation", dataclass=PositionsMatchedTranslationConfig)
class PositionsMatchedTranslationTask(KeepsLeftoverSentences, TranslationTask):
    cfg: PositionsMatchedTranslationConfig

    @classmethod
    def setup_task(cls, cfg, **kwargs):
        record_absolute_data(cfg)  # the checkpoint's dictionaries, from any working directory
        return super().setup_task(cfg, **kwargs)

    def load_dataset(self, split, epoch=1, combine=False, **kwargs):
        if self.cfg.num_batch_buckets > 0:
            raise ValueError("positions_matched_translation does not support --num-batch-buckets (it would bucket "
                             "by all positions whatever --pm-batch-by says)")
        super().load_dataset(split, epoch=epoch, combine=combine, **kwargs)
        data_path = split_data_path(self.cfg.data, split, self.cfg.train_subset, epoch)
        path = os.path.join(data_path, LEAF_SIZES.format(split=split, src=self.cfg.source_lang,
                                                         tgt=self.cfg.target_lang))
        if not os.path.exists(path):
            raise FileNotFoundError(f"{path}: missing (write the data-bin with "
                                    "fairseq-tree-positions-matched)")
        base = self.datasets[split]
        leaves = np.load(path)
        if len(leaves) != len(base) or (leaves > base.src_sizes).any():
            raise ValueError(f"{path}: {len(leaves)} leaf counts for {len(base)} sentences, or a count above its "
                             "source's length (not this data-bin's)")
        self.datasets[split] = LeafBatchedLanguagePairDataset(base, base.src_sizes, leaves, self.cfg.pm_batch_by)
