"""The CdcPipeline CustomResourceDefinition, made from the option tables `sluice run`
checks definitions against: every option of the local YAML is typed the same way in the
CRD, and one cannot drift from the other. crds/ and the chart hold its output
(`python -m sluice_operator.crd > crds/cdcpipelines.sluice.io.yaml`); a test keeps them equal.

CEL rules (x-kubernetes-validations) say what a schema cannot: no literal password
anywhere, and no other source server or sink target under a pipeline that has run.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any

import yaml

from sluice.pipeline.option_tables import SINK_OPTIONS, SOURCE_OPTIONS
from sluice.pipeline.options import Option
from sluice.pipeline.pipeline_options import PIPELINE_OPTIONS
from sluice_operator.crd_status import status_schema
from sluice_operator.owned import GROUP, KIND, VERSION

_SECRET_REF = {
    "type": "object",
    "description": "The Secret key holding the password (passwords never go in the spec).",
    "required": ["name", "key"],
    "properties": {
        "name": {"type": "string", "minLength": 1, "description": "The Secret's name, in the pipeline's namespace."},
        "key": {"type": "string", "minLength": 1, "description": "The key in it."},
    },
}
_TLS_SECRET_REF = {
    "type": "object",
    "description": "A Secret of certificates, mounted into the driver and executors: ssl-ca, ssl-cert and ssl-key "
    "name its files (rotated by updating the Secret).",
    "required": ["name"],
    "properties": {
        "name": {"type": "string", "minLength": 1, "description": "The Secret's name, in the pipeline's namespace."},
        "ca": {"type": "string", "description": "The key of the CA certificate (default ca.crt)."},
        "cert": {"type": "string", "description": "The key of a client certificate to present (e.g. tls.crt)."},
        "key": {"type": "string", "description": "The key of the client certificate's key (e.g. tls.key)."},
    },
}
_NO_LITERAL_PASSWORD = {
    "rule": "!has(self.password)",
    "message": "a password cannot be given in the spec: put it in a Secret and name it in passwordSecretRef",
}
# A pipeline that has run keeps its offsets in its target and its plan in its status: both
# belong to this source server and this target.
_TARGETS = {
    "source": ("hostname", "port"),
    "sink": ("url", "path"),
}


def _user_function_entry() -> dict[str, Any]:
    """A UDF entry: a class (and its options, text or numbers) or Flink CDC's Python UDF form."""
    text = {"type": "string"}
    return {
        "type": "object",
        "required": ["name"],
        "properties": {
            "name": text,
            "classpath": text,
            "options": {"type": "object", "additionalProperties": {"x-kubernetes-int-or-string": True}},
            "python-code": text,
            "python-executable": text,
            "python-files": {"type": "array", "items": text},
        },
    }


def _property(option: Option) -> dict[str, Any]:
    if option.kind is int:
        schema: dict[str, Any] = {"type": "integer"}
    elif option.kind is float:
        schema = {"type": "number"}
    elif option.kind is tuple:
        schema = {"type": "array", "items": {"type": "string"}}
    elif option.kind is bool:
        schema = {"type": "boolean"}
    elif option.kind is list and option.key == "user-defined-function":
        schema = {"type": "array", "items": _user_function_entry()}
    elif option.kind is list:  # pipeline.model: refused as the definition's check refuses it
        schema = {
            "type": "array",
            "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            "x-kubernetes-validations": [{"rule": "size(self) == 0", "message": f"{option.key}: {option.description}"}],
        }
    else:
        schema = {"type": "string"}
    if option.choices:
        schema["enum"] = list(option.choices)
    if option.description:
        schema["description"] = option.description
    return schema


def _options(options: Iterable[Option], extra: dict[str, Any] | None = None) -> dict[str, Any]:
    properties = {o.key: _property(o) for o in options if o.key != "password"}
    properties["password"] = {"type": "string", "description": "Refused: use passwordSecretRef."}
    properties.update(extra or {})
    return properties


def _sink_schema() -> dict[str, Any]:
    merged: dict[str, Option] = {}
    for options in SINK_OPTIONS.values():
        for option in options:
            merged.setdefault(option.key, option)
    families = sorted(key for key, option in merged.items() if option.prefix)
    properties = _options(
        (o for o in merged.values() if not o.prefix),
        {"passwordSecretRef": _SECRET_REF, "tlsSecretRef": _TLS_SECRET_REF},
    )
    properties["type"] = {"type": "string", "enum": sorted(SINK_OPTIONS), "description": "The sink."}
    rules = [_NO_LITERAL_PASSWORD]
    for sink_type, options in SINK_OPTIONS.items():
        required = [o.key for o in options if o.required and o.key != "type"]
        if required:
            has = " && ".join(f"has(self.{key})" for key in required)
            rules.append(
                {
                    "rule": f"self.type != '{sink_type}' || ({has})",
                    "message": f"a {sink_type} sink needs {', '.join(required)}",
                }
            )
    return {
        "type": "object",
        "description": f"Flink CDC sink options ({', '.join(SINK_OPTIONS)}); keys under "
        f"{', '.join(f + '*' for f in families)} pass through to the catalog, the tables or the storage",
        "required": ["type"],
        "properties": properties,
        # Keys of the option families cannot be listed; the pipeline's own check names any
        # other unknown key in the CdcPipeline's conditions.
        "x-kubernetes-preserve-unknown-fields": True,
        "x-kubernetes-validations": rules,
    }


def _cel(name: str) -> str:
    """A property name as CEL rules spell it (Kubernetes escapes `-` and `.`)."""
    return name.replace("_", "__underscores__").replace("-", "__dash__").replace(".", "__dot__")


def _strings(descriptions: dict[str, str]) -> dict[str, Any]:
    return {name: {"type": "string", "description": text} for name, text in descriptions.items()}


def _names_tables(block: str, key: str) -> dict[str, str]:
    return {"rule": f"self.{_cel(key)}.matches('\\\\S')", "message": f"{block}: {key} must name tables"}


def _rules(description: str, required: list[str], properties: dict[str, str], rules: list[dict[str, str]]):  # noqa: ANN202
    """A list of Flink CDC rules (route, transform): objects of string properties."""
    return {
        "type": "array",
        "description": description,
        "items": {
            "type": "object",
            "required": required,
            "properties": _strings(properties),
            "x-kubernetes-validations": rules,
        },
    }


def _route_schema() -> dict[str, Any]:
    return _rules(
        "Flink CDC's route rules: which target table each source table is written into.",
        ["source-table", "sink-table"],
        {
            "source-table": "Source tables, as `tables` names them (regexes over database.table).",
            "sink-table": "The target table: database.table; $1, $2 ... name source-table's groups.",
            "replace-symbol": "Stands for the source table's name in sink-table.",
            "description": "What the rule is for.",
        },
        [
            _names_tables("route", "source-table"),
            {
                "rule": f"self.{_cel('sink-table')}.matches('^[^.\\\\s]+[.][^.\\\\s]+$')",
                "message": "route: sink-table must be database.table",
            },
        ],
    )


def _transform_schema() -> dict[str, Any]:
    schema = _rules(
        "Flink CDC's transform rules: projected, computed and filtered rows per source table.",
        ["source-table"],
        {
            "source-table": "Source tables, as `tables` names them; the first rule a table matches applies.",
            "projection": "The target's columns: *, columns, expressions AS name, metadata columns.",
            "filter": "The rows the target holds: a condition over the columns and the projection's names.",
            "primary-keys": "The target's key columns, separated by commas.",
            "partition-keys": "A lakehouse target's partition columns, separated by commas.",
            "table-options": "key=value pairs for the tables Sluice creates.",
            "table-options.delimiter": "What separates table-options' pairs (default ,).",
            "description": "What the rule is for.",
            "converter-after-transform": "SOFT_DELETE: a row the source deletes stays, marked -D.",
        },
        [_names_tables("transform", "source-table")],
    )
    schema["items"]["properties"]["converter-after-transform"]["enum"] = ["SOFT_DELETE"]
    return schema


def _spec_schema() -> dict[str, Any]:
    source_required = [o.key for o in SOURCE_OPTIONS if o.required]
    pipeline = _options(PIPELINE_OPTIONS)
    del pipeline["password"]
    return {
        "type": "object",
        "description": "A Flink CDC 3 pipeline definition, plus the Kubernetes-only fields.",
        "required": ["source", "sink"],
        "properties": {
            "source": {
                "type": "object",
                "description": "Flink CDC MySQL source options.",
                "required": [*source_required, "passwordSecretRef"],
                "properties": _options(
                    SOURCE_OPTIONS, {"passwordSecretRef": _SECRET_REF, "tlsSecretRef": _TLS_SECRET_REF}
                ),
                "x-kubernetes-validations": [_NO_LITERAL_PASSWORD],
            },
            "sink": _sink_schema(),
            "pipeline": {"type": "object", "description": "Flink CDC pipeline options.", "properties": pipeline},
            "route": _route_schema(),
            "transform": _transform_schema(),
            "spark": {
                "type": "object",
                "description": "How the SparkApplication runs.",
                "properties": {
                    "image": {"type": "string", "description": "The Spark image (spark-images/Dockerfile)."},
                    "driverCores": {"type": "integer", "minimum": 1, "description": "The driver pod's cores."},
                    "driverMemory": {"type": "string", "description": "The driver's memory, as Spark writes it (1g)."},
                    "executorCores": {"type": "integer", "minimum": 1, "description": "Each executor's cores."},
                    "executorMemory": {"type": "string", "description": "Each executor's memory (2g)."},
                    "snapshotExecutors": {
                        "type": "integer",
                        "minimum": 1,
                        "description": "Executors while the snapshot runs (default: pipeline.parallelism).",
                    },
                    "streamingExecutors": {
                        "type": "integer",
                        "minimum": 0,
                        "description": "Executors once the binlog reader takes over (default 0, the driver alone; "
                        "1 for the parquet sink).",
                    },
                    "restartPolicy": {
                        "type": "object",
                        "description": "The Spark Operator's retries of a failed run (its restartPolicy, type "
                        "OnFailure; intervals in seconds), before the operator resubmits with backoff.",
                        "properties": {
                            name: {
                                "type": "integer",
                                "minimum": 0 if name.endswith("Retries") else 1,
                                "description": text,
                            }
                            for name, text in (
                                ("onFailureRetries", "Retries of a driver that failed."),
                                ("onFailureRetryInterval", "Seconds between them (times the attempt)."),
                                ("onSubmissionFailureRetries", "Retries of a submission that failed."),
                                ("onSubmissionFailureRetryInterval", "Seconds between them."),
                            )
                        },
                    },
                },
            },
            "suspend": {"type": "boolean", "description": "Stops the pipeline's Spark job; its state is kept."},
            "pythonFiles": {
                "type": "array",
                "description": "Volumes of Python modules and .zip archives for user-defined functions, mounted "
                "read-only in the driver and the executors where pipeline.user-defined-function's python-files "
                "name them.",
                "items": {
                    "type": "object",
                    "required": ["mountPath"],
                    "properties": {
                        "mountPath": {"type": "string", "description": "Where the files are (an absolute path)."},
                        "configMap": {
                            "type": "object",
                            "required": ["name"],
                            "properties": {"name": {"type": "string"}},
                            "description": "A ConfigMap of the files (a .zip as binaryData).",
                        },
                        "persistentVolumeClaim": {
                            "type": "object",
                            "required": ["claimName"],
                            "properties": {"claimName": {"type": "string"}},
                            "description": "A volume claim holding the files, mounted read-only.",
                        },
                    },
                    "x-kubernetes-validations": [
                        {
                            "rule": "has(self.configMap) != has(self.persistentVolumeClaim)",
                            "message": "pythonFiles: give configMap or persistentVolumeClaim, one of them",
                        }
                    ],
                },
            },
            "secretEnv": {
                "type": "array",
                "description": "Environment variables the driver and the executors get from Secrets: the keys "
                "HMAC_SHA256 names in transforms.",
                "items": {
                    "type": "object",
                    "required": ["name", "secretKeyRef"],
                    "properties": {
                        "name": {"type": "string", "description": "The environment variable's name."},
                        "secretKeyRef": {**_SECRET_REF, "description": "The Secret key holding its value."},
                    },
                },
            },
            "verification": {
                "type": "object",
                "description": "Verifies the target against the source, range by range, while the pipeline streams "
                "(jdbc sinks): at once whenever `id` changes, and every `intervalSeconds`.",
                "properties": {
                    "id": {"type": "string", "description": "Verify now: any new value asks for one verification."},
                    "intervalSeconds": {"type": "integer", "minimum": 60, "description": "Verify this often."},
                    "repair": {"type": "boolean", "description": "Read the ranges that differ again."},
                    "tables": {
                        "type": "array",
                        "items": {"type": "string"},
                        "description": "DB.TABLE names (default: every captured table).",
                    },
                },
            },
            "resnapshots": {
                "type": "array",
                "description": "Tables to read again while the pipeline streams, each request once (by its id).",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["id"],
                "items": {
                    "type": "object",
                    "required": ["id", "tables"],
                    "properties": {
                        "id": {"type": "string", "minLength": 1, "description": "The request's name: done once."},
                        "tables": {
                            "type": "array",
                            "minItems": 1,
                            "items": {"type": "string"},
                            "description": "DB.TABLE names to read again.",
                        },
                        "where": {
                            "type": "string",
                            "description": "Only the rows matching this SQL condition at the source (keyed tables).",
                        },
                    },
                },
            },
            "schemaChanges": {
                "type": "object",
                "description": "Decisions on schema changes the pipeline waits for.",
                "properties": {
                    "approved": {
                        "type": "array",
                        "items": {"type": "string"},
                        "description": "Ids of schema changes a `manual` pipeline may apply (file:position).",
                    }
                },
            },
        },
    }


# The SparkApplication is named NAME-sluice, and the Spark Operator's validating webhook
# (v2.4.0 and later) refuses one that is no DNS-1035 label: at most 63 characters.
_NAME_RULE = {
    "rule": "self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$') && size(self.metadata.name) <= 56",
    "message": "metadata.name must be a DNS-1035 label of at most 56 characters (lower-case letters, digits and '-', "
    "starting with a letter): the SparkApplication NAME-sluice must be one for the Spark Operator",
}


def _target_rules() -> list[dict[str, Any]]:
    started = "has(oldSelf.status) && has(oldSelf.status.phase) && oldSelf.status.phase != 'Pending'"
    rules = []
    for section, keys in _TARGETS.items():
        for key in keys:
            new, old = f"self.spec.{section}.{key}", f"oldSelf.spec.{section}.{key}"
            same = f"has({new}) == has({old}) && (!has({new}) || {new} == {old})"
            rules.append(
                {
                    "rule": f"!({started}) || ({same})",
                    "message": f"spec.{section}.{key} cannot change once the pipeline has run: its progress belongs "
                    "to the old value; create a new CdcPipeline for the new one",
                }
            )
    return rules


def custom_resource_definition() -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"cdcpipelines.{GROUP}"},
        "spec": {
            "group": GROUP,
            "names": {
                "kind": KIND,
                "listKind": f"{KIND}List",
                "plural": "cdcpipelines",
                "singular": "cdcpipeline",
                "shortNames": ["cdcp"],
            },
            "scope": "Namespaced",
            "versions": [
                {
                    "name": VERSION,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": [
                        {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
                        {"name": "Splits", "type": "string", "jsonPath": ".status.snapshot.progress"},
                        {"name": "Lag", "type": "string", "jsonPath": ".status.binlog.lag"},
                        {
                            "name": "Ready",
                            "type": "string",
                            "jsonPath": '.status.conditions[?(@.type=="Ready")].status',
                        },
                        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
                        # -o wide: what `sluice status` shows besides
                        {"name": "Position", "type": "string", "jsonPath": ".status.binlog.position", "priority": 1},
                        {"name": "Rows", "type": "integer", "jsonPath": ".status.snapshot.rows", "priority": 1},
                        {
                            "name": "Schema Change",
                            "type": "string",
                            "jsonPath": ".status.schemaChange.step",
                            "priority": 1,
                        },
                        {"name": "Error", "type": "string", "jsonPath": ".status.driver.error", "priority": 1},
                    ],
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "required": ["spec"],
                            "properties": {
                                "apiVersion": {"type": "string"},
                                "kind": {"type": "string"},
                                "metadata": {"type": "object"},
                                "spec": _spec_schema(),
                                "status": status_schema(),
                            },
                            "x-kubernetes-validations": [_NAME_RULE, *_target_rules()],
                        }
                    },
                }
            ],
        },
    }


def main() -> None:
    sys.stdout.write("# Generated by `python -m sluice_operator.crd` from Sluice's option tables: do not edit.\n")
    sys.stdout.write(yaml.safe_dump(custom_resource_definition(), sort_keys=False, width=120))


if __name__ == "__main__":
    main()
