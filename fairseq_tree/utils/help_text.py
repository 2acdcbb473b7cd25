"""``--help`` as plain text: the CLIs' descriptions, epilogs and option helps are often their modules' docstrings,
written in reST for the documentation (``fairseq-tree-view``, :mod:`fairseq_tree.view`); a terminal shows them
without the markup. Every console script builds its parser with :class:`ArgumentParser`, whose formatter cleans
each text with :func:`plain` before argparse wraps it (so a literal is never cut in two by a line break first).
It sits in the lowest layer because three of those parsers still live below ``cli/`` (``data/parsing_data``,
``data/induction_text``, ``stanza_train/trainer``)."""

import argparse
import re

# :role:`target`, :py:role:`~a.b.c` (the ~: its last name only), :role:`title <target>` (the title)
_ROLE = re.compile(r":(?:[a-z]+:)?[a-z]+:`(~?)([^`<]*?)\s*(?:<[^>`]*>)?`")
# ``literal``: two backquotes on each side of text that starts and ends with a non-space (so the PTB tags
# `` and '' in a list of tags stay as they are)
_LITERAL = re.compile(r"``(\S(?:[^`]*?\S)?)``")
# `link text <url>`_ and **strong**
_LINK = re.compile(r"`([^`<]+?)\s*<[^>`]*>`__?")
_STRONG = re.compile(r"\*\*(\S(?:[^*]*?\S)?)\*\*")


def _role(m: "re.Match") -> str:
    target = m.group(2).strip()
    return target.rsplit(".", 1)[-1] if m.group(1) else target


def plain(text: str) -> str:
    """``text`` without reST inline markup: roles, literals, links and strong emphasis become their text."""
    text = _ROLE.sub(_role, text)
    text = _LINK.sub(r"\1", text)
    text = _LITERAL.sub(r"\1", text)
    return _STRONG.sub(r"\1", text)


class PlainHelp:
    """Mixin for an argparse formatter class: every description, epilog and option help cleaned by :func:`plain`."""

    def _format_text(self, text):
        return super()._format_text(plain(text))

    def _expand_help(self, action):
        return plain(super()._expand_help(action))


_FORMATTERS = {}


def plain_formatter(cls=argparse.HelpFormatter):
    """The subclass of the formatter class ``cls`` that shows plain text (one per class)."""
    if cls not in _FORMATTERS:
        _FORMATTERS[cls] = type(f"Plain{cls.__name__}", (PlainHelp, cls), {})
    return _FORMATTERS[cls]


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser whose help is plain text whatever ``formatter_class`` it is given; its subcommands'
    parsers (``add_subparsers().add_parser``) are of this class too."""

    def __init__(self, *args, formatter_class=argparse.HelpFormatter, **kwargs):
        super().__init__(*args, formatter_class=plain_formatter(formatter_class), **kwargs)


__all__ = ["ArgumentParser", "PlainHelp", "plain", "plain_formatter"]
