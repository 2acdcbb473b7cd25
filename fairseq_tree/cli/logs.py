"""Logging of the fairseq-tree CLIs: warnings from everything, and fairseq-tree's own INFO lines (progress: rate
and ETA every few seconds when stderr is not a terminal)."""

import logging
import sys


def setup_logging() -> None:
    logging.basicConfig(format="%(asctime)s | %(levelname)s | %(name)s | %(message)s", level=logging.WARNING,
                        stream=sys.stderr)
    logging.getLogger("fairseq_tree").setLevel(logging.INFO)


__all__ = ["setup_logging"]
