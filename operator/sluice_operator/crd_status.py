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
            "type": {"type": "string", "enum": CONDITION_TYPES},
            "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
            "reason": {"type": "string"},
            "message": {"type": "string"},
            "observedGeneration": {"type": "integer"},
            "lastTransitionTime": {"type": "string", "format": "date-time"},
        },
    }
    return {
        "type": "object",
        "properties": {
            "phase": {"type": "string", "enum": PHASES},
            "observedGeneration": {"type": "integer"},
            "conditions": {"type": "array", "items": condition},
            "snapshot": {
                "type": "object",
                "properties": {
                    "splitsDone": {"type": "integer"},
                    "splitsTotal": {"type": "integer"},
                    "progress": {"type": "string", "description": "done/total splits"},
                    "rows": {"type": "integer"},
                },
            },
            "binlog": {
                "type": "object",
                "properties": {
                    "position": {"type": "string"},
                    "gtid": {"type": "string"},
                    "lag": {"type": "string"},
                    "lagSeconds": {"type": "number"},
                },
            },
            "schemaChange": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            "schemaChangeHistory": {
                "type": "array",
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
                    "run": {"type": "string"},
                    "error": {"type": "string"},
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
                    "id": {"type": "string"},
                    "startedAt": {"type": "string", "format": "date-time"},
                    "finishedAt": {"type": "string", "format": "date-time"},
                    "rangesTotal": {"type": "integer"},
                    "rangesChecked": {"type": "integer"},
                    "progress": {"type": "string", "description": "ranges checked/total"},
                    "mismatchCount": {"type": "integer"},
                    "mismatches": {"type": "array", "items": {"type": "string"}},
                    "repairedCount": {"type": "integer"},
                    "repaired": {"type": "array", "items": {"type": "string"}},
                    "skipped": {"type": "array", "items": {"type": "string"}},
                    "error": {"type": "string"},
                },
            },
            "resnapshots": {
                "type": "array",
                "description": "The requests of spec.resnapshots the driver took up, and their results.",
                "items": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string"},
                        "state": {"type": "string", "enum": ["Running", "Done", "Failed"]},
                        "startedAt": {"type": "string", "format": "date-time"},
                        "finishedAt": {"type": "string", "format": "date-time"},
                        "rows": {"type": "integer"},
                        "message": {"type": "string"},
                    },
                },
            },
            "retry": {
                "type": "object",
                "description": "Resubmissions of an application that failed for a cause that may heal, with backoff.",
                "properties": {
                    "attempts": {"type": "integer"},
                    "lastError": {"type": "string"},
                    "nextRetryTime": {"type": "string", "format": "date-time"},
                    "failedApplication": {"type": "string", "description": "The uid of the failed SparkApplication."},
                },
            },
            "application": {
                "type": "object",
                "description": "The SparkApplication running the pipeline, as the operator last saw it.",
                "properties": {
                    "name": {"type": "string"},
                    "shape": {"type": "string", "enum": ["snapshot", "streaming"]},
                    "state": {"type": "string"},
                    "attempts": {"type": "integer"},
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
