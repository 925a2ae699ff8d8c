"""Errors a user can act on: each message names the thing to fix."""


class SluiceError(Exception):
    """A failure with a message fit for the CLI's exit line and a CR condition."""

    transient = False  # a cause that may heal by itself: on Kubernetes the pipeline is retried
    reason = ""  # the kind of failure, where a CdcPipeline's conditions name it (else its phase)


class DefinitionError(SluiceError):
    """The pipeline definition is wrong; nothing has run."""


class SourceError(SluiceError):
    """The source database is missing something the pipeline needs."""


class SinkError(SluiceError):
    """The target refused or lost something."""


class SourceUnavailable(SourceError):
    """The source could not be reached, or went away, for longer than the retries allowed."""

    transient = True


class SinkUnavailable(SinkError):
    """The target could not be reached."""

    transient = True


class PositionPurged(SourceError):
    """The binlog after the pipeline's position is gone from the source (a retention shorter
    than an outage). A pipeline that takes a snapshot reads it again into a sink whose chunks
    replace their key ranges; any other fails with this message."""


class SchemaDrift(SourceError):
    """A table's columns changed while the snapshot read it: its splits are read again once
    the binlog reader has brought the target to the new columns."""

    def __init__(self, table_id: str) -> None:
        super().__init__(f"{table_id} changed during the snapshot")
        self.table_id = table_id

    @classmethod
    def of(cls, exc: BaseException) -> str | None:
        """The table of a SchemaDrift, raised here or named in a Spark task's error text."""
        if isinstance(exc, SchemaDrift):
            return exc.table_id
        marker = f"{cls.__module__}.{cls.__name__}: "
        text = str(exc)
        if marker not in text:
            return None
        return text.split(marker, 1)[1].split(" ", 1)[0]
