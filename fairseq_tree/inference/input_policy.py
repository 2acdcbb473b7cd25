"""What happens to an input that cannot be translated as it is: one policy for ``fairseq-tree-preprocess``,
``fairseq-interactive`` and the tree2seq hub.

**Over length.** A source tree takes leaves + nodes positions in the encoder. A sentence over the limit is refused
with a message that names the options that change it, or, where the user asked for that, skipped and counted; it
is never translated or binarized silently (:func:`over_length`, :func:`length_fix`):

========================  ========================  ============================================================
tool                      limit                     skip such sentences
========================  ========================  ============================================================
fairseq-tree-preprocess   ``--max-positions N``     ``--on-error skip`` (each one listed in ``preprocess.json``,
                                                    its ``.trees`` line left empty)
fairseq-interactive       the model's positions     ``--skip-invalid-size-inputs-valid-test`` (each one logged,
                                                    with the count so far)
hub ``translate``         the model's positions     ``skip_invalid_size_inputs=True`` (``None`` in its place)
========================  ========================  ============================================================

**Unreadable lines** (:class:`InputRun`): the hub refuses the first sentence it cannot read, naming it.
``fairseq-interactive`` skips a bad line and counts it, the other lines keeping their numbers, but only once a
line has been read: when the first lines of a run all fail (the first line, as fairseq-interactive reads one at a
time; the first ``--buffer-size`` lines otherwise), the input or the flags are wrong, not one line, and the run
stops with exit status 1, naming the fix (raw text without ``--tree-input raw``, say). It cannot wait for the
end of the input instead: fairseq-interactive tells the task nothing when its input ends.
"""

import logging
from typing import List, NoReturn, Optional, Tuple

logger = logging.getLogger(__name__)

#: the options a message names, as fairseq-interactive (flags) and the hub (keyword arguments) spell them
OPTIONS = {
    "raw": ("--tree-input raw (with --tree-parser and its model)",
            'tree_input="raw" (with tree_parser= and its model)'),
    "skip_long": ("--skip-invalid-size-inputs-valid-test to skip such sentences (each one logged and counted)",
                  "skip_invalid_size_inputs=True to skip such sentences (None in their place; logged and counted)"),
}


def over_length(side: str, size: int, unit: str, limit: int, limit_name: str) -> str:
    """What is wrong, e.g. ``source has 1535 leaves + nodes > --max-positions 1024``."""
    return f"{side} has {size} {unit} > {limit_name} {limit}"


def length_fix(skip: str, limit_option: Optional[str] = None) -> str:
    """What changes an over-length refusal: the limit to raise (``limit_option``; None where the limit is the
    model's own, and the sentence must be split) or ``skip``, the option that skips such sentences and what
    becomes of them."""
    first = f"raise {limit_option}" if limit_option else "split the sentence"
    return f"{first}, or give {skip}"


class InputRun:
    """The input of one fairseq-interactive run (``cli``: lines numbered over the whole run, command-line flags)
    or of one hub call (sentences numbered from 1, keyword arguments): how messages name a line and an option,
    and what becomes of a line the task cannot take (:meth:`unreadable`, :meth:`refuse`, :meth:`skip`).

    The task reads its input in chunks (fairseq-interactive's ``--buffer-size`` lines; a hub call's sentences):
    :meth:`start` begins one, ``lines`` maps the index of each encoded input (its dataset id) to its line of the
    chunk, and ``skipped`` lists the chunk's lines skipped so far."""

    def __init__(self, cli: bool):
        self.cli = cli
        self.read = 0  # lines of the run before the current chunk, and in it
        self.first = 0  # lines of the run before the current chunk
        self.encoded = 0  # lines of the run encoded (read as trees), the current chunk's included
        self.skipped_total = 0
        self.lines: List[int] = []
        self.skipped: List[int] = []

    def start(self, n: int) -> None:
        """A new chunk of ``n`` lines."""
        self.first, self.read = self.read, self.read + n
        self.lines, self.skipped = [], []

    def name(self, k: int) -> str:
        """Line ``k`` of the chunk, as the user counts it."""
        return f"input line {self.first + k + 1}" if self.cli else f"sentence {k + 1}"

    def option(self, key: str) -> str:
        """An option of :data:`OPTIONS`, spelled for this caller."""
        return OPTIONS[key][0 if self.cli else 1]

    def refuse(self, k: int, message: str) -> NoReturn:
        """Stop at line ``k``: fairseq-interactive exits with status 1 and the message (no traceback: the
        message is the whole story); the hub raises ValueError."""
        text = f"{self.name(k)}: {message}"
        if self.cli:
            raise SystemExit(f"fairseq-interactive: error: {text}")
        raise ValueError(text)

    def skip(self, k: int, message: str) -> None:
        """Leave line ``k`` out, logged with the count of lines skipped so far."""
        self.skipped.append(k)
        self.skipped_total += 1
        what = "input lines" if self.cli else "sentences"
        logger.error("%s: %s (skipped); %d of %d %s skipped so far", self.name(k), message, self.skipped_total,
                     self.read, what)

    def unreadable(self, failures: List[Tuple[int, str]]) -> None:
        """The chunk's lines that could not be read, ``(k, message)`` each: refused when no line of the run has
        been read yet (the input or the flags are wrong, see the module docstring), else skipped."""
        if failures and self.encoded == 0:
            k, message = failures[0]
            many = f"all {len(failures)} input lines of the first chunk" if len(failures) > 1 else "the first line"
            self.refuse(k, f"{message}\nnothing was translated: {many} failed, so the run stops (once a line has "
                           "been translated, a bad line is skipped and counted)")
        for k, message in failures:
            self.skip(k, message)


__all__ = ["InputRun", "OPTIONS", "length_fix", "over_length"]
