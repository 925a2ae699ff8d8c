"""Reads a pipeline YAML (Flink CDC 3 keys) into typed, validated settings.

Everything a run needs is checked here, before Spark starts, so a wrong definition costs
the user seconds, not a half-written target.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from sluice.errors import DefinitionError
from sluice.pipeline.jdbc_url import redacted
from sluice.pipeline.option_tables import SINK_OPTIONS, SINK_TYPES, SOURCE_OPTIONS
from sluice.pipeline.options import (
    parse_duration,
    resolve,
)
from sluice.pipeline.pipeline_options import PIPELINE_OPTIONS
from sluice.pipeline.schema_change_types import accepted_types
from sluice.pipeline.sink_configs import JdbcSinkConfig, LakehouseSinkConfig
from sluice.route.route_rule import parse_routes
from sluice.route.routing import Routing
from sluice.source.config import ServerIdRange, SourceConfig, StartupOptions
from sluice.source.table_selector import TableSelector, is_tool_table, parse_patterns
from sluice.source.tls import tls_settings
from sluice.transform.transform_rule import parse_transforms
from sluice.transform.udf_entries import python_function


@dataclass(frozen=True)
class SinkConfig:
    type: str
    name: str
    options: Mapping[str, Any] = field(repr=False)
    jdbc: JdbcSinkConfig | None = None  # a jdbc sink's options, typed
    lakehouse: LakehouseSinkConfig | None = None  # an iceberg or delta sink's


@dataclass(frozen=True)
class PipelineDefinition:
    name: str
    parallelism: int
    schema_change_behavior: str
    source: SourceConfig
    sink: SinkConfig
    state_identity: Mapping[str, str] = field(default_factory=dict)  # see STATE_SOURCE_KEYS
    approved_schema_changes: tuple[str, ...] = ()
    routing: Routing = Routing()  # the route and transform blocks

    @property
    def accepted_schema_changes(self) -> frozenset[str]:
        """The event types the sink's metadata applier is given."""
        options = self.sink.options
        return accepted_types(options["include.schema.changes"], options["exclude.schema.changes"])


def load_definition(path: str | Path, env: Mapping[str, str] | None = None) -> PipelineDefinition:
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise DefinitionError(f"{path}: cannot read the pipeline definition: {exc.strerror}") from exc
    return parse_definition(text, env=env, origin=str(path), directory=str(path.resolve().parent))


def parse_definition(
    text: str, env: Mapping[str, str] | None = None, origin: str = "pipeline definition", directory: str = ""
) -> PipelineDefinition:
    """`directory`: the definition file's, where user-defined functions' modules may be."""
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise DefinitionError(f"{origin}: not valid YAML: {exc}") from exc
    if not isinstance(document, Mapping):
        raise DefinitionError(f"{origin}: expected a mapping with source, sink and pipeline")
    return build_definition(document, env=os.environ if env is None else env, directory=directory)


def build_definition(document: Mapping[str, Any], env: Mapping[str, str], directory: str = "") -> PipelineDefinition:
    """Builds the definition from an already-parsed mapping (a YAML file or a CR's spec)."""
    document = _substitute(document, env, "")
    for key in document:
        if key not in ("source", "sink", "pipeline", "route", "transform"):
            raise DefinitionError(f"{key}: unknown section; expected source, sink, pipeline, route and transform")
    for section in ("source", "sink"):
        if section not in document:
            raise DefinitionError(f"{section}: required section is missing")

    pipeline = resolve("pipeline", document.get("pipeline"), PIPELINE_OPTIONS)
    source_values = resolve("source", document["source"], SOURCE_OPTIONS)
    source = _source(source_values)
    if len(source.server_ids) < pipeline["parallelism"]:
        raise DefinitionError(
            f"source.server-id: the range has {len(source.server_ids)} ids but "
            f"pipeline.parallelism is {pipeline['parallelism']}; each parallel reader needs one"
        )
    sink = _sink(document["sink"])
    _refuse_writing_into_the_source(source, sink)
    if pipeline["execution.runtime-mode"] == "BATCH" and source.startup.mode != "snapshot":
        raise DefinitionError(
            f"pipeline.execution.runtime-mode: BATCH reads a snapshot and stops; set source.scan.startup.mode: "
            f"snapshot (it is {source.startup.mode})"
        )
    functions = tuple(python_function(entry, directory) for entry in pipeline["user-defined-function"])
    routing = Routing(
        parse_routes(document.get("route"), pipeline["route-mode"]),
        parse_transforms(
            document.get("transform"),
            pipeline["local-time-zone"],
            functions,
            tinyint1_as_boolean=source_values["treat-tinyint1-as-boolean.enabled"],
        ),
        (document.get("route"), document.get("transform")),
        pipeline["local-time-zone"],
        functions,
    )
    return PipelineDefinition(
        name=pipeline["name"],
        parallelism=pipeline["parallelism"],
        schema_change_behavior=pipeline["schema.change.behavior"],
        approved_schema_changes=pipeline["schema-change.approved"],
        source=source,
        sink=sink,
        state_identity={**_state_identity(source_values, sink), **routing.identity()},
        routing=routing,
    )


# What a pipeline's state is about: changing one of these makes the saved snapshot plan,
# watermarks and offsets describe another pipeline. (Parallelism, batch and fetch sizes,
# server ids, timeouts and credentials can change between runs.)
STATE_SOURCE_KEYS = (
    "hostname",
    "port",
    "tables",
    "tables.exclude",
    "scan.startup.mode",
    "scan.startup.specific-offset.file",
    "scan.startup.specific-offset.pos",
    "scan.startup.specific-offset.gtid-set",
    "scan.startup.timestamp-millis",
    "scan.incremental.snapshot.chunk.size",
    "scan.incremental.snapshot.chunk.key-column",
)
STATE_SINK_KEYS = ("type", "url", "path")


def _state_identity(source: Mapping[str, Any], sink: SinkConfig) -> dict[str, str]:
    identity = {f"source.{key}": str(source[key]) for key in STATE_SOURCE_KEYS}
    identity.update({f"sink.{key}": str(sink.options[key]) for key in STATE_SINK_KEYS if key in sink.options})
    catalog = sink.options.get("catalog.properties.", {})
    identity.update(
        {f"sink.catalog.properties.{k}": redacted(catalog[k]) for k in ("uri", "warehouse") if k in catalog}
    )
    return identity


def _refuse_writing_into_the_source(source: SourceConfig, sink: SinkConfig) -> None:
    """A JDBC target writes into databases named like the source's: on the source server
    itself that would overwrite the very tables being captured (one server listens on a
    host's port, whatever its dialect)."""
    if sink.jdbc is None:
        return
    url = sink.jdbc.url
    local = {"localhost", "127.0.0.1", "::1"}
    same_host = url.host == source.hostname or {url.host, source.hostname} <= local
    if same_host and url.port == source.port:
        raise DefinitionError(
            f"sink.url: {redacted(sink.options['url'])} is the source server itself; a JDBC target writes into "
            "databases named like the source ones, so it must be another server"
        )


def _source(values: dict[str, Any]) -> SourceConfig:
    include = parse_patterns("source.tables", values["tables"])
    exclude = (
        parse_patterns("source.tables.exclude", values["tables.exclude"]) if values["tables.exclude"].strip() else ()
    )
    startup = StartupOptions(
        mode=values["scan.startup.mode"],
        specific_file=values["scan.startup.specific-offset.file"],
        specific_pos=values["scan.startup.specific-offset.pos"],
        specific_gtid_set=values["scan.startup.specific-offset.gtid-set"],
        timestamp_millis=values["scan.startup.timestamp-millis"],
    )
    if startup.mode == "specific-offset" and not (startup.specific_file or startup.specific_gtid_set):
        raise DefinitionError(
            "source.scan.startup.specific-offset.file: scan.startup.mode specific-offset needs "
            "scan.startup.specific-offset.file (and .pos) or scan.startup.specific-offset.gtid-set"
        )
    if startup.mode == "timestamp" and startup.timestamp_millis <= 0:
        raise DefinitionError(
            "source.scan.startup.timestamp-millis: scan.startup.mode timestamp needs a positive "
            "epoch-milliseconds value"
        )
    online_schema_changes = values["scan.parse.online.schema.changes.enabled"]
    if values["scan.newly-added-table.enabled"] and values["scan.binlog.newly-added-table.enabled"]:
        raise DefinitionError(
            "source.scan.binlog.newly-added-table.enabled: it and scan.newly-added-table.enabled cannot both be true "
            "(Flink CDC refuses them together): the first snapshots added tables, the second reads them from the "
            "binlog alone"
        )
    return SourceConfig(
        hostname=values["hostname"],
        port=values["port"],
        username=values["username"],
        password=values["password"],
        tables=TableSelector(include, exclude, is_tool_table if online_schema_changes else None),
        online_schema_changes=online_schema_changes,
        server_ids=_server_ids(values["server-id"]),
        server_time_zone=values["server-time-zone"],
        startup=startup,
        chunk_size=values["scan.incremental.snapshot.chunk.size"],
        chunk_key_columns=_chunk_key_columns(values["scan.incremental.snapshot.chunk.key-column"]),
        fetch_size=values["scan.snapshot.fetch.size"],
        read_on_driver=values["scan.snapshot.read-on-driver"],
        heartbeat_seconds=parse_duration(values["heartbeat.interval"]),
        connect_timeout_seconds=parse_duration(values["connect.timeout"]),
        connect_max_retries=values["connect.max-retries"],
        reconnect_timeout_seconds=parse_duration(values["connect.reconnect.timeout"]),
        tls=tls_settings("source", values),
    )


def _server_ids(text: str) -> ServerIdRange:
    match = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", text)
    if not match:
        raise DefinitionError(f"source.server-id: '{text}' must be an id such as 5400 or a range such as 5400-5404")
    start = int(match.group(1))
    end = int(match.group(2) or start)
    if start < 1 or end > 4294967295 or end < start:
        raise DefinitionError(f"source.server-id: '{text}' must be ids between 1 and 4294967295, low to high")
    return ServerIdRange(start, end)


def _chunk_key_columns(text: str) -> tuple[tuple[TableSelector, str], ...]:
    """Parses 'db.table:column;db2.t2:column2' (Flink CDC's form)."""
    key = "source.scan.incremental.snapshot.chunk.key-column"
    pairs = []
    for item in (part.strip() for part in text.split(";")):
        if not item:
            continue
        tables, sep, column = item.rpartition(":")
        if not sep or not tables.strip() or not column.strip():
            raise DefinitionError(f"{key}: '{item}' must be 'database.table:column'")
        pairs.append((TableSelector(parse_patterns(key, tables)), column.strip()))
    return tuple(pairs)


def _sink(raw: Any) -> SinkConfig:
    if not isinstance(raw, Mapping) or "type" not in raw:
        raise DefinitionError(f"sink.type: required; one of {', '.join(SINK_TYPES)}")
    sink_type = str(raw["type"])
    if sink_type not in SINK_OPTIONS:
        raise DefinitionError(f"sink.type: '{sink_type}' is not one of {', '.join(SINK_TYPES)}")
    values = resolve("sink", raw, SINK_OPTIONS[sink_type])
    jdbc = JdbcSinkConfig.from_options(values) if sink_type == "jdbc" else None
    lakehouse = LakehouseSinkConfig.from_options(values) if sink_type in ("iceberg", "delta") else None
    return SinkConfig(type=sink_type, name=values["name"], options=values, jdbc=jdbc, lakehouse=lakehouse)


_ENV_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def _substitute(value: Any, env: Mapping[str, str], where: str) -> Any:
    """Replaces ${NAME} with the environment variable NAME; a missing one is an error."""
    if isinstance(value, Mapping):
        return {k: _substitute(v, env, f"{where}.{k}" if where else str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(v, env, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, str):

        def lookup(match: re.Match[str]) -> str:
            name = match.group(1)
            if name not in env:
                raise DefinitionError(f"{where}: environment variable {name} is not set")
            return env[name]

        return _ENV_REFERENCE.sub(lookup, value)
    return value
