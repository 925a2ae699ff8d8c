"""`partition.key`: how a lakehouse sink partitions its tables, in the syntax of Flink CDC's
Iceberg pipeline connector: tables separated by ';', each `db.tbl:` and its fields separated
by ','. A field is a column (identity) or an Iceberg transform of one: `year(c)`,
`month(c)`, `day(c)`, `hour(c)`, `bucket[N](c)`, `truncate[W](c)`. For example
`shop.orders:year(created),bucket[16](id);shop.users:country`. Delta Lake partitions by
columns only. Which column a field may take is the sink's to say (sink/lakehouse/partitioning.py)."""

from __future__ import annotations

import re
from dataclasses import dataclass

_FIELD = re.compile(r"^(?:(?P<transform>[a-z]+)(?:\[(?P<width>\d+)\])?\((?P<inner>[^()]+)\)|(?P<column>[^()\[\],]+))$")
_WIDTHS = ("bucket", "truncate")  # the transforms that take a number
TIMES = ("year", "month", "day", "hour")


@dataclass(frozen=True)
class PartitionField:
    column: str
    transform: str = "identity"
    width: int | None = None  # bucket's number of buckets, truncate's width

    @property
    def transform_text(self) -> str:
        """As Iceberg writes transforms: identity, day, bucket[16]."""
        return self.transform if self.width is None else f"{self.transform}[{self.width}]"

    def __str__(self) -> str:
        return self.column if self.transform == "identity" else f"{self.transform_text}({self.column})"


def parse_partition_keys(text: str) -> dict[str, tuple[PartitionField, ...]]:
    """Table id: its partition fields. A ValueError names the part that is wrong."""
    keys: dict[str, tuple[PartitionField, ...]] = {}
    for part in filter(None, (p.strip() for p in text.split(";"))):
        table_id, colon, fields = part.partition(":")
        table_id = table_id.strip()
        if not colon or table_id.count(".") != 1 or not all(table_id.split(".")):
            raise ValueError(f"{part!r} must be <database>.<table>:<field>[,<field>...]")
        parsed = tuple(_field(f.strip(), table_id) for f in fields.split(","))
        if table_id in keys:
            raise ValueError(f"table {table_id} is named twice")
        keys[table_id] = parsed
    return keys


def _field(text: str, table_id: str) -> PartitionField:
    match = _FIELD.match(text)
    if not text or match is None:
        raise ValueError(f"{table_id}: {text!r} is neither a column nor a transform of one, such as bucket[16](id)")
    if match["column"] is not None:
        return PartitionField(match["column"].strip())
    transform, width = match["transform"], match["width"]
    if transform not in (*TIMES, *_WIDTHS):
        raise ValueError(f"{table_id}: {text!r}: the transforms are {', '.join((*TIMES, *_WIDTHS))}")
    if (transform in _WIDTHS) != (width is not None) or (width is not None and int(width) == 0):
        need = "a number greater than 0 in brackets, as bucket[16](id)" if transform in _WIDTHS else "no number"
        raise ValueError(f"{table_id}: {text!r}: {transform} takes {need}")
    return PartitionField(match["inner"].strip(), transform, int(width) if width is not None else None)


def partition_key_check(text: str) -> str | None:
    """The option's check at load: its syntax (the columns are checked against each table)."""
    try:
        parse_partition_keys(text)
    except ValueError as exc:
        return str(exc)
    return None
