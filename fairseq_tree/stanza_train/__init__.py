"""The offline stanza trainer (``fairseq-tree-train-stanza``, ``python -m fairseq_tree.stanza_train``): stanza's
POS tagger and constituency parser trained on a local treebank, scored by the project's EVALB. Its own part of
the package, apart from the preprocessing pipeline (which only loads the models it writes, through
:mod:`fairseq_tree.parsers`), and an extra: it needs ``pip install fairseq-tree[stanza]``.

* :mod:`fairseq_tree.stanza_train.trainer`: the steps, the trainers' subprocesses, the evaluation, the CLI;
* :mod:`fairseq_tree.stanza_train.data`: the treebank's trees, the split, the trainers' files, word vectors.
"""

from fairseq_tree.stanza_train.trainer import main

__all__ = ["main"]
