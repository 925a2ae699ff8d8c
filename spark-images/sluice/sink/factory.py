"""Builds the sink a definition names."""

from __future__ import annotations

from sluice.pipeline.definition import PipelineDefinition
from sluice.sink.base import Sink
from sluice.source.time_zone import parse_zone_id


def create_sink(definition: PipelineDefinition) -> Sink:
    """The definition's sink; behind its route and transform where it has them."""
    sink = _sink(definition)
    if not definition.routing.active:
        return sink
    from sluice.sink.routed import RoutedSink

    return RoutedSink(sink, definition.routing)


def _sink(definition: PipelineDefinition) -> Sink:
    sink = definition.sink
    if sink.type == "values":
        from sluice.sink.values_sink import ValuesSink

        return ValuesSink(parse_zone_id(definition.source.server_time_zone))
    if sink.type == "jdbc":
        from sluice.sink.jdbc.sink import JdbcSink

        assert sink.jdbc is not None
        return JdbcSink(sink.jdbc, definition.name)
    if sink.type == "parquet":
        from sluice.sink.parquet import ParquetSink

        return ParquetSink(sink.options)
    if sink.type == "iceberg":
        from sluice.sink.lakehouse.iceberg import IcebergTables, with_secret
        from sluice.sink.lakehouse.sink import LakehouseSink

        properties = with_secret(sink.options["catalog.properties."], sink.options["password"])
        catalog = IcebergTables(sink.options["catalog.name"], properties, sink.options["table.properties."])
        assert sink.lakehouse is not None
        catalog.partition_keys = dict(sink.lakehouse.partition_keys)
        return LakehouseSink(sink.lakehouse, definition.name, catalog)
    if sink.type == "delta":
        from sluice.sink.lakehouse.delta import DeltaTables
        from sluice.sink.lakehouse.sink import LakehouseSink

        tables = DeltaTables(sink.options["path"], sink.options["storage.options."], sink.options["table.properties."])
        assert sink.lakehouse is not None
        tables.partition_keys = dict(sink.lakehouse.partition_keys)
        return LakehouseSink(sink.lakehouse, definition.name, tables)
    raise AssertionError(f"sink.type {sink.type} passed validation but has no sink")
