"""Write files so that a failure leaves no half-written output.

A file is staged as a temporary in its target's directory, fsynced, then renamed
into place (os.replace).  A batch (AtomicFiles) renames all its files together and
rolls back the ones already renamed if a later rename fails, so `qgrun --out a --out
b` writes both or neither.  Used by the .qg writer, the CLI's outputs and the
checkpoint writer.
"""

from __future__ import annotations

import os
import tempfile


def fsync_dir(path: str) -> None:
    """Make renames in a directory durable; best effort (not every filesystem allows it)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


class AtomicFiles:
    """Stage several files as temporaries beside their targets, then rename them all at once.

    Usage: `with AtomicFiles() as batch: batch.add(path, data)...; batch.commit()`.
    Leaving the block without commit() (an exception) removes every temporary.
    """

    def __init__(self):
        self._staged: list[tuple[str, str]] = []

    def add(self, path: str | os.PathLike, data: bytes) -> None:
        target = os.fspath(path)
        d = os.path.dirname(os.path.abspath(target))
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", suffix=".tmp", dir=d)
        self._staged.append((tmp, target))
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_umask())

    def commit(self) -> None:
        """Rename every temporary onto its target; if one rename fails, undo the earlier ones.

        Each existing target is first hard-linked (or copied) to a backup beside it, so
        that a failure half-way through (a full disk, a vanished directory) leaves every
        target as it was: the old file, or no file.
        """
        dirs = set()
        done: list[tuple[str, str | None]] = []  # (target, backup of the old file or None)
        try:
            while self._staged:
                tmp, target = self._staged[0]
                backup = self._backup(target, tmp)
                try:
                    os.replace(tmp, target)
                except OSError:
                    if backup is not None:
                        os.unlink(backup)
                    raise
                done.append((target, backup))
                self._staged.pop(0)
                dirs.add(os.path.dirname(os.path.abspath(target)))
        except BaseException:  # a failed rename, or Ctrl-C between two renames
            for target, backup in reversed(done):
                try:
                    if backup is None:
                        os.unlink(target)
                    else:
                        os.replace(backup, target)
                except OSError:
                    pass
            raise
        for _, backup in done:
            if backup is not None:
                try:
                    os.unlink(backup)
                except OSError:
                    pass
        for d in dirs:  # make the renames durable
            fsync_dir(d)

    @staticmethod
    def _backup(target: str, tmp: str) -> str | None:
        if not os.path.lexists(target) or os.path.isdir(target):
            return None
        backup = tmp + ".old"
        try:
            os.link(target, backup)
        except OSError:  # a filesystem without hard links
            import shutil

            shutil.copy2(target, backup)
        return backup

    def discard(self) -> None:
        for tmp, _ in self._staged:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        self._staged.clear()

    def __enter__(self) -> "AtomicFiles":
        return self

    def __exit__(self, *exc) -> None:
        self.discard()


def atomic_write(path: str | os.PathLike, data: bytes) -> None:
    """Write `data` to `path` atomically; on failure `path` is untouched and no temporary remains."""
    with AtomicFiles() as batch:
        batch.add(path, data)
        batch.commit()
