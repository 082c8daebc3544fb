"""Writing result tables without harming the input: distinct targets, atomic replacement.

Two rules protect a user's only copy of a screen:

1. :func:`check_outputs` -- no output may be the input or another output. Paths are compared by
   their resolved real path (symbolic links followed) **and** by (device, inode) of what exists,
   so a hard link, a symbolic link or ``./x/../victim.csv`` to the input is caught as well.
2. :func:`atomic_write` -- a table is written to a temporary file in the target's own folder and
   moved over the target with :func:`os.replace` (atomic on POSIX and Windows within a file
   system) only once the write succeeded. A failed write (full disk, permission, unwritable
   folder) removes the temporary file, leaves any old target byte-for-byte as it was, and raises
   ``ValueError`` with one readable sentence (the CLI prints it as one line and exits 2).
   A target that exists and is not a regular file (``/dev/stdout``, a named pipe, a device) is
   written in place instead: renaming over it would replace the device node itself.
"""

from __future__ import annotations

import os
import tempfile

__all__ = ["check_outputs", "atomic_write", "write_table"]


def _identity(path: str):
    """(real path, (device, inode) or None) of ``path``."""
    real = os.path.realpath(path)
    try:
        st = os.stat(path)
        ident = (st.st_dev, st.st_ino)
    except OSError:
        ident = None
    return real, ident


def check_outputs(inputs, outputs) -> None:
    """ValueError if an output path names an input file or another output.

    Parameters
    ----------
    inputs : iterable of str or None
        Files read by the run (None entries ignored).
    outputs : iterable of (option name, str or None)
        Files the run will write, with the name used in the message (e.g. ``"--out-queries"``).

    Two paths are the same file when their real paths (links followed) are equal, or when both
    exist and share device and inode (hard links).
    """
    seen = []
    for path in inputs:
        if path is not None:
            seen.append(("the input file", path, *_identity(path)))
    for name, path in outputs:
        if path is None:
            continue
        real, ident = _identity(path)
        for other, opath, oreal, oident in seen:
            if real == oreal or (ident is not None and ident == oident):
                raise ValueError(f"{name} {path} is the same file as {other} {opath}; "
                                 "choose another name (outputs never replace the input or each other)")
        seen.append((name, path, real, ident))


def atomic_write(path: str, write) -> None:
    """Call ``write(tmp_path)`` on a temporary file beside ``path``, then move it over ``path``.

    Parameters
    ----------
    path : str
        The target. Its folder must exist and be writable.
    write : callable(str)
        Writes the complete file at the path it is given.

    Raises
    ------
    ValueError
        The temporary file could not be created or written, or the rename failed. The temporary
        file is removed and an existing ``path`` is untouched. A new file gets the permissions a
        plain ``open`` would give (0666 minus the umask); an existing file keeps its mode.
    """
    folder = os.path.dirname(os.path.abspath(path)) or "."
    base = os.path.basename(path)
    if os.path.exists(path) and not os.path.isfile(path):
        _write_special(path, write)
        return
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{base}.", suffix=".tmp", dir=folder)
        os.close(fd)
        write(tmp)
        try:
            mode = os.stat(path).st_mode & 0o7777
        except OSError:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(tmp, mode)
        os.replace(tmp, path)
        tmp = None
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ValueError(f"cannot write {path}: {' '.join(str(reason).split())[:160]}; "
                         "nothing was changed there") from None
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def _write_special(path: str, write) -> None:
    """Write straight into an existing non-regular file (``/dev/stdout``, a pipe, a device): renaming
    over it would replace the device node itself, so it is written in place; errors as one sentence."""
    try:
        write(path)
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ValueError(f"cannot write {path}: {' '.join(str(reason).split())[:160]}") from None


def write_table(df, path: str) -> None:
    """Write ``df`` atomically: Parquet for ``.parquet``/``.pq``, else CSV (see :func:`atomic_write`)."""
    if path.lower().endswith((".parquet", ".pq")):
        atomic_write(path, lambda tmp: df.to_parquet(tmp, index=False))
    else:
        atomic_write(path, lambda tmp: df.to_csv(tmp, index=False))
