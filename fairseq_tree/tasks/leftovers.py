"""The plugin's tasks batch every sentence (:mod:`fairseq_tree.data.leftovers`); fairseq's own tasks are left
as they are."""

from fairseq_tree.data.leftovers import keep_leftover_sentences


class KeepsLeftoverSentences:
    """Mixin for a :class:`fairseq.tasks.FairseqTask`: the datasets it batches keep the sentences fairseq's
    ``--required-batch-size-multiple`` would drop."""

    def get_batch_iterator(self, dataset, *args, **kwargs):
        keep_leftover_sentences(dataset)
        return super().get_batch_iterator(dataset, *args, **kwargs)


__all__ = ["KeepsLeftoverSentences"]
