"""The `pipeline:` block's options (option_tables has the source's and the sinks'): the
pipeline's name, parallelism, schema-change behaviour, routing and transform settings."""

from __future__ import annotations

from sluice.pipeline.options import Option, parsed_by, positive
from sluice.route.route_rule import ROUTE_MODES
from sluice.source.time_zone import parse_zone_id
from sluice.transform.udf_entries import user_function_entries

SCHEMA_CHANGE_BEHAVIORS = ("evolve", "try_evolve", "lenient", "ignore", "exception", "manual")

PIPELINE_OPTIONS = [
    Option(
        "name",
        str,
        "sluice-pipeline",
        description="the pipeline's name: the target keeps its records (offsets, state) under it; a new name starts "
        "afresh",
    ),
    Option("parallelism", int, 1, check=positive, description="snapshot chunks read at a time"),
    Option(
        "schema.change.behavior",
        str,
        "lenient",
        choices=SCHEMA_CHANGE_BEHAVIORS,
        description="what a schema change at the source does to the target (Flink CDC's meanings; lenient loses "
        "nothing the target holds)",
    ),
    # Ids of the changes a `manual` pipeline may apply; re-read while a change waits.
    Option(
        "schema-change.approved",
        tuple,
        (),
        description="manual: ids of the schema changes the pipeline may apply (read again while a change waits)",
    ),
    Option(
        "execution.runtime-mode",
        str,
        "STREAMING",
        choices=("STREAMING", "BATCH"),
        description="Flink CDC's runtime mode: BATCH reads the snapshot and stops (with scan.startup.mode snapshot)",
    ),
    Option(
        "user-defined-function",
        list,
        (),
        check=user_function_entries,
        description="Functions transforms call by name: each {name, classpath: module.Class, options} (the module "
        "in the image, beside the definition file or in python-files) or Flink CDC's Python UDF form {name, "
        "python-code, python-executable, python-files}",
    ),
    Option(
        "model",
        list,
        (),
        check=lambda models: (
            (
                "Flink CDC's AI model clients (for AI_COMPLETE and AI_EMBED) call a model endpoint; Sluice has none: "
                "leave the block out, or call the model in a user-defined function"
            )
            if models
            else None
        ),
        description="refused: Flink CDC's AI model clients call a model endpoint, which Sluice has no client for",
    ),
    Option(
        "local-time-zone",
        str,
        "UTC",
        check=parsed_by(parse_zone_id),
        description="the zone of LOCALTIMESTAMP, LOCALTIME, CURRENT_DATE and FROM_UNIXTIME in transforms (Flink "
        "CDC's; Sluice's default is UTC, not the machine's zone)",
    ),
    Option(
        "route-mode",
        str,
        "ALL_MATCH",
        choices=ROUTE_MODES,
        description="which route rules a table takes: every one it matches, or the first",
    ),
]
