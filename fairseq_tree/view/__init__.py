"""The viewer (``fairseq-tree-view``): self-contained HTML pages of trees, EVALB's wrong brackets, induced structure,
class-labelled trees and attention maps. A layer above :mod:`fairseq_tree.evaluation` (it imports utils, text,
trees and evaluation only, no torch).

* :mod:`.records`: one compact record per sentence (the page's data), from the project's readers and scorers;
* :mod:`.page`: the page (:class:`~.page.Page`: ``html``, ``save``, shown inline by Jupyter), its CSS and script in
  ``assets/`` (``view.js`` draws a tree as :func:`fairseq_tree.trees.svg.tree_svg` does).
"""

# flake8: noqa: F401
from fairseq_tree.view.page import Page, page, page_data, render_html
from fairseq_tree.view.records import (
    attention_item,
    attention_record,
    attention_records,
    compare_record,
    compare_records,
    induced_records,
    record_svg,
    sst_records,
    tree_record,
    tree_records,
    treebank_records,
)
