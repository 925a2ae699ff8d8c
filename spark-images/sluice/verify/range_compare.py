"""A range's rows compared, the source's against the target's, in one normal form
(verify/normal_form): how many differ each way, and a few of them by key (a keyless
table's by their values) and by the columns that differ."""

from __future__ import annotations

import collections
from dataclasses import dataclass

from sluice.event.snapshot_split import SnapshotSplit
from sluice.source.row_decoding import Row, RowDecoder
from sluice.source.schema import TableSchema
from sluice.verify.normal_form import normal_row, normal_value
from sluice.verify.range_text import range_text


@dataclass(frozen=True)
class RangeMismatch:
    table_id: str
    split: SnapshotSplit
    source_rows: int
    target_rows: int
    missing: int  # source rows the target lacks or holds otherwise
    unexpected: int  # target rows the source does not hold
    examples: tuple[str, ...] = ()  # a few rows that differ, by key

    def describe(self) -> str:
        examples = f"; e.g. {'; '.join(self.examples)}" if self.examples else ""
        return (
            f"{self.table_id} {range_text(self.split)}: {self.missing} source rows missing or different in the "
            f"target, {self.unexpected} target rows not at the source ({self.source_rows} rows at the source, "
            f"{self.target_rows} in the target){examples}"
        )


def compare(
    split: SnapshotSplit, schema: TableSchema, source_rows: list[Row], target_rows: list[Row]
) -> RangeMismatch | None:
    normal = normal_row(schema)
    source = collections.Counter(map(normal, source_rows))
    target = collections.Counter(map(normal, target_rows))
    if source == target:
        return None
    missing, unexpected = source - target, target - source
    return RangeMismatch(
        split.table_id,
        split,
        len(source_rows),
        len(target_rows),
        sum(missing.values()),
        sum(unexpected.values()),
        _examples(
            schema,
            [r for r in source_rows if normal(r) in missing],
            [r for r in target_rows if normal(r) in unexpected],
        ),
    )


EXAMPLES = 3


def _examples(schema: TableSchema, missing: list[Row], unexpected: list[Row]) -> tuple[str, ...]:
    """A few differing rows: for a keyed table by key, which columns differ or which side
    lacks the row; for a keyless one by its values, which side lacks it."""
    decoder = RowDecoder(schema)
    if schema.is_bag:
        half = (EXAMPLES + 1) // 2
        shown = [f"{decoder.key_text(row)} not in the target" for row in missing[:half]]
        shown += [f"{decoder.key_text(row)} not at the source" for row in unexpected[: EXAMPLES - len(shown)]]
        return tuple(shown)
    by_key = {decoder.row_key(row): row for row in unexpected}
    found = []
    for row in missing[:EXAMPLES]:
        other = by_key.pop(decoder.row_key(row), None)
        if other is None:
            found.append(f"{decoder.key_text(row)} not in the target")
            continue
        differ = [
            c.name
            for c, a, b in zip(schema.columns, row, other, strict=True)
            if normal_value(c.data_type, a) != normal_value(c.data_type, b)
        ]
        found.append(f"{decoder.key_text(row)} differs in {', '.join(differ)}")
    found += [f"{decoder.key_text(row)} not at the source" for row in list(by_key.values())[: EXAMPLES - len(found)]]
    return tuple(found)
