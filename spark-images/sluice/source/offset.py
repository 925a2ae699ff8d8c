"""Binlog offsets: a value type with a total order, never raw tuples compared ad hoc."""

from __future__ import annotations

import functools
import re
from typing import Any, NamedTuple

_FILE_SEQUENCE = re.compile(r"\.(\d+)$")


class BinlogOffset(NamedTuple):
    """A position in the source's binlog: file, byte position, and row index within an event.

    `row` orders the rows of one rows event, so a batch can end in the middle of an event
    and resume after the last row it committed. `gtid` is carried along for display and
    for GTID-based resumption; ordering uses file and position, which every server has.
    `transaction`: for a resume point inside a transaction (a huge one is committed in
    pieces), where that transaction begins: reading restarts there, for its table maps,
    and skips what comes before this offset. `gtid` is then the set before it.

    A tuple, because the binlog reader makes one per row, but ordered only by the methods
    below (a tuple's own order would compare file names before their sequence numbers).
    """

    file: str
    pos: int
    row: int = 0
    gtid: str = ""
    transaction: int = 0

    @property
    def sequence(self) -> int:
        return _sequence(self.file)

    def _key(self) -> tuple[int, str, int, int]:
        return (self.sequence, self.file, self.pos, self.row)

    def is_before(self, other: BinlogOffset) -> bool:
        return self._key() < other._key()

    def is_after(self, other: BinlogOffset) -> bool:
        return self._key() > other._key()

    def __lt__(self, other: BinlogOffset) -> bool:
        return self.is_before(other)

    def __le__(self, other: BinlogOffset) -> bool:
        return not self.is_after(other)

    def __gt__(self, other: BinlogOffset) -> bool:
        return self.is_after(other)

    def __ge__(self, other: BinlogOffset) -> bool:
        return not self.is_before(other)

    def __str__(self) -> str:
        text = f"{self.file}:{self.pos}"
        if self.row:
            text += f"#{self.row}"
        return text

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"file": self.file, "pos": self.pos}
        if self.row:
            data["row"] = self.row
        if self.gtid:
            data["gtid"] = self.gtid
        if self.transaction:
            data["transaction"] = self.transaction
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> BinlogOffset:
        """An offset as a state or a target's records hold it: checked, since a hand-edited or
        corrupt record reaches the binlog reader's C code through it."""
        offset = cls(
            data["file"],
            int(data["pos"]),
            int(data.get("row", 0)),
            data.get("gtid", ""),
            int(data.get("transaction", 0)),
        )
        if not isinstance(offset.file, str) or not isinstance(offset.gtid, str):
            raise ValueError(f"binlog offset {data}: file and gtid are strings")
        if offset.pos < 0 or offset.row < 0 or not 0 <= offset.transaction <= offset.pos:
            raise ValueError(
                f"binlog offset {data}: pos and row are not negative, and a transaction begins before its pos"
            )
        return offset


@functools.lru_cache(maxsize=64)
def _sequence(file: str) -> int:
    """A binlog file's sequence number: offsets are compared per row, files are few."""
    match = _FILE_SEQUENCE.search(file)
    return int(match.group(1)) if match else 0
