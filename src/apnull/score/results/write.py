"""Writing result tables without harming the input: distinct targets, every output of a run replaced at once.

Three rules protect a user's files:

1. :func:`check_outputs` -- no output may be the input or another output. Paths are compared by
   their resolved real path (symbolic links followed) **and** by (device, inode) of what exists,
   so a hard link, a symbolic link or ``./x/../victim.csv`` to the input is caught as well.
2. :func:`write_tables` -- every output of a run is first written in full to a temporary file in its
   target's own folder; only when all of them are written is each moved over its target with
   :func:`os.replace` (atomic on POSIX and Windows within a file system, and it needs no space). So
   when the second of two outputs fails (a full disk, permission, an unwritable folder, an
   interrupt), the first has not replaced its old file either: the temporary files are removed, every
   old target is left byte-for-byte as it was, and a ``ValueError`` says so in one sentence (the CLI
   prints it as one line and exits 2). :func:`atomic_write` and :func:`write_table` are the same for
   one file. A target that exists and is not a regular file (``/dev/stdout``, a named pipe, a device)
   is written in place instead, once the regular files' temporaries are written: renaming over it
   would replace the device node itself.
3. The format follows the name (:func:`apnull.score.table.io.table_format`, the rule ``read_table``
   reads by): ``.parquet``, ``.pq`` or ``.parq`` Parquet; ``.tsv``/``.tab`` tab-separated; anything
   else CSV; a ``.gz``, ``.bz2``, ``.xz``, ``.zip`` or ``.zst`` suffix compresses the text. So a file
   written under a name is read back as what it is.
"""

from __future__ import annotations

import os
import tempfile

from ..table.io import table_format

__all__ = ["check_outputs", "atomic_write", "write_table", "write_tables", "table_writer"]


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


def _reason(exc: BaseException) -> str:
    reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc) or type(exc).__name__
    return " ".join(str(reason).split())[:160]


def _mode(path: str) -> int:
    """The mode a new ``path`` gets: an existing file's own, else what a plain ``open`` gives (0666
    minus the umask)."""
    try:
        return os.stat(path).st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def _special(path: str) -> bool:
    """An existing target that is not a regular file (a device, a pipe): written in place."""
    return os.path.exists(path) and not os.path.isfile(path)


def write_tables(jobs) -> None:
    """Write several files as one step: each ``(path, table)`` to a temporary file beside ``path``
    (a DataFrame in the format the name says, :func:`table_writer`; or a callable ``write(tmp_path)``
    writing a complete file); when all are written, each is moved over its target.

    Parameters
    ----------
    jobs : iterable of (str or None, DataFrame or callable(str))
        Targets (None skipped) and what to write there; every folder must exist and be writable.

    Raises
    ------
    ValueError
        One sentence naming the output that could not be written (full disk, permission, a table
        the format cannot hold) and saying that no output was changed: every temporary file is
        removed and every existing target is untouched. An interrupt (KeyboardInterrupt) goes on
        up, the temporary files removed and the targets untouched as well.
    """
    jobs = [(str(path), what if callable(what) else table_writer(what, str(path))) for path, what in jobs
            if path is not None]
    staged, specials, done, current = [], [], [], None
    try:
        for path, write in jobs:
            current = path
            if _special(path):
                specials.append((path, write))
                continue
            folder = os.path.dirname(os.path.abspath(path)) or "."
            fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=folder)
            os.close(fd)
            staged.append((tmp, path))
            write(tmp)
            os.chmod(tmp, _mode(path))
        for path, write in specials:
            current = path
            write(path)
        for tmp, path in staged:
            current = path
            os.replace(tmp, path)
            done.append(path)
    except Exception as exc:  # OSError, pandas and pyarrow errors: one sentence
        kept = "nothing was changed there" if len(jobs) == 1 else "no output file was changed"
        if done:  # a rename failed after others succeeded (renames need no space: not a full disk)
            kept = f"{', '.join(done)} {'was' if len(done) == 1 else 'were'} already replaced"
        raise ValueError(f"cannot write {current}: {_reason(exc)}; {kept}") from None
    finally:
        for tmp, _ in staged:
            if os.path.exists(tmp):
                try:
                    os.unlink(tmp)
                except OSError:
                    pass


def atomic_write(path: str, write) -> None:
    """Call ``write(tmp_path)`` on a temporary file beside ``path``, then move it over ``path``
    (:func:`write_tables` of one file).

    Raises
    ------
    ValueError
        The temporary file could not be created or written, or the rename failed. The temporary
        file is removed and an existing ``path`` is untouched. A new file gets the permissions a
        plain ``open`` would give (0666 minus the umask); an existing file keeps its mode.
    """
    write_tables([(path, write)])


def table_writer(df, path: str):
    """``write(tmp_path)`` writing ``df`` in the format ``path`` names (see the module text)."""
    fmt, compression = table_format(path)
    if fmt == "parquet":
        return lambda tmp: df.to_parquet(tmp, index=False)
    sep = "\t" if fmt == "tsv" else ","
    return lambda tmp: df.to_csv(tmp, index=False, sep=sep, compression=compression)


def write_table(df, path: str) -> None:
    """Write ``df`` to ``path`` atomically in the format its name says (see the module text)."""
    write_tables([(path, df)])
