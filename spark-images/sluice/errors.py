"""Errors a user can act on: each message names the thing to fix."""


class SluiceError(Exception):
    """A failure with a message fit for the CLI's exit line and a CR condition."""


class DefinitionError(SluiceError):
    """The pipeline definition is wrong; nothing has run."""


class SourceError(SluiceError):
    """The source database is missing something the pipeline needs."""


class SinkError(SluiceError):
    """The target refused or lost something."""
