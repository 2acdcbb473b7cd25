"""Every sentence of a split reaches a batch through the plugin's tasks with ``--required-batch-size-multiple 8``
(fairseq_tree/tasks/leftovers.py, fairseq_tree/data/leftovers.py), and fixed batch shapes stay fairseq's: bugs of
one line that tests/integration/test_fairseq_compat.py let through (scripts/mutation/, docs/development.md)."""

import numpy as np
import pytest
from conftest import SHARED
from fairseq.data import Dictionary, FairseqDataset, data_utils

import fairseq_tree  # noqa: F401  (registers the tasks)
from fairseq_tree.data.leftovers import keep_leftover_sentences, patch_fairseq_batch_by_size

MULTI30K = SHARED / "data" / "multi30k" / "valid.en"


class Sentences(FairseqDataset):
    """Sentences of the given token counts; a batch is the list of its sentence numbers."""

    def __init__(self, sizes, shapes=None):
        self.sizes, self.shapes = np.asarray(sizes, dtype=np.int64), shapes

    def __getitem__(self, i):
        return i

    def __len__(self):
        return len(self.sizes)

    def num_tokens(self, i):
        return int(self.sizes[i])

    def num_tokens_vec(self, indices):
        return self.sizes[indices]

    def size(self, i):
        return int(self.sizes[i])

    def ordered_indices(self):
        return np.argsort(self.sizes, kind="mergesort")

    def get_batch_shapes(self):
        return self.shapes

    def collater(self, samples):
        return samples


def _tasks():
    """One instance of each of the plugin's tasks (dictionaries empty: batching reads none)."""
    from fairseq.tasks import TASK_REGISTRY

    d = Dictionary()
    made = {
        "tree_translation": lambda cls, cfg: cls(cfg, d, d, d),
        "positions_matched_translation": lambda cls, cfg: cls(cfg, d, d),
        "tree_classification": lambda cls, cfg: cls(cfg, d, d, {}),
        "tree_induction": lambda cls, cfg: cls(cfg, d),
        "constituency_parsing": lambda cls, cfg: cls(cfg, {}),
    }
    plugin = sorted(name for name, cls in TASK_REGISTRY.items() if cls.__module__.startswith("fairseq_tree."))
    assert plugin == sorted(made), "a new task of the plugin: add it here"
    from fairseq.tasks import TASK_DATACLASS_REGISTRY

    return {name: made[name](TASK_REGISTRY[name], TASK_DATACLASS_REGISTRY[name]()) for name in plugin}


@pytest.mark.skipif(not MULTI30K.is_file(), reason="no shared Multi30k")
@pytest.mark.parametrize("limit", [{"max_sentences": 64}, {"max_tokens": 1000}])
def test_every_plugin_task_batches_every_sentence_with_a_batch_multiple(limit):
    """The first 300 sentences of Multi30k valid (their token counts) batched by each plugin task with
    --required-batch-size-multiple 8 and --batch-size 64 (300 = 4 * 64 + 40 + 4) or --max-tokens 1000: each
    sentence in exactly one batch of the epoch (fairseq main's batching drops the last 4 or so)."""
    sizes = [len(line.split()) + 1 for line in MULTI30K.read_text(encoding="utf-8").splitlines()[:300]]
    for name, task in _tasks().items():
        epoch = task.get_batch_iterator(Sentences(sizes), required_batch_size_multiple=8, seed=1, **limit)
        seen = [i for batch in epoch.next_epoch_itr(shuffle=False) for i in batch]
        assert sorted(seen) == list(range(300)), name


def test_fixed_batch_shapes_stay_fairseqs(monkeypatch):
    """A dataset with fixed batch shapes (fairseq's TPU path) keeps fairseq's batches, through a plugin dataset and
    through the opt-in patch of fairseq's batch_by_size (FAIRSEQ_TREE_KEEP_LEFTOVERS=1; undone after the test)."""
    sizes = np.array([5, 9, 12, 30, 7, 3, 16, 8, 11, 4] * 3)
    idx = np.argsort(sizes, kind="mergesort")
    shapes = [(4, 16), (2, 32)]
    stock = Sentences(sizes, shapes).batch_by_size(idx, max_tokens=64, required_batch_size_multiple=2)
    kept = Sentences(sizes, shapes)
    keep_leftover_sentences(kept)
    assert [list(b) for b in kept.batch_by_size(idx, max_tokens=64, required_batch_size_multiple=2)] == \
        [list(b) for b in stock]
    def tokens(i):
        return int(sizes[i])

    fixed = data_utils.batch_by_size(idx, tokens, fixed_shapes=shapes)
    monkeypatch.setattr(data_utils, "batch_by_size", data_utils.batch_by_size)  # restored at the end
    patch_fairseq_batch_by_size()
    assert [list(b) for b in data_utils.batch_by_size(idx, tokens, fixed_shapes=shapes)] == \
        [list(b) for b in fixed]
    # without fixed shapes the patched function keeps the 6 sentences of 30 that a multiple of 8 drops
    assert sum(map(len, data_utils.batch_by_size(idx, tokens, sizes[idx], max_sentences=8,
                                                 required_batch_size_multiple=8))) == 30
