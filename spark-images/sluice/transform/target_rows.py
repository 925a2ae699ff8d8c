"""The changes one target table takes of a source table's changes, through the table's
transform where it has one. Loads no expression compiler: an untransformed table's rows
pass without it."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sluice.event.row_change import ChangeRow, RowKind
from sluice.source.row_decoding import Row
from sluice.source.schema import TableSchema

if TYPE_CHECKING:
    from sluice.transform.table_transform import TableTransform


@dataclass(frozen=True)
class TargetRows:
    """What one target table takes of a source table's rows: the transform's image (if the
    table has a transform), in the target's columns (`onto`: a merged table's union). Its
    changes go on from here to the sink, never back through the route that chose it."""

    target: TableSchema
    transform: TableTransform | None
    onto: Callable[[Row], Row] | None  # the transform's columns -> the target's
    key: Callable[[Row], Any]  # a source row's primary key: an update that changes it is a delete and an insert

    @property
    def as_they_are(self) -> bool:
        """Whether rows reach the target unchanged (a table only renamed)."""
        return self.transform is None and self.onto is None

    def snapshot(self, rows: Iterable[Row]) -> Iterator[Row]:
        """A snapshot split's rows, without those the filter keeps out."""
        transform, onto = self.transform, self.onto
        if transform is None:
            return iter(rows) if onto is None else map(onto, rows)
        meta = transform.row_meta()
        kept = (image for image in (transform.image(row, meta) for row in rows) if image is not None)
        return kept if onto is None else map(onto, kept)

    def update(self, before: ChangeRow, after: ChangeRow) -> list[ChangeRow]:
        """An update pair: a delete and an insert where it changes the primary key, as Flink
        CDC's MySQL source (Debezium) emits it; a delete, an insert or nothing where the
        filter takes the row out or in (out under SOFT_DELETE too: it was not deleted at the
        source)."""
        if self.key(before.row) != self.key(after.row):
            return self.change(before, RowKind.DELETE) + self.change(after, RowKind.INSERT)
        old, new = self._image(before, RowKind.UPDATE_BEFORE), self._image(after, RowKind.UPDATE_AFTER)
        if old is not None and new is not None:
            return [
                ChangeRow(self.target, RowKind.UPDATE_BEFORE, old, before.timestamp, before.offset),
                ChangeRow(self.target, RowKind.UPDATE_AFTER, new, after.timestamp, after.offset),
            ]
        if old is not None:
            return [ChangeRow(self.target, RowKind.DELETE, old, before.timestamp, before.offset)]
        if new is not None:
            return [ChangeRow(self.target, RowKind.INSERT, new, after.timestamp, after.offset)]
        return []

    def change(self, row: ChangeRow, kind: RowKind) -> list[ChangeRow]:
        """One change of a source row; under a SOFT_DELETE rule a delete is an update of the
        row to its deleted image (a keyless target's row stays as it is)."""
        image = self._image(row, kind)
        if image is None:
            return []
        if kind is RowKind.DELETE and self.transform is not None and self.transform.rule.soft_delete:
            return (
                [ChangeRow(self.target, RowKind.UPDATE_AFTER, image, row.timestamp, row.offset)]
                if self.target.row_key
                else []
            )
        return [ChangeRow(self.target, kind, image, row.timestamp, row.offset)]

    def _image(self, row: ChangeRow, kind: RowKind) -> Row | None:
        transform, onto = self.transform, self.onto
        if transform is None:
            return row.row if onto is None else onto(row.row)
        image = transform.image(row.row, transform.row_meta(kind.value, row.timestamp * 1000))
        return image if image is None or onto is None else onto(image)
