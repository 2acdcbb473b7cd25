"""The one tree module of fairseq-tree: a package of small modules, re-exported here.

* :mod:`.tree`: :class:`Tree` (the canonical form: words, tags, labeled half-open spans in post-order),
  :class:`TreeFormatError`, ``Span``, post-order and parent helpers;
* :mod:`.brackets`: PTB brackets in and out (escapes, tokenizer, readers, :func:`to_brackets`,
  :func:`spans_to_brackets` for unlabeled induced spans);
* :mod:`.sst`: class-labelled trees (Stanford Sentiment Treebank format);
* :mod:`.subwords`: BPE subtrees;
* :mod:`.spans`: unlabeled spans, heights, syntactic distances;
* :mod:`.conllu`: dependency heads, CoNLL-U in and out;
* :mod:`.tags`: PTB tag sets (the two punctuation conventions, PTB -> UPOS);
* :mod:`.parse_tree`: the EVALB view (:class:`ParseTree`: labeled spans with one-word unaries);
* :mod:`.gold`: the unsupervised-evaluation view (:class:`~.gold.GoldSentence`: a tree restricted to its words;
  not re-exported here: it needs :mod:`fairseq_tree.data.induction_text`, which imports this package);
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
    parse_brackets,
    parse_tokens,
    plain_word,
    preterminals,
    prune_none,
    read_tree_lines,
    read_treebank,
    spans_to_brackets,
    strip_function_tags,
    to_brackets,
    tree_from_brackets,
    write_brackets,
)
from fairseq_tree.trees.conllu import (
    DependencyTree,
    arcs_to_heads,
    check_heads,
    conllu_lines,
    heads_to_arcs,
    read_conllu,
    write_conllu,
)
from fairseq_tree.trees.io import atomic_copy, atomic_path, atomic_write, atomic_write_text
from fairseq_tree.trees.parse_tree import (
    ParseTree,
    labeled_to_brackets,
    parse_tree_from_brackets,
    raw_to_parse_tree,
    read_parse_trees,
)
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
