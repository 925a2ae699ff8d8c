"""converter-after-transform: SOFT_DELETE, as Flink CDC's: a row the source deletes stays in
its target, updated as the rule projects a deleted row (its __data_event_type__ is -D); a
table without a key keeps the row as it was. Into PostgreSQL and Iceberg."""

from __future__ import annotations

import pytest

from sluice.errors import DefinitionError
from sluice.source.schema import Column, TableSchema
from sluice.transform.table_transform import TableTransform
from sluice.transform.transform_rule import parse_transforms
from tests.harness import compare
from tests.harness.lakehouse import iceberg_sink, lakehouse_column_rows
from tests.harness.pipelines import (
    pipeline_yaml,
    postgres_sink,
    sluice_env,
    stream_until_equal,
    write_pipeline,
)


@pytest.mark.parametrize("target", ["postgresql", "iceberg"])
def test_a_deleted_row_stays_in_its_target_marked_deleted(tmp_path, mariadb, postgresql, source_db, target):
    mariadb.execute(
        "CREATE TABLE orders (id INT PRIMARY KEY, status VARCHAR(16))",
        "INSERT INTO orders VALUES (1, 'new'), (2, 'new'), (3, 'paid')",
        "CREATE TABLE notes (txt VARCHAR(16))",
        "INSERT INTO notes VALUES ('a'), ('b'), ('b')",
        database=source_db,
    )
    sink = postgres_sink(postgresql) if target == "postgresql" else iceberg_sink(tmp_path / "lake")
    keyless = target == "postgresql"  # a lakehouse table is upserted by key: it takes none without one
    tables = f"{source_db}.orders, {source_db}.notes" if keyless else f"{source_db}.orders"
    definition = pipeline_yaml(mariadb, tables, sink, **{"server-id": "6950-6953"})
    definition["transform"] = [
        {
            "source-table": f"{source_db}.orders",
            "projection": "id, status, __data_event_type__ AS op",
            "converter-after-transform": "SOFT_DELETE",
        },
        {"source-table": f"{source_db}.notes", "projection": "txt", "converter-after-transform": "SOFT_DELETE"},
    ]
    path = write_pipeline(tmp_path / "pipeline.yaml", definition)

    def write() -> None:
        mariadb.execute(
            "DELETE FROM orders WHERE id = 2",
            "UPDATE orders SET status = 'paid' WHERE id = 1",
            "INSERT INTO orders VALUES (4, 'new')",
            "DELETE FROM orders WHERE id = 4",
            "UPDATE orders SET id = 7 WHERE id = 3",  # a delete and an insert, as Flink CDC's source emits it
            "DELETE FROM notes WHERE txt = 'b' LIMIT 1",
            database=source_db,
        )

    expected_orders = [(1, "paid", "+U"), (2, "new", "-D"), (3, "paid", "-D"), (4, "new", "-D"), (7, "paid", "+I")]
    expected_notes = [("a",), ("b",), ("b",)]

    def rows(table: str, columns: list[str]) -> list[tuple] | None:
        if target == "postgresql":
            found = compare.postgres_rows_once_created(postgresql, source_db, table)
            return None if found is None else sorted(found)
        return lakehouse_column_rows(sink, f"{source_db}.{table}", columns)

    stream_until_equal(
        {"soft": (path, tmp_path / "state")},
        sluice_env(mariadb, postgresql),
        write,
        lambda: (expected_orders, expected_notes if keyless else None),
        {"soft": lambda: (rows("orders", ["id", "status", "op"]), rows("notes", ["txt"]) if keyless else None)},
    )


def test_a_soft_delete_of_a_table_without_a_key_that_projects_the_change_type_is_refused(tmp_path):
    notes = TableSchema("db", "notes", (Column("txt", "varchar", "varchar(16)", True, char_length=16),), (), "txt")
    rule = parse_transforms(
        [
            {
                "source-table": "db.notes",
                "projection": "txt, __data_event_type__ AS op",
                "converter-after-transform": "SOFT_DELETE",
            }
        ]
    )[0]
    with pytest.raises(
        DefinitionError, match=r"transform\[0\]\.converter-after-transform \(db\.notes\): .*primary-keys"
    ):
        TableTransform(rule, notes)
