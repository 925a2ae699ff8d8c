"""The CdcPipeline's status schema: what the operator and the driver write (phase,
conditions, the snapshot enumerator's state, progress), typed so the API server keeps out
what neither writes."""

from __future__ import annotations

from typing import Any

from sluice_operator.conditions import CONDITION_TYPES, PHASES


def status_schema() -> dict[str, Any]:
    condition = {
        "type": "object",
        "required": ["type", "status"],
        "properties": {
            "type": {
                "type": "string",
                "enum": CONDITION_TYPES,
                "description": "Ready, Progressing, Degraded, SchemaChangePending or Verified.",
            },
            "status": {
                "type": "string",
                "enum": ["True", "False", "Unknown"],
                "description": "Whether the condition holds.",
            },
            "reason": {
                "type": "string",
                "description": "Why, in one word (Streaming, Failed, PreflightFailed, Mismatch, ...).",
            },
            "message": {"type": "string", "description": "What happened, naming what to fix."},
            "observedGeneration": {"type": "integer", "description": "The spec's generation the condition is of."},
            "lastTransitionTime": {
                "type": "string",
                "format": "date-time",
                "description": "When the condition last changed status.",
            },
        },
    }
    return {
        "type": "object",
        "properties": {
            "phase": {
                "type": "string",
                "enum": PHASES,
                "description": "Where the pipeline is (the values list them).",
            },
            "observedGeneration": {"type": "integer", "description": "The spec's generation the status is of."},
            "conditions": {
                "type": "array",
                "items": condition,
                "description": "The pipeline's conditions (reason, message, observedGeneration each).",
            },
            "snapshot": {
                "type": "object",
                "description": "The snapshot's progress.",
                "properties": {
                    "splitsDone": {"type": "integer", "description": "Snapshot splits finished."},
                    "splitsTotal": {"type": "integer", "description": "Snapshot splits planned."},
                    "progress": {"type": "string", "description": "done/total splits"},
                    "rows": {"type": "integer", "description": "Rows the snapshot read so far."},
                },
            },
            "binlog": {
                "type": "object",
                "description": "Where the binlog reader is, as the target committed it.",
                "properties": {
                    "position": {
                        "type": "string",
                        "description": "The binlog position the target committed (file:pos).",
                    },
                    "gtid": {"type": "string", "description": "The GTID set executed up to it."},
                    "lag": {"type": "string", "description": "How far the target is behind the source, as text."},
                    "lagSeconds": {"type": "number", "description": "The same in seconds."},
                },
            },
            "schemaChange": {
                "type": "object",
                "x-kubernetes-preserve-unknown-fields": True,
                "description": "The schema change the pipeline is paused at: id, statement, events, step.",
            },
            "schemaChangeHistory": {
                "type": "array",
                "description": "The last 20 schema changes resolved.",
                "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            },
            "state": {
                "type": "object",
                "description": "The pipeline's state (plan, finished splits, binlog split): the job keeps it here.",
                "x-kubernetes-preserve-unknown-fields": True,
            },
            "lastReconciledSpec": {"type": "string", "description": "The spec the operator last acted on (JSON)."},
            "driver": {
                "type": "object",
                "description": "The Spark driver run that owns `state`, and why it stopped if it failed.",
                "properties": {
                    "run": {"type": "string", "description": "The driver run's id."},
                    "error": {"type": "string", "description": "Why the run stopped, as its exit line said."},
                    "retriable": {
                        "type": "boolean",
                        "description": "false: the error is one a user must fix (the definition, a privilege)",
                    },
                    "reason": {
                        "type": "string",
                        "description": "The kind of failure, where the conditions name it (PreflightFailed)",
                    },
                    "adopted": {
                        "type": "string",
                        "description": "The run found no state here and took it over from the target's records",
                    },
                },
            },
            "verification": {
                "type": "object",
                "description": "The last (or running) verification of spec.verification, as the driver left it.",
                "properties": {
                    "id": {"type": "string", "description": "The spec.verification id it is of."},
                    "startedAt": {"type": "string", "format": "date-time", "description": "When it started."},
                    "finishedAt": {"type": "string", "format": "date-time", "description": "When it finished."},
                    "rangesTotal": {"type": "integer", "description": "Ranges it planned."},
                    "rangesChecked": {"type": "integer", "description": "Ranges it compared so far."},
                    "progress": {"type": "string", "description": "ranges checked/total"},
                    "mismatchCount": {"type": "integer", "description": "Ranges that differ."},
                    "mismatches": {
                        "type": "array",
                        "items": {"type": "string"},
                        "description": "The first 20 of them, as verify prints them.",
                    },
                    "repairedCount": {"type": "integer", "description": "Ranges repaired."},
                    "repaired": {"type": "array", "items": {"type": "string"}, "description": "The first 20 of them."},
                    "skipped": {
                        "type": "array",
                        "items": {"type": "string"},
                        "description": "Tables that changed shape while compared: verify them again.",
                    },
                    "error": {"type": "string", "description": "Why it could not run."},
                },
            },
            "resnapshots": {
                "type": "array",
                "description": "The requests of spec.resnapshots the driver took up, and their results.",
                "items": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string", "description": "The request's id."},
                        "state": {
                            "type": "string",
                            "enum": ["Running", "Done", "Failed"],
                            "description": "Where it is.",
                        },
                        "startedAt": {"type": "string", "format": "date-time", "description": "When it started."},
                        "finishedAt": {"type": "string", "format": "date-time", "description": "When it finished."},
                        "rows": {"type": "integer", "description": "Rows read again."},
                        "message": {"type": "string", "description": "Why it failed."},
                    },
                },
            },
            "retry": {
                "type": "object",
                "description": "Resubmissions of an application that failed for a cause that may heal, with backoff.",
                "properties": {
                    "attempts": {"type": "integer", "description": "Resubmissions so far."},
                    "lastError": {"type": "string", "description": "The failure that led to the last one."},
                    "nextRetryTime": {
                        "type": "string",
                        "format": "date-time",
                        "description": "When the next one is due.",
                    },
                    "failedApplication": {"type": "string", "description": "The uid of the failed SparkApplication."},
                },
            },
            "application": {
                "type": "object",
                "description": "The SparkApplication running the pipeline, as the operator last saw it.",
                "properties": {
                    "name": {"type": "string", "description": "The SparkApplication's name."},
                    "shape": {
                        "type": "string",
                        "enum": ["snapshot", "streaming"],
                        "description": "snapshot: executors to read splits; streaming: the binlog reader's size.",
                    },
                    "state": {"type": "string", "description": "Its state as the Spark Operator reports it."},
                    "attempts": {"type": "integer", "description": "Its submission attempts."},
                    "supersededRun": {
                        "type": "string",
                        "description": "The driver run going when the operator last changed the application.",
                    },
                    "adopted": {"type": "string", "description": "The adoption the operator last told in an Event."},
                    "verificationTold": {
                        "type": "string",
                        "description": "The finishedAt of the verification the operator last told in an Event.",
                    },
                    "resnapshotsTold": {
                        "type": "array",
                        "items": {"type": "string"},
                        "description": "The resnapshot requests whose result the operator told in an Event.",
                    },
                },
            },
        },
    }
