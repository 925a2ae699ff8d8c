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

from sluice import json_values
from sluice.binlog.emit_rule import TableWatermarks
from sluice.source.offset import BinlogOffset


@dataclass
class BinlogSplit:
    offset: BinlogOffset  # the next position to read: always a transaction boundary
    watermarks: dict[str, TableWatermarks] = field(default_factory=dict)

    def schemas_read_at(self) -> dict[str, BinlogOffset]:
        """The tables read whole ahead of the offset, and where their schemas were read."""
        return {t: w.schema_at for t, w in self.watermarks.items() if w.schema_at is not None}

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
                    "boundaries": json_values.encode(w.boundaries),
                    "hws": [hw.to_json() for hw in w.high_watermarks],
                    **({"schemaAt": w.schema_at.to_json()} if w.schema_at else {}),
                }
                for t, w in self.watermarks.items()
            },
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BinlogSplit:
        return cls(
            BinlogOffset.from_json(data["offset"]),
            {
                t: TableWatermarks(
                    json_values.decode(w["boundaries"]),
                    [BinlogOffset.from_json(h) for h in w["hws"]],
                    BinlogOffset.from_json(w["schemaAt"]) if w.get("schemaAt") else None,
                )
                for t, w in data.get("watermarks", {}).items()
            },
        )
