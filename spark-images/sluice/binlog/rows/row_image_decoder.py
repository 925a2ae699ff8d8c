"""Decodes the row images of a rows event into the rows the chunk SELECT gives.

A table map is compiled once into one reader per column, and the readers into one row loop:
decoding every value through a chain of generic method calls (python-mysql-replication's
way) costs a few microseconds a value. Each reader yields the value in the form the split
reader's SELECT gives it (what the watermark fold and the emit rule compare), so there is
no second pass to normalise SET, BIT, JSON, BINARY padding or negative TIME.

The loop runs in C (_row_images.c, built by `make install` and into the image). The Python
loop, written out as source and compiled, with the common types' readers as statements it
runs in place, is the reference the tests hold the C one to, and what runs where the C one
was not built (a warning says so).

Row image layout (MySQL's rows_event.h): per image a null bitmap over the present columns,
then the non-null values in column order, each in its column type's binary form.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from sluice.binlog.rows.column_readers import ColumnReader, Inline, column_reader
from sluice.binlog.rows.system_versioning import row_end_column
from sluice.event.row_change import ChangeRow, RowKind
from sluice.event.schema_change import RenameTable, SchemaChangeEvent, SchemaEvolution
from sluice.source.offset import BinlogOffset
from sluice.source.row_decoding import Row
from sluice.source.schema import TableSchema

try:
    from sluice.binlog.rows import _row_images
except ImportError:  # a source tree nobody built: the Python loop decodes
    _row_images = None  # type: ignore[assignment]

log = logging.getLogger(__name__)

# Whether decoders compile their loops to C; tests turn it off to run the reference loop.
COMPILED = _row_images is not None
if not COMPILED:
    log.warning("the compiled row image decoder is not built (make install builds it): decoding in Python, slower")


class RowImageDecoder:
    """One table map compiled: decodes a rows event body into rows in the schema's column
    order. Columns are matched by name; one the schema does not know is read past."""

    def __init__(self, table_map_columns: Sequence[Any], schema: TableSchema) -> None:
        self.columns = tuple(table_map_columns)  # with the schema, all it is made from
        self.schema = schema
        self._width = len(schema.columns)
        self._loops: dict[tuple[tuple[bytes, ...], frozenset[int] | None], Callable[[bytes], list[Row]]] = {}
        self.whole: set[tuple[bytes, ...]] = set()  # column bitmaps that leave no column out
        self._readers: list[tuple[ColumnReader, int | None]] = []
        self._names: list[str] = []  # each table-map column's, for errors
        names = schema.column_names
        row_end = row_end_column(table_map_columns, schema)
        # A versioned table's row end: where each image holds it, past the row's end if the
        # schema has no such column (an implicit one); RowsEvent cuts it off.
        self.row_end: int | None = None
        for i, column in enumerate(table_map_columns):
            name = column.name if column.name is not None else (names[i] if i < len(names) else None)
            where = f"table {schema.table_id}, column {name}"
            # A column the schema does not know is read past (its slot is none of the row's).
            target = schema.position(name) if name in names else None
            if i == row_end:
                self.row_end = target = self._width if target is None else target
            data_type = schema.columns[target].data_type if target is not None and target < self._width else None
            try:
                reader = column_reader(column, data_type, where)
            except ValueError as exc:  # a table map MySQL never writes
                raise ValueError(f"column {name}: {exc}") from exc
            self._readers.append((reader, target))
            self._names.append(str(name))

    def images(self, body: bytes, present: Sequence[bytes], before_only: frozenset[int] | None = None) -> list[Row]:
        """Every image in the body, in order: one per row, or before/after pairs for an
        update (`present` then holds both images' column bitmaps: all columns under
        binlog_row_image=FULL). With `before_only`, an update's before images hold those
        slots' values alone (the others are read past, None): a target that writes rows
        by key needs no more of them, and they are half of what an update decodes."""
        key = (tuple(present), before_only)
        loop = self._loops.get(key)
        if loop is None:
            loop = self._loops[key] = self._compile(*key)
        return loop(body)

    def left_out(self, present: Sequence[bytes]) -> list[str]:
        """The schema's columns some image leaves out (binlog_row_image MINIMAL or NOBLOB in
        the session that wrote it): decoded, they would read as NULL."""
        names = self.schema.column_names
        carried = self.carried(present)
        mapped = sorted({t for _, t in self._readers if t is not None and t < self._width})
        left_out = [names[i] for i in mapped if not all(i in image for image in carried)]
        if not left_out:
            self.whole.add(tuple(present))
        return left_out

    def carried(self, present: Sequence[bytes]) -> tuple[frozenset[int], ...]:
        """Per image bitmap, the schema positions of the columns it carries."""
        return tuple(
            frozenset(
                target
                for i, (_, target) in enumerate(self._readers)
                if target is not None and target < self._width and image[i >> 3] >> (i & 7) & 1
            )
            for image in present
        )

    def _compile(self, present: Sequence[bytes], before_only: frozenset[int] | None) -> Callable[[bytes], list[Row]]:
        """The row loop for images of these columns."""
        slots = self._width + (self.row_end == self._width)
        kept = [before_only if before_only is not None and len(present) == 2 and n == 0 else None for n in range(2)]
        if not 1 <= len(present) <= 2:
            raise ValueError(f"a rows event has one or two images a row, not {len(present)}")
        if COMPILED:
            images = [
                [
                    (read.instruction, -1 if target is None else target, self._names[i])
                    for i, read, target in self._in_image(bitmap, kept[n])
                ]
                for n, bitmap in enumerate(present)
            ]
            return _row_images.Program(images, slots).decode
        return self._python_loop(present, slots, kept)

    def _in_image(self, bitmap: bytes, kept: frozenset[int] | None) -> list[tuple[int, ColumnReader, int | None]]:
        """The columns an image carries: their index, readers and slots (None: read past;
        so is every slot but the `kept` ones, if given)."""
        return [
            (i, reader, target if kept is None or target in kept else None)
            for i, (reader, target) in enumerate(self._readers)
            if i >> 3 < len(bitmap) and bitmap[i >> 3] >> (i & 7) & 1
        ]

    def _python_loop(
        self, present: Sequence[bytes], width: int, kept: list[frozenset[int] | None]
    ) -> Callable[[bytes], list[Row]]:
        """The row loop written out as Python and compiled once: a loop over columns and a
        call per value cost more than decoding them. Per value it is the reader's Inline
        statement, or else a call of the reader."""
        namespace: dict[str, Any] = {"READ_NOTHING": READ_NOTHING, "NO_NULL_BITMAP": NO_NULL_BITMAP}
        lines = ["def images(body):", "    rows = []", "    pos = 0", "    n = len(body)", "    while pos < n:"]
        lines.append("        round = pos")
        columns: dict[int, str] = {}  # line number: the column whose value it reads
        for image, bitmap in enumerate(present):
            in_image = self._in_image(bitmap, kept[image])
            null_bytes = (len(in_image) + 7) >> 3
            nulls = "body[pos]" if null_bytes == 1 else f"int.from_bytes(body[pos:pos + {null_bytes}], 'little')"
            lines.append(f"        if pos + {null_bytes} > n: raise ValueError(NO_NULL_BITMAP)")
            lines.append(f"        nulls = {nulls}; pos += {null_bytes}")
            slots = ["None"] * width
            for bit, (i, reader, target) in enumerate(in_image):
                read = reader.python
                if not isinstance(read, Inline):
                    read = Inline("{value}, pos = {read}(body, pos)", {"read": read})
                bound = {name: f"c{i}_{name}" for name in read.names}
                namespace.update({bound[name]: value for name, value in read.names.items()})
                statement = read.statement.format(value=f"v{i}", **bound)
                lines += [f"        if nulls & {1 << bit}:", f"            v{i} = None", "        else:"]
                lines += ["            " + line for line in statement.splitlines()]
                lines.append("            if pos > n: raise ValueError('row image ends before its value')")
                columns.update(
                    dict.fromkeys(range(len(lines) - len(statement.splitlines()), len(lines) + 1), self._names[i])
                )
                if target is not None:
                    slots[target] = f"v{i}"
            lines.append(f"        rows.append(({', '.join(slots)},))")
        lines.append("        if pos == round: raise ValueError(READ_NOTHING)")
        lines.append("    return rows")
        filename = f"<row images of {self.schema.table_id}>"
        exec(compile("\n".join(lines), filename, "exec"), namespace)  # noqa: S102
        return _naming_columns(namespace["images"], filename, columns)


READ_NOTHING = "a row image reads no byte of the body (its column bitmap selects no column)"
NO_NULL_BITMAP = "row image ends before its null bitmap"


def _naming_columns(
    loop: Callable[[bytes], list[Row]], filename: str, columns: dict[int, str]
) -> Callable[[bytes], list[Row]]:
    """The loop, its errors naming the column whose value raised them (as the C loop's do)."""

    def images(body: bytes) -> list[Row]:
        try:
            return loop(body)
        except Exception as exc:
            traceback = exc.__traceback__
            line = None
            while traceback is not None:
                if traceback.tb_frame.f_code.co_filename == filename:
                    line = traceback.tb_lineno
                traceback = traceback.tb_next
            if line not in columns:
                raise
            raise ValueError(f"column {columns[line]}: {exc}") from exc

    return images


def changelog_rows(
    images: list[Row], first: int, schema: TableSchema, kinds: tuple[RowKind, ...], timestamp: int, start: BinlogOffset
) -> list[ChangeRow]:
    """A rows event's (beginning at `start`) images as its changelog rows, from row `first`
    on. With two `kinds`, the images alternate before (kinds[0]) and after (kinds[1]), an
    update's."""
    if first < 0:
        raise ValueError(f"changelog of first row {first}")
    pairs, file, pos = len(kinds) == 2, start.file, start.pos
    if COMPILED:
        kinds = (kinds[0], kinds[-1])
        return _row_images.changelog(images, first, pairs, schema, kinds, timestamp, file, pos, ChangeRow, BinlogOffset)
    # Tuples made as tuples: a named tuple's own constructor is a Python call.
    new, row, offset = tuple.__new__, ChangeRow, BinlogOffset
    if pairs:
        return [
            new(row, (schema, kinds[i & 1], images[i], timestamp, new(offset, (file, pos, i >> 1, "", 0))))
            for i in range(2 * first, len(images))
        ]
    kind = kinds[0]
    return [
        new(row, (schema, kind, images[i], timestamp, new(offset, (file, pos, i, "", 0))))
        for i in range(first, len(images))
    ]


_SIGNATURE = ("type", "name", "unsigned", "character_set_name", "max_length", "length_size")
_SIGNATURE += ("precision", "decimals", "fsp", "bytes", "size", "compressed")


def _signature(columns: Sequence[Any]) -> tuple:
    return tuple(
        (*(getattr(c, a, None) for a in _SIGNATURE), tuple(c.enum_values or ()), tuple(c.set_values or ()))
        for c in columns
    )


class RowImageDecoders:
    """The compiled decoder for each captured table's current table map.

    Every statement's rows come after a fresh table map; a decoder is compiled again only
    when the table's columns changed. The schemas are the reader's own copy: a DDL moves
    them on (`evolve`) where the binlog has it, so rows after it are decoded with the
    schema in force at their event, however far the committing side lags behind."""

    def __init__(self, schemas: Mapping[str, TableSchema]) -> None:
        self._schemas = dict(schemas)
        self._current: dict[str, tuple[Any, RowImageDecoder]] = {}
        self._compiled: dict[tuple[str, tuple], RowImageDecoder] = {}

    def columns(self, database: str, table: str) -> tuple[str, ...]:
        schema = self._schemas.get(f"{database}.{table}")
        return schema.column_names if schema else ()

    def schema(self, table_id: str) -> TableSchema | None:
        return self._schemas.get(table_id)

    def table_ids(self) -> Collection[str]:
        return self._schemas.keys()

    def evolve(self, events: Sequence[SchemaChangeEvent]) -> None:
        changed = {e.table_id for e in events} | {e.new_table_id for e in events if isinstance(e, RenameTable)}
        self._schemas = SchemaEvolution(self._schemas, events).after
        self._current = {t: d for t, d in self._current.items() if t not in changed}
        self._compiled = {key: d for key, d in self._compiled.items() if key[0] not in changed}

    def for_table(self, table_id: str, table: Any) -> RowImageDecoder | None:
        """`table`: python-mysql-replication's Table from the event's table map."""
        current = self._current.get(table_id)
        if current is not None and current[0] is table:
            return current[1]
        schema = self._schemas.get(table_id)
        if schema is None:
            return None
        key = (table_id, _signature(table.columns))
        decoder = self._compiled.get(key)
        if decoder is None:
            decoder = self._compiled[key] = RowImageDecoder(table.columns, schema)
        self._current[table_id] = (table, decoder)
        return decoder
