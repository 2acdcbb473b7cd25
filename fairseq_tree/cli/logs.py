"""Logging of the fairseq-tree CLIs: quiet by default (warnings from everything, and fairseq-tree's own INFO lines:
progress, rate and ETA every few seconds when stderr is not a terminal); ``-v`` adds every library's INFO lines
(fairseq's), ``-vv`` their DEBUG lines."""

import logging
import sys


def add_verbose_arg(parser) -> None:
    """``-v`` / ``-vv``: the verbosity :func:`setup_logging` reads."""
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help="more log lines: -v every library's INFO lines (fairseq's), -vv their DEBUG lines")


def setup_logging(verbose: int = 0) -> None:
    """The CLI process's logging: WARNING from everything and INFO from fairseq-tree; ``verbose`` 1: INFO from
    everything, 2 or more: DEBUG."""
    level = [logging.WARNING, logging.INFO][verbose] if verbose < 2 else logging.DEBUG
    logging.basicConfig(format="%(asctime)s | %(levelname)s | %(name)s | %(message)s", level=level,
                        stream=sys.stderr)
    logging.getLogger("fairseq_tree").setLevel(min(level, logging.INFO))


__all__ = ["add_verbose_arg", "setup_logging"]
