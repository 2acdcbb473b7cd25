"""The one atomic-write helper: write beside the target under a temporary name, then ``os.replace`` it into
place, so a reader (or a resumed run) never sees a half-written file; on an exception the temporary file
is removed and the target is left as it was."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from typing import IO, Iterator


def _read_umask() -> int:
    mask = os.umask(0)  # the only way to read it; done once, at import, so threads never see umask 0
    os.umask(mask)
    return mask


_UMASK = _read_umask()


@contextlib.contextmanager
def atomic_path(path: str) -> Iterator[str]:
    """Yields a temporary path beside ``path`` to write to (by any means, e.g. ``np.savez``); on success it
    replaces ``path``, with the permissions a plain ``open(path, "w")`` would give."""
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=d, prefix=os.path.basename(path) + ".", suffix=".tmp")
    os.close(fd)
    try:
        yield tmp
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes 0600
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


@contextlib.contextmanager
def atomic_write(path: str, mode: str = "w", encoding: str = "utf-8") -> Iterator[IO]:
    """``with atomic_write(path) as f: f.write(...)``: an open file that becomes ``path`` on success."""
    with atomic_path(path) as tmp:
        with open(tmp, mode, encoding=None if "b" in mode else encoding) as f:
            yield f


def atomic_write_text(path: str, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    with atomic_write(path) as f:
        f.write(text)


def atomic_copy(src: str, dst: str) -> None:
    """Copy ``src`` to ``dst`` atomically (no half-written ``dst``)."""
    with atomic_path(dst) as tmp:
        shutil.copyfile(src, tmp)
