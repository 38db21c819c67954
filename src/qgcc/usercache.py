"""Files qgcc keeps between runs to start faster: the parser's LALR tables and transformers' config
text for the layers (each costs a new process more than compiling a small kernel).

They live in the user's own cache directory ($QGCC_CACHE, default ~/.cache/qgcc, where the neural
engine keeps its compiled C), not in the shared temporary directory, where another user could
plant one.  Each
file's name carries a hash of everything its content depends on, so a stale file is never read;
a directory that cannot be made or written only means no cache.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


def cache_dir() -> Path:
    """$QGCC_CACHE, or ~/.cache/qgcc: every file qgcc caches for the user lives here."""
    return Path(os.environ.get("QGCC_CACHE") or Path.home() / ".cache" / "qgcc")


def cache_file(prefix: str, key: str, suffix: str) -> Path | None:
    """The path of the cache file for `key` (None if there is no usable cache directory)."""
    base = cache_dir()
    try:
        os.makedirs(base, exist_ok=True)
    except OSError:
        return None
    return Path(base) / f"{prefix}-{hashlib.sha256(key.encode()).hexdigest()[:24]}{suffix}"


def read_text(path: Path | None) -> str | None:
    try:
        return path.read_text(encoding="utf-8") if path is not None else None
    except (OSError, UnicodeDecodeError):
        return None


def write_text(path: Path | None, text: str) -> None:
    """Written whole or not at all (another process may be reading it)."""
    if path is None:
        return
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        try:
            tmp.unlink()
        except OSError:
            pass
