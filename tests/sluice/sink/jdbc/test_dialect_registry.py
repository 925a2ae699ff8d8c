"""A JDBC target is one dialect module and one line of the registry
(pipeline/jdbc_targets.py): the definition takes its URL, the option's description and the
CRD name it, the sink writes through it, and its types and DDL are its own."""

from __future__ import annotations

import dataclasses
from urllib.parse import urlsplit

import pytest

from sluice.errors import DefinitionError
from sluice.event.row_change import ChangeBatch, ChangeRow, RowKind
from sluice.event.schema_change import AddColumn, SchemaEvolution
from sluice.pipeline import jdbc_targets
from sluice.pipeline.jdbc_targets import JDBC_TARGETS, JdbcTargetKind
from sluice.pipeline.jdbc_url import parse_jdbc_url
from sluice.pipeline.sink_configs import JdbcSinkConfig
from sluice.sink.jdbc.dialect import JdbcDialect
from sluice.sink.jdbc.dialects import dialect_of
from sluice.sink.jdbc.postgres import PostgresDialect
from sluice.sink.jdbc.sink import JdbcSink
from sluice.source.offset import BinlogOffset
from sluice.source.schema import Column
from tests.harness import compare


class WireDialect(PostgresDialect):
    """A database that speaks PostgreSQL's protocol but keeps JSON as text (json, not jsonb):
    all a new target of that family says of its own."""

    @staticmethod
    def column_type(column: Column) -> str:
        return "json" if column.data_type == "json" else PostgresDialect.column_type(column)


WIRE = JdbcTargetKind("pgwire", ("pgwire",), 5432, f"{__name__}.WireDialect")


@pytest.fixture
def wire_registered(monkeypatch):
    monkeypatch.setattr(jdbc_targets, "JDBC_TARGETS", (*JDBC_TARGETS, WIRE))


def test_every_registered_target_has_a_dialect_and_schemes_of_its_own():
    schemes = [scheme for kind in JDBC_TARGETS for scheme in kind.schemes]
    assert len(schemes) == len(set(schemes))
    for kind in JDBC_TARGETS:
        assert isinstance(dialect_of(kind.name), JdbcDialect)
        assert parse_jdbc_url(f"{kind.schemes[-1]}://db.internal/copy").port == kind.default_port


def test_an_unregistered_scheme_is_refused_naming_the_registered_ones():
    with pytest.raises(DefinitionError, match=r"must start with postgresql:// or mysql://"):
        parse_jdbc_url("pgwire://db.internal/copy")


def test_a_registered_target_is_taken_by_url_and_written_through_its_dialect(
    wire_registered, postgresql, table_t, source_db
):
    url = urlsplit(postgresql.url.removeprefix("jdbc:"))
    config = JdbcSinkConfig.from_options(
        {"url": f"pgwire://{url.hostname}:{url.port}{url.path}", "username": postgresql.user, "password": "x"}
    )
    config = dataclasses.replace(config, password=postgresql.password)
    assert config.url.dialect == "pgwire"
    sink = JdbcSink(config, f"wire-{source_db}")
    assert isinstance(sink.target.dialect, WireDialect)

    sink.prepare([table_t])
    writer = sink.writer()
    at = BinlogOffset("mysql-bin.000001", 10)
    writer.write_changes(
        ChangeBatch([ChangeRow(table_t, RowKind.INSERT, (1, "a"), 0, at)]), BinlogOffset("mysql-bin.000001", 20), False
    )
    document = Column("doc", "json", "json", True)
    writer.apply_schema_change(
        "add-doc", SchemaEvolution({table_t.table_id: table_t}, [AddColumn(table_t.table_id, document)])
    )
    writer.close()

    assert compare.postgres_rows(postgresql, source_db, "t") == [(1, "a", None)]
    with postgresql.connect() as conn:
        held = conn.execute(
            "SELECT data_type FROM information_schema.columns WHERE table_schema = %s AND column_name = 'doc'",
            (source_db,),
        ).fetchall()
    assert held == [("json",)]
