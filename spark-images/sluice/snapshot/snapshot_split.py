"""A snapshot split: one half-open chunk [start, end) of one table's chunk key."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sluice import values


@dataclass(frozen=True)
class SnapshotSplit:
    """`start` None means -inf (first chunk), `end` None means +inf (last chunk)."""

    table_id: str
    index: int
    start: Any
    end: Any

    @property
    def split_id(self) -> str:
        return f"{self.table_id}:{self.index}"

    def to_json(self) -> dict[str, Any]:
        return {
            "table": self.table_id,
            "index": self.index,
            "start": values.encode(self.start),
            "end": values.encode(self.end),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SnapshotSplit:
        return cls(data["table"], int(data["index"]), values.decode(data["start"]), values.decode(data["end"]))
