"""Writing output files without ever destroying the user's data.

* :class:`AtomicFile` writes a text file to a temporary file in the same
  folder and renames it onto the target only when it is whole: a run that
  stops half-way (an error, a full disk, Ctrl-C) leaves the target as it was.
* :func:`clashing_paths` finds an output that resolves to an input or to
  another output (the same path, a symbolic link, a hard link), so that
  ``evqual score x.jsonl --out x.jsonl`` is refused before anything is opened.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["AtomicFile", "clashing_paths"]


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


class AtomicFile:
    """A text file written whole or not at all.

    Parameters
    ----------
    path : str or path-like
        The target; its folder must exist.
    newline : str, default "\\n"
    mode : int, optional
        Permission bits of the finished file (default: the target's when it
        exists, else ``0o666`` less the umask, as :func:`open` would give).

    Text that is not valid Unicode (unpaired surrogates) is written with
    ``backslashreplace``, never raising mid-file.

    Examples
    --------
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "report.md")
    >>> with AtomicFile(path) as fh:
    ...     _ = fh.write("# report\\n")
    >>> open(path).read()
    '# report\\n'
    >>> try:
    ...     with AtomicFile(path) as fh:
    ...         _ = fh.write("half")
    ...         raise RuntimeError("stopped")
    ... except RuntimeError:
    ...     pass
    >>> open(path).read(), sorted(os.listdir(os.path.dirname(path)))
    ('# report\\n', ['report.md'])
    """

    def __init__(self, path, *, newline: str = "\n", mode: int | None = None):
        self.path = Path(path)
        if self.path.is_dir():
            raise IsADirectoryError(21, "Is a directory", str(self.path))
        try:
            self._mode = os.stat(self.path).st_mode & 0o777 if mode is None else mode
        except OSError:
            self._mode = 0o666 & ~_umask()
        fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp", dir=self.path.parent or ".")
        self._tmp = Path(tmp)
        try:
            self._fh = os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace", newline=newline)
        except BaseException:
            os.close(fd)
            self._tmp.unlink(missing_ok=True)
            raise
        self.closed = False

    def write(self, text: str) -> int:
        return self._fh.write(text)

    def flush(self) -> None:
        self._fh.flush()

    @property
    def name(self) -> str:
        return str(self.path)

    def commit(self) -> None:
        """Finish the file and rename it onto the target."""
        if self.closed:
            return
        self.closed = True
        try:
            self._fh.flush()
            os.fchmod(self._fh.fileno(), self._mode)
            self._fh.close()
            os.replace(self._tmp, self.path)
        except BaseException:
            self._discard()
            raise

    def discard(self) -> None:
        """Drop what was written; the target is left as it was."""
        if not self.closed:
            self.closed = True
            self._discard()

    def _discard(self) -> None:
        try:
            self._fh.close()
        except OSError:
            pass
        self._tmp.unlink(missing_ok=True)

    def close(self) -> None:
        self.commit()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.commit()
        else:
            self.discard()
        return False


def _identity(path: str):
    """``(device, inode)`` of an existing file, else its resolved path."""
    try:
        st = os.stat(path)
        return ("inode", st.st_dev, st.st_ino)
    except OSError:
        return ("path", os.path.realpath(path))


def clashing_paths(inputs, outputs) -> str | None:
    """A sentence naming the first output that is an input or another output (``None`` when none is).

    ``inputs`` and ``outputs`` are ``(label, path)`` pairs; ``None`` paths and
    ``"-"`` (standard input or output) are skipped.  Paths are compared as the
    files they name: through symbolic links, and by device and inode when the
    file exists (a hard link).

    >>> clashing_paths([("input", "a.jsonl")], [("--out", "./a.jsonl")])
    '--out ./a.jsonl is the input a.jsonl: refusing to overwrite it'
    >>> clashing_paths([("input", "a.jsonl")], [("--out", "b.jsonl"), ("--audit-log", "c.jsonl")]) is None
    True
    """
    seen = []
    for label, path in inputs:
        if path not in (None, "-"):
            seen.append((label, str(path), _identity(str(path)), "the input" if label == "input" else label))
    for label, path in outputs:
        if path in (None, "-"):
            continue
        ident = _identity(str(path))
        for other_label, other_path, other, what in seen:
            if ident == other:
                verb = "overwrite it" if what == "the input" else "write both to one file"
                return f"{label} {path} is {what} {other_path}: refusing to {verb}"
        seen.append((label, str(path), ident, label))
    return None
