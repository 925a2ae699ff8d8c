"""Pipeline definitions: Flink CDC 3 keys accepted, bad ones refused with the key named."""

from __future__ import annotations

import textwrap

import pytest

from sluice.errors import DefinitionError
from sluice.pipeline.definition import parse_definition

VALID = """
source:
  type: mysql
  hostname: db.internal
  port: 3306
  username: cdc
  password: ${DB_PASSWORD}
  tables: app_db.\\.*, shop.order_[0-9]+
  tables.exclude: app_db.audit
  server-id: 5400-5404
  scan.startup.mode: snapshot
  scan.incremental.snapshot.chunk.size: 4096
  scan.incremental.snapshot.chunk.key-column: shop.order_\\.*:order_id
sink:
  type: jdbc
  url: postgresql://warehouse:5432/analytics
  username: loader
  password: ${PG_PASSWORD}
pipeline:
  name: app-to-warehouse
  parallelism: 4
"""
ENV = {"DB_PASSWORD": "s3cret", "PG_PASSWORD": "pg"}


def parse(text: str = VALID, env=ENV):
    return parse_definition(textwrap.dedent(text), env=env)


def test_a_flink_cdc_definition_is_accepted():
    definition = parse()
    source = definition.source
    assert definition.parallelism == 4 and definition.name == "app-to-warehouse"
    assert source.password == "s3cret" and definition.sink.options["password"] == "pg"
    assert source.tables.selects("app_db", "users") and not source.tables.selects("app_db", "audit")
    assert source.tables.selects("shop", "order_12") and not source.tables.selects("shop", "order_x")
    assert source.chunk_key_column_for("shop", "order_12") == "order_id"
    assert source.server_ids.start == 5400 and len(source.server_ids) == 5


def test_passwords_stay_out_of_repr():
    definition = parse()
    assert "s3cret" not in repr(definition) and "pg" not in repr(definition.sink)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("port: 3306", "port: abc"), r"source\.port: expected an integer"),
        (("port: 3306", "port: 70000"), r"source\.port: must be a TCP port"),
        (
            ("scan.startup.mode: snapshot", "scan.startup.mode: sometimes"),
            r"source\.scan\.startup\.mode: 'sometimes' is not one of",
        ),
        (
            ("chunk.size: 4096", "chunk.size: 0"),
            r"source\.scan\.incremental\.snapshot\.chunk\.size: must be greater than 0",
        ),
        (("server-id: 5400-5404", "server-id: 5404-5400"), r"source\.server-id: '5404-5400'"),
        (
            ("server-id: 5400-5404", "server-id: 5400-5401"),
            r"source\.server-id: the range has 2 ids but pipeline\.parallelism is 4",
        ),
        (
            ("hostname: db.internal", "hostnme: db.internal"),
            r"source\.hostnme: unknown option \(did you mean 'hostname'\?\)",
        ),
        (("parallelism: 4", "parallelism: many"), r"pipeline\.parallelism: expected an integer"),
        (
            ("url: postgresql://warehouse:5432/analytics", "url: oracle://x/y"),
            r"sink\.url: 'oracle://x/y' must start with",
        ),
        (
            ("url: postgresql://warehouse:5432/analytics", "url: postgresql://warehouse:5432/"),
            r"sink\.url: .* must name a host and a database",
        ),
        (("type: jdbc", "type: kafka"), r"sink\.type: 'kafka' is not one of"),
        (
            ("tables: app_db.\\.*, shop.order_[0-9]+", "tables: justonename"),
            r"source\.tables: 'justonename' must be 'database\.table'",
        ),
        (
            ("tables: app_db.\\.*, shop.order_[0-9]+", "tables: app.(unclosed"),
            r"source\.tables: 'app\.\(unclosed' is not a valid regex",
        ),
        (("  username: cdc\n", ""), r"source\.username: required option is missing"),
        (("pipeline:", "route:\n  - source-table: a.b\npipeline:"), r"route\[0\]\.sink-table: required"),
        (("pipeline:", "transform:\n  - projection: id\npipeline:"), r"transform\[0\]\.source-table: required"),
        (("parallelism: 4", "parallelism: 4\n  route-mode: SOME"), r"pipeline\.route-mode: 'SOME' is not one of"),
        (
            ("parallelism: 4", "parallelism: 4\n  local-time-zone: Mars/Olympus"),
            r"pipeline\.local-time-zone: .*Mars/Olympus",
        ),
        (("pipeline:", "pipelines:"), r"pipelines: unknown section"),
        (
            ("key-column: shop.order_\\.*:order_id", "key-column: order_id"),
            r"chunk\.key-column: 'order_id' must be 'database\.table:column'",
        ),
    ],
)
def test_bad_definitions_are_refused_naming_the_key(change, message):
    old, new = change
    assert old in VALID
    with pytest.raises(DefinitionError, match=message):
        parse(VALID.replace(old, new))


def test_a_missing_environment_variable_is_named():
    with pytest.raises(DefinitionError, match=r"source\.password: environment variable DB_PASSWORD is not set"):
        parse(env={"PG_PASSWORD": "x"})


@pytest.mark.parametrize("scheme", ["mysql", "postgresql"])
def test_a_jdbc_target_on_the_source_server_is_refused(scheme):
    text = VALID.replace("url: postgresql://warehouse:5432/analytics", f"url: {scheme}://db.internal:3306/copy")
    with pytest.raises(DefinitionError, match=r"sink\.url: .* is the source server itself"):
        parse(text)


def test_specific_offset_needs_a_position():
    with pytest.raises(DefinitionError, match=r"specific-offset\.file"):
        parse(VALID.replace("scan.startup.mode: snapshot", "scan.startup.mode: specific-offset"))


ICEBERG_SINK = """
sink:
  type: iceberg
  catalog.properties.type: sql
  catalog.properties.uri: postgresql+psycopg://loader:${PG_PASSWORD}@warehouse/catalog
  catalog.properties.warehouse: s3://lake/warehouse
  table.properties.write.parquet.compression-codec: zstd
  sink.commit.interval: 30s
"""


def _with_sink(sink: str) -> str:
    return VALID[: VALID.index("sink:")] + textwrap.dedent(sink) + VALID[VALID.index("pipeline:") :]


def test_an_iceberg_sink_takes_flink_cdcs_catalog_and_table_properties():
    definition = parse(_with_sink(ICEBERG_SINK))
    options = definition.sink.options
    assert definition.sink.type == "iceberg" and definition.sink.name == "iceberg"
    assert options["catalog.properties."] == {
        "type": "sql",
        "uri": "postgresql+psycopg://loader:pg@warehouse/catalog",
        "warehouse": "s3://lake/warehouse",
    }
    assert options["table.properties."] == {"write.parquet.compression-codec": "zstd"}
    assert options["sink.commit.interval"] == "30s"
    # The state names the catalog, never its password.
    assert (
        definition.state_identity["sink.catalog.properties.uri"] == "postgresql+psycopg://loader:***@warehouse/catalog"
    )


def test_a_delta_sink_takes_a_root_path_and_storage_options():
    definition = parse(
        _with_sink("sink:\n  type: delta\n  path: s3://lake/delta\n  storage.options.AWS_REGION: eu-west-1\n")
    )
    assert definition.sink.options["path"] == "s3://lake/delta"
    assert definition.sink.options["storage.options."] == {"AWS_REGION": "eu-west-1"}


@pytest.mark.parametrize(
    ("sink", "message"),
    [
        ("sink:\n  type: iceberg\n  catalog.properties.type: hadoop\n  catalog.properties.warehouse: /w\n",
         r"sink\.catalog\.properties\.\*: catalog type 'hadoop' is not one pyiceberg has; use one of rest, sql"),
        ("sink:\n  type: iceberg\n", r"sink\.catalog\.properties\.\*: set catalog\.properties\.type"),
        ("sink:\n  type: delta\n  path: /d\n  storage.option.x: 1\n",
         r"sink\.storage\.option\.x: unknown option.*storage\.options\.\*"),
        ("sink:\n  type: delta\n", r"sink\.path: required option is missing"),
        ("sink:\n  type: delta\n  path: /d\n  partition.key: shop.orders:bucket(id)\n",
         r"sink\.partition\.key: shop\.orders: 'bucket\(id\)': bucket takes a number greater than 0 in brackets"),
        ("sink:\n  type: delta\n  path: /d\n  partition.key: orders:id\n",
         r"sink\.partition\.key: 'orders:id' must be <database>\.<table>:<field>"),
    ],
)  # fmt: skip
def test_bad_lakehouse_sinks_are_refused_naming_the_key(sink, message):
    with pytest.raises(DefinitionError, match=message):
        parse(_with_sink(sink))


def test_the_local_time_zone_reaches_the_transforms_and_the_states_identity():
    """pipeline.local-time-zone, as Flink CDC's: transforms compute LOCALTIMESTAMP and
    FROM_UNIXTIME in it; a state written without it (UTC) keeps its identity."""
    utc = parse(VALID.replace("pipeline:", "transform:\n  - {source-table: app_db.t, projection: id}\npipeline:"))
    shanghai = parse(
        VALID.replace(
            "pipeline:", "transform:\n  - {source-table: app_db.t, projection: id}\npipeline:\n  local-time-zone: UTC+8"
        )
    )
    assert utc.routing.transforms[0].local_time_zone == "UTC"
    assert utc.routing.transforms[0].tinyint1_as_boolean  # source.treat-tinyint1-as-boolean.enabled, as Flink's
    assert shanghai.routing.transforms[0].local_time_zone == "UTC+8"
    assert "local_time_zone" not in utc.routing.identity()
    assert shanghai.routing.identity()["local_time_zone"] == "UTC+8"
    assert type(shanghai.routing).from_identity(shanghai.routing.identity()).transforms[0].local_time_zone == "UTC+8"


@pytest.mark.parametrize(
    "keys",
    [
        {"scan.newly-added-table.enabled": "true"},
        {"scan.newly-added-table.enabled": "false"},
        {"scan.binlog.newly-added-table.enabled": "true"},
    ],
)
def test_flink_cdcs_newly_added_table_keys_are_taken(keys):
    """What they ask Sluice does anyway: a widened `tables` list snapshots the new tables;
    a table created while streaming is read from the binlog."""
    lines = "".join(f"  {k}: {v}\n" for k, v in keys.items())
    definition = parse(VALID.replace("sink:\n", lines + "sink:\n", 1))
    assert definition.source.tables.selects("app_db", "users")


def test_both_newly_added_table_keys_are_refused_together_as_flink_cdc_refuses_them():
    lines = "  scan.newly-added-table.enabled: true\n  scan.binlog.newly-added-table.enabled: true\n"
    with pytest.raises(DefinitionError, match=r"scan\.binlog\.newly-added-table\.enabled.*cannot both be"):
        parse(VALID.replace("sink:\n", lines + "sink:\n", 1))


def test_a_model_block_is_refused_saying_why():
    model = (
        "  model:\n    - name: completion_model\n      type: openai-compatible\n      options: {model: gpt-4o-mini}\n"
    )
    with pytest.raises(DefinitionError, match=r"pipeline\.model: Flink CDC's AI model clients .* Sluice has none"):
        parse(VALID.replace("  parallelism: 4\n", "  parallelism: 4\n" + model))
