"""Logging of the fairseq-tree CLIs: warnings from everything, and fairseq-tree's own INFO lines (progress: rate
and ETA every few seconds when stderr is not a terminal)."""

import logging
import sys


def setup_logging() -> None:
    """For a CLI's own process: ``force``, because importing fairseq already called ``logging.basicConfig`` (its
    ``wav2vec2_classification`` at DEBUG), which made every library's DEBUG lines print (matplotlib's font search)."""
    logging.basicConfig(format="%(asctime)s | %(levelname)s | %(name)s | %(message)s", level=logging.WARNING,
                        stream=sys.stderr, force=True)
    logging.getLogger("fairseq_tree").setLevel(logging.INFO)


__all__ = ["setup_logging"]
