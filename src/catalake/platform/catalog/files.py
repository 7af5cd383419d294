"""The catalog files' state: what a reader compares to know the catalog changed, without parsing it."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Iterable


def files_state(paths: Iterable[str | Path]) -> tuple:
    """What the local files under `paths` hold now: each file's path and a digest of its bytes
    (not its modification time, which a rewrite within the same clock tick leaves as it was). How
    a reader knows the catalog changed without parsing it (the catalog's cache in a process, the
    code location's state against the disk)."""
    state = []
    for path in map(Path, paths):
        for f in sorted(path.rglob("*")) if path.is_dir() else [path]:
            try:
                state.append((str(f), hashlib.blake2b(f.read_bytes(), digest_size=16).digest()))
            except IsADirectoryError:
                continue
            except OSError:
                state.append((str(f), None))
    return tuple(state)
