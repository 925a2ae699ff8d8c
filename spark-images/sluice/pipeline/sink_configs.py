"""The sink block's options, typed once where the definition checks them (a URL parsed, a
duration in seconds, partition keys as fields): the sinks take these, not option text."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sluice.pipeline.jdbc_url import JdbcUrl, parse_jdbc_url
from sluice.pipeline.options import parse_duration
from sluice.pipeline.partition_key import PartitionField, parse_partition_keys
from sluice.source.tls import NO_SETTINGS, TlsSettings, tls_settings


@dataclass(frozen=True)
class JdbcSinkConfig:
    url: JdbcUrl
    username: str
    password: str = field(repr=False)
    batch_size: int = 5000
    nul_replacement: str = ""
    zero_date: str = ""
    tls: TlsSettings = NO_SETTINGS

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> JdbcSinkConfig:
        """From the sink block's options as the definition resolved them."""
        return cls(
            parse_jdbc_url(options["url"]),
            options["username"],
            options["password"],
            options.get("sink.batch-size", 5000),
            options.get("sink.nul-replacement", ""),
            options.get("sink.zero-date", ""),
            tls_settings("sink", options),
        )


@dataclass(frozen=True)
class Maintenance:
    """`sink.maintenance.*`: how often each table is compacted and expired, and what for."""

    interval: float  # seconds; 0: never
    retention: float  # seconds a snapshot or version stays readable after a newer one
    small_file_size: int  # bytes: a file smaller than this is compacted
    min_small_files: int  # a table is compacted once it has this many
    delete_ratio: float = 0.3  # a data file is rewritten once its deletes remove this share of its rows

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> Maintenance:
        return cls(
            parse_duration(options["sink.maintenance.interval"]),
            parse_duration(options["sink.maintenance.retention"]),
            int(options["sink.maintenance.small-file-size"]),
            int(options["sink.maintenance.min-small-files"]),
            float(options["sink.maintenance.delete-ratio"]),
        )


@dataclass(frozen=True)
class LakehouseSinkConfig:
    """An iceberg or delta sink's options the sink itself reads (the catalog's and storage's
    are the table format's)."""

    commit_interval: float  # seconds a batch may wait: sink.commit.interval
    maintenance: Maintenance
    partition_keys: dict[str, tuple[PartitionField, ...]]  # by table id: partition.key
    zero_date: str = ""

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> LakehouseSinkConfig:
        return cls(
            parse_duration(options["sink.commit.interval"]),
            Maintenance.from_options(options),
            parse_partition_keys(options["partition.key"]),
            options.get("sink.zero-date", ""),
        )
