"""Inference library behind the hub interfaces (:mod:`fairseq_tree.hub`), the CLIs (``fairseq-tree-parse``,
``-induce``, ``-classify``) and the checkpoint parser backends (:mod:`fairseq_tree.parsers`):

* :mod:`.checkpoint`: load a checkpoint (ensemble + task, overrides, data directory, device, eval mode);
* :mod:`.batching`: length-sorted batches of indices, and results back in input order;
* :mod:`.parse`: :class:`~.parse.LALParser` (``lal_parser`` checkpoints) -> a :class:`~fairseq_tree.trees.Tree` per
  sentence;
* :mod:`.induce`: :func:`~.induce.load` and :func:`~.induce.induce_all` (``tree_induction`` checkpoints);
* :mod:`.classify`: :class:`~.classify.Classifier` (``tree_classification`` checkpoints), predictions and
  their accuracies, the Table 4 attention shares;
* :mod:`.average`: average the parameters of checkpoints (``fairseq-tree-average``);
* :mod:`.text`: :class:`~.text.RawTextParser`, raw text -> bracketed trees (tokenizer + preprocessing backend);
* :mod:`.input_policy`: what becomes of an input line that cannot be translated as it is (unreadable, or over the
  model's positions), one policy for fairseq-interactive, the tree2seq hub and fairseq-tree-preprocess.

Submodules are imported on use: importing this package loads no model code.
"""
