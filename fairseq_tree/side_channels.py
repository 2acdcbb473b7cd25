"""The places where fairseq's API leaves no argument for what the plugin needs (the tree, a validation's loss), and the
side channel each one uses.

Everything else reaches the models through ``net_input`` and ``encoder_out``; only these do not, and they are
kept here (or, for the third, named here), documented, with a check that fails loudly instead of using a stale
value.

1. **Decoder -> tree cross-attention** (:class:`TreeContext`). fairseq's ``TransformerDecoderLayerBase.forward``
   calls ``self.encoder_attn(query=, key=, value=, key_padding_mask=, incremental_state=, static_kv=,
   need_weights=, need_head_weights=)``: the batch's :class:`~fairseq_tree.modules.tree_structure.TreeStructure`
   (in ``encoder_out["tree"]``) cannot travel with the call. The tree2seq decoder holds one ``TreeContext``
   shared by its layers' cross-attentions and sets it from ``encoder_out`` at every ``extract_features`` call.
   The tree stays there after the call: with ``--checkpoint-activations`` fairseq's checkpoint wrapper runs the
   layers again during ``backward``, outside ``extract_features``. A cross-attention checks that its key (the
   encoder output ``[N + M, B, C]``) has the held tree's sizes, and raises when no tree was set or the sizes
   differ (a stale tree). Copying fairseq's decoder-layer ``forward`` to add a ``tree`` argument would avoid the
   channel at the price of ~100 lines of fairseq code to keep in step.

2. **fairseq-interactive -> inference_step** (:class:`InteractiveTrees`). ``fairseq_cli/interactive.py`` encodes
   the lines (``task.get_interactive_tokens_and_lengths``), builds a dataset
   (``task.build_dataset_for_inference``), collates batches from it and then hands ``task.inference_step`` a
   *new* sample holding only ``src_tokens`` and ``src_lengths``. The task records the trees of the lines it
   encoded (:meth:`InteractiveTrees.add`), the dataset's collater records each batch's tree side
   (:meth:`InteractiveTrees.collated`), and ``inference_step`` takes it back (:meth:`InteractiveTrees.restore`)
   after checking that the sample's ``src_tokens`` are the recorded batch's (interactive collates synchronously,
   one batch at a time).

3. **build_model -> build_encoder** (``Tree2SeqModel.build_model``). fairseq's ``TransformerModelBase.build_model``
   builds the token embeddings (sharing them, with its checks) and calls ``cls.build_encoder(cfg, src_dict,
   embed_tokens)``: no task, so no node-label dictionary. ``Tree2SeqModel.build_model`` sets
   ``cfg.label_dictionary`` on the config it builds for that one call and deletes it afterwards.

4. **Validation -> the learning-rate scheduler** (:data:`VALIDATION_LOSSES`). At each epoch's end fairseq's train
   loop calls the scheduler's ``step(epoch, val_loss)`` with ``val_loss`` = that validation's
   ``--best-checkpoint-metric`` (``uf1``, maximised, in the induction recipes), never its loss, and a scheduler is
   built from ``(cfg, optimizer)`` alone. ``TreeInductionTask.post_validate`` (fairseq calls it after each
   validation) records the validation's loss with its update count here, and ``--lr-scheduler loss_plateau``
   takes the loss recorded at its own update count; none there (another task, a stale loss) raises. One object
   per process, as fairseq-train trains one model per process.
"""

from typing import Dict, List, Optional, Tuple

import torch
from torch import Tensor


class TreeContext:
    """The batch's tree for the tree2seq decoder's cross-attentions (side channel 1 of the module docstring)."""

    def __init__(self):
        self._tree = None

    def set(self, tree) -> None:
        """The tree (a ``TreeStructure``) of the encoder output the decoder attends to now."""
        self._tree = tree

    def tree_for(self, key: Tensor):
        """The held tree, checked against the cross-attention's key [N + M, B, C]."""
        tree = self._tree
        if tree is None:
            raise RuntimeError("tree cross-attention called before Tree2SeqDecoder.extract_features set a tree "
                               "(encoder_out['tree'] missing?)")
        if (tree.num_leaves + tree.num_nodes, tree.batch_size) != tuple(key.shape[:2]):
            raise RuntimeError(f"tree cross-attention: the key has {tuple(key.shape[:2])} (positions, batch) but "
                               f"the held tree {(tree.num_leaves + tree.num_nodes, tree.batch_size)}: a stale tree")
        return tree


class InteractiveTrees:
    """The tree side of fairseq-interactive's batches (side channel 2 of the module docstring)."""

    def __init__(self):
        self._pending: List[Tuple[Tensor, Tensor]] = []
        self._last: Optional[Dict[str, Tensor]] = None
        self._ids: Optional[Tensor] = None

    def add(self, nodes: Tensor, spans: Tensor) -> None:
        """The tree of one encoded line: node label ids [m] and flat spans [2m], in line order."""
        self._pending.append((nodes, spans))

    def keep_ids(self, kept: List[int]) -> None:
        """The input lines of the encoded chunk that were kept (a bad line is skipped): batch ids are mapped to
        them (:meth:`collated`), so fairseq-interactive numbers outputs by their input line."""
        self._ids = torch.tensor(kept, dtype=torch.long)

    def take(self, count: int) -> Tuple[List[Tensor], List[Tensor]]:
        """The trees of the ``count`` lines encoded since the last call (those of one dataset)."""
        if len(self._pending) != count:
            raise RuntimeError(f"tree_translation: {count} inputs but {len(self._pending)} trees encoded: use "
                               "task.get_interactive_tokens_and_lengths to encode inputs")
        pending, self._pending = self._pending, []
        return [t[0] for t in pending], [t[1] for t in pending]

    def collated(self, batch: dict) -> None:
        """The collater's callback: remember the batch's ``net_input``; ids of the kept lines (:meth:`keep_ids`)."""
        self._last = batch["net_input"]
        if self._ids is not None and "id" in batch:
            batch["id"] = self._ids[batch["id"]]

    def restore(self, net_input: dict) -> None:
        """Add ``src_nodes``/``src_spans`` of the remembered batch to ``net_input`` (in place) if missing."""
        if "src_nodes" in net_input:
            return
        last, tokens = self._last, net_input["src_tokens"]
        if last is None or not torch.equal(last["src_tokens"].to(tokens.device), tokens):
            raise RuntimeError("tree_translation: the batch has no tree side (src_nodes/src_spans) and is not the "
                               "last batch collated for fairseq-interactive")
        net_input["src_nodes"] = last["src_nodes"].to(tokens.device)
        net_input["src_spans"] = last["src_spans"].to(tokens.device)


class ValidationLosses:
    """The latest validation's loss and its update count (side channel 4 of the module docstring)."""

    def __init__(self):
        self._latest: Optional[Tuple[int, float]] = None

    def record(self, num_updates: int, loss: float) -> None:
        self._latest = (int(num_updates), float(loss))

    def latest(self) -> Optional[Tuple[int, float]]:
        """(update count, loss) of the latest validation, None before any."""
        return self._latest

    def at(self, num_updates: int) -> float:
        """The loss of the validation at ``num_updates`` updates."""
        if self._latest is None or self._latest[0] != num_updates:
            raise RuntimeError(f"no validation loss recorded at update {num_updates} (the latest: {self._latest}, "
                               "(updates, loss)): --lr-scheduler loss_plateau needs --task tree_induction, whose "
                               "post_validate records it")
        return self._latest[1]


#: the process's validation losses (side channel 4)
VALIDATION_LOSSES = ValidationLosses()

__all__ = ["TreeContext", "InteractiveTrees", "ValidationLosses", "VALIDATION_LOSSES"]
