"""Where a jdbc target is and how to reach it: its URL, user and dialect, the rules for
values it cannot hold, and the run's epoch. Picklable: writers on Spark's executors carry it."""

from __future__ import annotations

from typing import Any

from sluice.errors import SinkUnavailable
from sluice.pipeline.jdbc_url import JdbcUrl
from sluice.pipeline.sink_configs import JdbcSinkConfig
from sluice.sink.jdbc.dialect import JdbcDialect
from sluice.sink.jdbc.dialects import dialect_of
from sluice.sink.target_values import TargetValues


class JdbcTarget:
    """Connection details; picklable, and the password stays out of repr."""

    def __init__(self, config: JdbcSinkConfig, pipeline: str) -> None:
        self.url: JdbcUrl = config.url
        self.username = config.username
        self._password = config.password
        self.pipeline = pipeline
        self.batch_size = config.batch_size
        self.tls = config.tls
        mysql = self.dialect.holds_mysql_values
        self.values = TargetValues(
            None if mysql else config.nul_replacement, None if mysql else config.zero_date, not mysql
        )
        self.epoch: int | None = None  # taken by JdbcSink.prepare, before writers ship

    def __repr__(self) -> str:
        return f"JdbcTarget({self.url.dialect}://{self.url.host}:{self.url.port}/{self.url.database})"

    @property
    def dialect(self) -> JdbcDialect:
        return dialect_of(self.url.dialect)

    def connect(self) -> Any:
        try:
            return self.dialect.connect(self.url, self.username, self._password, self.tls)
        except Exception as exc:  # driver errors differ per dialect
            raise SinkUnavailable(f"sink {self!r}: cannot connect: {first_line(exc)}") from exc


def first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]
