"""Errors a user can act on: each message names the thing to fix, and each kind has an
entry in the troubleshooting page (docs/troubleshooting.md) that the CLI links to."""

TROUBLESHOOTING = "docs/troubleshooting.md"


class SluiceError(Exception):
    """A failure with a message fit for the CLI's exit line and a CR condition."""

    transient = False  # a cause that may heal by itself: on Kubernetes the pipeline is retried
    reason = ""  # the kind of failure, where a CdcPipeline's conditions name it (else its phase)
    troubleshooting = ""  # its entry's anchor in TROUBLESHOOTING (none: the page)

    @property
    def see(self) -> str:
        """Where its troubleshooting entry is."""
        return f"{TROUBLESHOOTING}#{self.troubleshooting}" if self.troubleshooting else TROUBLESHOOTING


class DefinitionError(SluiceError):
    """The pipeline definition is wrong; nothing has run."""

    troubleshooting = "definition-error"


class SourceError(SluiceError):
    """The source database is missing something the pipeline needs."""

    troubleshooting = "source-error"


class SinkError(SluiceError):
    """The target refused or lost something."""

    troubleshooting = "sink-error"


class SourceUnavailable(SourceError):
    """The source could not be reached, or went away, for longer than the retries allowed."""

    troubleshooting = "source-unavailable"

    transient = True


class SinkUnavailable(SinkError):
    """The target could not be reached."""

    troubleshooting = "sink-unavailable"

    transient = True


class PositionPurged(SourceError):
    """The binlog after the pipeline's position is gone from the source (a retention shorter
    than an outage). A pipeline that takes a snapshot reads it again into a sink whose chunks
    replace their key ranges; any other fails with this message."""

    troubleshooting = "position-purged"


class SchemaDrift(SourceError):
    """A table's columns changed while the snapshot read it: its splits are read again once
    the binlog reader has brought the target to the new columns."""

    troubleshooting = "schema-drift"

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
