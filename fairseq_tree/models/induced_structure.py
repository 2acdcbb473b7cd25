"""The one interface through which unsupervised MLM parsers (``constituent_transformer``, ``structformer``)
hand their induced structure to evaluation, plotting and the ``induced`` parse backend.

Token layout of the ``tree_induction`` task: ``src_tokens`` [B, T] is ``<s> w_1 .. w_n </s> <pad>..``
(right-padded). Structure covers the words only: word k (0-based) sits at position k + 1; BOS, EOS and
padding are never part of a tree, a link or a dependency.
"""

from dataclasses import dataclass, field
from typing import Dict, List, Optional

from torch import Tensor

from fairseq_tree.trees.tree import Span


@dataclass
class InducedStructure:
    """Induced structures of a batch of B sentences.

    lengths: [B] long, words per sentence (n_b).
    spans:   per sentence, the half-open word spans (i, j) of the induced constituency tree, in the
             canonical post-order of :mod:`fairseq_tree.trees` (sorted by (j, -i)), root (0, n) included,
             single words excluded: n - 1 spans for a binary tree (StructFormer, greedy parsing), fewer when
             Algorithm 1 of constituent attention leaves a flat constituent (paper Fig. 3); none for one word.
    heads:   per sentence, the head of each word, 1-based with 0 for the root (CoNLL-U convention);
             None for a model that induces no dependencies.
    maps:    named fp32 CPU tensors for plots, each [B, ..., n_max, n_max] over word positions
             (e.g. ``prior_layer3`` for a constituent prior, ``dependency`` for p(head | word)).
    """

    lengths: Tensor
    spans: List[List[Span]]
    heads: Optional[List[List[int]]] = None
    maps: Dict[str, Tensor] = field(default_factory=dict)
