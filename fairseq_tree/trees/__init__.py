"""The one tree module of fairseq-tree: a package of small modules, re-exported here.

* :mod:`.tree`: :class:`Tree`, the one tree type (the canonical form: words, tags, labeled half-open spans in
  post-order; the EVALB view's one-word constituents, dependency heads and relations where a reader has them),
  :class:`TreeFormatError`, ``Span``, post-order and parent helpers;
* :mod:`.brackets`: PTB brackets in and out (escapes, tokenizer, readers incl. the EVALB view
  :func:`read_parse_trees`, :func:`to_brackets`, :func:`labeled_to_brackets`, :func:`spans_to_brackets` for
  unlabeled induced spans);
* :mod:`.sst`: class-labelled trees (Stanford Sentiment Treebank format);
* :mod:`.subwords`: BPE subtrees;
* :mod:`.spans`: unlabeled spans, heights, syntactic distances;
* :mod:`.conllu`: dependency heads, CoNLL-U in and out (a CoNLL-U sentence is a :class:`Tree` with heads);
* :mod:`.tags`: PTB tag sets (the two punctuation conventions, PTB -> UPOS);
* :mod:`.gold`: the unsupervised scorer's record of a gold sentence (:class:`~.gold.GoldSentence`, built from a
  :class:`Tree` restricted to its words, with the surface words and positions the scorer needs; not re-exported
  here: it needs :mod:`fairseq_tree.data.induction_text`, which imports this package);
* :mod:`.io`: the one atomic-write helper.
"""

# flake8: noqa: F401
from fairseq_tree.trees.brackets import (
    ESCAPE_WORD,
    TOKEN_RE,
    UNESCAPE_WORD,
    RawTree,
    bracket_line,
    canonicalize,
    escape_word,
    is_preterminal,
    labeled_to_brackets,
    parse_brackets,
    parse_tokens,
    plain_word,
    preterminals,
    prune_none,
    read_parse_trees,
    read_tree_lines,
    read_treebank,
    spans_to_brackets,
    strip_function_tags,
    to_brackets,
    tree_from_brackets,
    write_brackets,
)
from fairseq_tree.trees.conllu import (
    arcs_to_heads,
    check_heads,
    conllu_lines,
    heads_to_arcs,
    read_conllu,
    write_conllu,
)
from fairseq_tree.trees.io import atomic_copy, atomic_path, atomic_write, atomic_write_text
from fairseq_tree.trees.spans import distances_to_tree, node_heights, tree_to_distances, unlabeled_spans
from fairseq_tree.trees.sst import NO_CLASS, labelled_tree_from_brackets
from fairseq_tree.trees.subwords import expand_subwords, merge_subwords
from fairseq_tree.trees.tags import EVALB_PUNCT_TAGS, PTB2UPOS, UPOS_PUNCT_TAGS, ptb_to_upos
from fairseq_tree.trees.tree import (
    BPE_SUFFIX,
    NONE_TAG,
    ROOT_LABEL,
    WRAPPER_LABELS,
    LabeledSpan,
    Span,
    Tree,
    TreeFormatError,
    node_parents,
    post_order,
    post_order_key,
    smallest_cover,
)
