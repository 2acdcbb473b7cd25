"""fairseq_tree.utils.help_text: the reST markup of the CLIs' docstrings shown as plain text in --help."""

import argparse

from fairseq_tree.utils.help_text import ArgumentParser, plain


def test_plain_removes_each_kind_of_markup():
    assert plain("``fairseq-tree-view``: one page") == "fairseq-tree-view: one page"
    assert plain("Library: :mod:`fairseq_tree.inference.induce`.") == "Library: fairseq_tree.inference.induce."
    assert plain(":func:`~fairseq_tree.evaluation.translation_runs.paired_p` and :class:`Tree`") == "paired_p and Tree"
    assert plain(":py:meth:`a.b`, :ref:`the layout <layout>`") == "a.b, the layout"
    assert plain("see `the paper <https://arxiv.org/abs/2001.0>`_ and **Trees.**") == "see the paper and Trees."
    assert plain("``a`` and ``b c``") == "a and b c"


def test_plain_keeps_what_is_not_markup():
    # PTB's quote tags in a list of tags, a shell continuation, emphasis-like stars, a lone backquote
    text = "words tagged TOP -NONE- , : `` '' . are deleted; --out DIR \\ and 2 * 3 ** 2, it`s"
    assert plain(text) == text


def test_parser_help_is_plain_and_wraps_the_cleaned_text(monkeypatch):
    monkeypatch.setenv("COLUMNS", "60")  # argparse wraps at COLUMNS - 2
    p = ArgumentParser(prog="x", description="``fairseq-tree-x``: " + "word " * 30 + ":mod:`fairseq_tree.x`",
                       epilog="See ``--flag``.")
    p.add_argument("--flag", help="as ``--other`` (:func:`fairseq_tree.f`)")
    sub = p.add_subparsers(dest="cmd")
    s = sub.add_parser("run", help="runs ``it``", description="the ``run`` command")
    text, subtext = p.format_help(), s.format_help()
    assert "``" not in text + subtext and ":mod:" not in text and ":func:" not in text
    assert "fairseq-tree-x: word" in text and "fairseq_tree.x" in text and "as --other (fairseq_tree.f)" in text
    assert "See --flag." in text and "runs it" in text and "the run command" in subtext
    assert max(len(line) for line in text.splitlines()) <= 58  # the cleaned text wrapped
    raw = ArgumentParser(prog="y", description="keep\n  this layout ``as is``",
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    assert "keep\n  this layout as is" in raw.format_help()
