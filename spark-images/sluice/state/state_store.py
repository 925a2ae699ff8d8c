"""A state directory: one JSON document, replaced atomically (write, fsync, rename).

A crash at any instant leaves either the old document or the new one, never half of one.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from sluice.errors import SluiceError

STATE_VERSION = 1
STATE_FILE = "state.json"


class StateStore:
    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self.path = self.directory / STATE_FILE

    def load(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            return {"version": STATE_VERSION}
        except (OSError, ValueError) as exc:
            raise SluiceError(f"--state-dir {self.directory}: {STATE_FILE} is unreadable: {exc}") from exc
        if not isinstance(data, dict) or "version" not in data or "pipeline" not in data:
            raise SluiceError(
                f"--state-dir {self.directory}: {STATE_FILE} is not a Sluice pipeline state; "
                "give the pipeline a state directory of its own"
            )
        if data.get("version") != STATE_VERSION:
            raise SluiceError(
                f"--state-dir {self.directory}: state version {data.get('version')} is not "
                f"{STATE_VERSION}; use a state directory written by this Sluice version"
            )
        return data

    def save(self, data: dict[str, Any]) -> None:
        write_json_atomically(self.path, data)


def write_json_atomically(path: Path, data: Any) -> None:
    """Write, fsync, rename, fsync the directory: a crash leaves the old file or the new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}-", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, separators=(",", ":"))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
