"""The binlog split: where the single reader starts, and what it still needs from the snapshot.

It starts at the smallest high watermark of all snapshot splits and carries, per table,
the finished splits' ranges and high watermarks for the emit rule. A table leaves
`watermarks` once the reader is past its largest hw; when none is left the per-split
records are gone and the state's size depends on the number of tables only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sluice import values
from sluice.binlog.emit_rule import TableWatermarks
from sluice.source.offset import BinlogOffset


@dataclass
class BinlogSplit:
    offset: BinlogOffset  # the next position to read: always a transaction boundary
    watermarks: dict[str, TableWatermarks] = field(default_factory=dict)

    def advance(self, offset: BinlogOffset) -> list[str]:
        """Moves to `offset`; returns the tables that just entered pure binlog phase."""
        self.offset = offset
        done = [t for t, w in self.watermarks.items() if not offset.is_before(w.max_high_watermark)]
        for table_id in done:
            del self.watermarks[table_id]
        return done

    def to_json(self) -> dict[str, Any]:
        return {
            "offset": self.offset.to_json(),
            "watermarks": {
                t: {
                    "boundaries": values.encode(w.boundaries),
                    "hws": [hw.to_json() for hw in w.high_watermarks],
                }
                for t, w in self.watermarks.items()
            },
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BinlogSplit:
        return cls(
            BinlogOffset.from_json(data["offset"]),
            {
                t: TableWatermarks(values.decode(w["boundaries"]), [BinlogOffset.from_json(h) for h in w["hws"]])
                for t, w in data.get("watermarks", {}).items()
            },
        )
