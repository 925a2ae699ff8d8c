"""The emit rule: which binlog changes the snapshot has not already accounted for.

Invariant: a finished split holds its chunk as of its high watermark (hw). A change at an
offset before the hw of the chunk holding a row image is already in that chunk, so it
must not be applied again; a change at or after it must be. An update whose key moves
between chunks is judged per side: the before image (a delete) against its chunk's hw,
the after image (an upsert) against its own chunk's hw.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sluice.event.row_change import ChangeRow, RowChange, RowKind
from sluice.source.key_order import KeyOrder
from sluice.source.offset import BinlogOffset
from sluice.source.row_decoding import RowDecoder
from sluice.source.schema import TableSchema

# The high watermark of a chunk that will be read again (its table changed during the
# snapshot): after every real position, so the emit rule leaves every change in it to that read.
PENDING = BinlogOffset("pending-reread.999999999999", 0)


@dataclass
class TableWatermarks:
    """A table's chunk boundaries with each chunk's high watermark, until the table is in
    pure binlog phase (the reader passed its largest hw) and this is dropped."""

    boundaries: list[Any]  # inner boundaries: chunk i is [boundaries[i-1], boundaries[i])
    high_watermarks: list[BinlogOffset]  # one per chunk
    # Where the table's schema was read, for a table that joined the capture ahead of the
    # reader: its DDL before there is in that schema already.
    schema_at: BinlogOffset | None = None

    @property
    def max_high_watermark(self) -> BinlogOffset:
        return max(self.high_watermarks)


def image_chunks(
    changes: Sequence[RowChange], decoder: RowDecoder, order: KeyOrder, boundaries: Sequence[Any]
) -> list[int]:
    """Two entries per change: the chunk holding its before image, then its after image
    (an absent image counts as chunk 0; callers check the image exists)."""
    keys: list[Any] = []
    for change in changes:
        keys.append(decoder.chunk_key(change.before) if change.before is not None else None)
        keys.append(decoder.chunk_key(change.after) if change.after is not None else None)
    return order.chunk_indexes(keys, boundaries)


def emit(
    changes: Sequence[RowChange],
    watermarks: TableWatermarks,
    decoder: RowDecoder,
    order: KeyOrder,
    schema: TableSchema,
) -> list[ChangeRow]:
    """The changelog rows to emit for one table's changes (in binlog order), each with the
    position of the change it comes from."""
    chunks = image_chunks(changes, decoder, order, watermarks.boundaries)
    hws = watermarks.high_watermarks
    out: list[ChangeRow] = []
    for i, change in enumerate(changes):
        before_due = change.before is not None and not change.offset.is_before(hws[chunks[2 * i]])
        after_due = change.after is not None and not change.offset.is_before(hws[chunks[2 * i + 1]])
        if change.kind is RowKind.UPDATE_AFTER:
            if before_due and after_due:
                out.extend(change.changelog(schema))
            elif before_due:
                out.append(change.one_side(schema, RowKind.DELETE))
            elif after_due:
                out.append(change.one_side(schema, RowKind.INSERT))
        elif before_due or after_due:
            out.extend(change.changelog(schema))
    return out
