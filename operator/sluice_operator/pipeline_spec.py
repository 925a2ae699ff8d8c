"""A CdcPipeline's spec, read: the Flink CDC pipeline definition the Spark job runs (the
same document `sluice run` takes, checked by the same parser), and the Kubernetes-only
fields (Spark resources, Secret references, suspend, approvals).

Passwords never enter the definition: it names environment variables, which the
SparkApplication fills from the referenced Secrets.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sluice.errors import DefinitionError
from sluice.pipeline.definition import PipelineDefinition, build_definition

SOURCE_PASSWORD_ENV = "SLUICE_SOURCE_PASSWORD"
SINK_PASSWORD_ENV = "SLUICE_SINK_PASSWORD"
DEFAULT_IMAGE = "sluice-spark:0.1.0"  # the image spark-images/Dockerfile builds
SPARK_ONLY_SINKS = ("parquet",)  # sinks that write changes with Spark: streaming keeps an executor
# A section's tlsSecretRef is mounted at TLS_MOUNT/<section>: not inside the read-only /etc/sluice.
TLS_MOUNT = "/etc/sluice-tls"
RESERVED_MOUNTS = ("/etc/sluice", TLS_MOUNT, "/opt/spark")  # the definition, certificates, Spark itself


@dataclass(frozen=True)
class TlsSecret:
    """A Secret of certificates mounted for a section's connections: the keys of its CA and,
    for a client certificate, of the certificate and its key (cert-manager's names by
    default: ca.crt, tls.crt, tls.key). The operator never reads it: the kubelet mounts it."""

    name: str
    ca: str = "ca.crt"
    cert: str = ""
    key: str = ""

    @classmethod
    def from_spec(cls, ref: Mapping[str, Any], where: str) -> TlsSecret:
        if not isinstance(ref, Mapping) or not ref.get("name"):
            raise DefinitionError(f"{where}: expected a Secret's name, and the keys of its files (ca, cert, key)")
        secret = cls(str(ref["name"]), str(ref.get("ca", "ca.crt")), str(ref.get("cert", "")), str(ref.get("key", "")))
        if secret.key and not secret.cert:
            raise DefinitionError(f"{where}.key: the key of a client certificate needs {where}.cert")
        return secret

    def options(self, mount: str) -> dict[str, str]:
        """The section's ssl-ca, ssl-cert and ssl-key: the files where the Secret is mounted."""
        named = {"ssl-ca": self.ca, "ssl-cert": self.cert, "ssl-key": self.key}
        return {option: f"{mount}/{key}" for option, key in named.items() if key}


@dataclass(frozen=True)
class PythonFiles:
    """spec.pythonFiles: a ConfigMap or a PersistentVolumeClaim of Python modules and .zip
    archives, mounted read-only at `mount_path` in the driver and the executors, where the
    definition's python-files name them. The operator never reads it: the kubelet mounts it."""

    mount_path: str
    config_map: str = ""
    claim: str = ""

    @classmethod
    def from_spec(cls, entry: Any, where: str) -> PythonFiles:
        if not isinstance(entry, Mapping):
            raise DefinitionError(f"{where}: expected {{mountPath, configMap: {{name}}}} or persistentVolumeClaim")
        path = str(entry.get("mountPath", ""))
        config_map = str((entry.get("configMap") or {}).get("name", ""))
        claim = str((entry.get("persistentVolumeClaim") or {}).get("claimName", ""))
        if not path.startswith("/") or path != posixpath.normpath(path) or path == "/":
            raise DefinitionError(f"{where}.mountPath: '{path}' must be an absolute directory path")
        if any(path == taken or path.startswith(taken + "/") for taken in RESERVED_MOUNTS):
            raise DefinitionError(f"{where}.mountPath: {path} is Sluice's own ({', '.join(RESERVED_MOUNTS)})")
        if bool(config_map) == bool(claim):
            raise DefinitionError(f"{where}: give configMap.name or persistentVolumeClaim.claimName, one of them")
        return cls(path, config_map, claim)

    def volume(self, name: str) -> dict[str, Any]:
        if self.config_map:
            return {"name": name, "configMap": {"name": self.config_map}}
        return {"name": name, "persistentVolumeClaim": {"claimName": self.claim, "readOnly": True}}


def _python_files(entries: Any) -> tuple[PythonFiles, ...]:
    if not isinstance(entries, list):
        raise DefinitionError("spec.pythonFiles: expected a list of {mountPath, configMap or persistentVolumeClaim}")
    found = tuple(PythonFiles.from_spec(entry, f"spec.pythonFiles[{i}]") for i, entry in enumerate(entries))
    paths = [f.mount_path for f in found]
    for path in paths:
        if any(other != path and other.startswith(path + "/") for other in paths) or paths.count(path) > 1:
            raise DefinitionError(f"spec.pythonFiles: {path} is mounted twice, or one mount holds another")
    return found


@dataclass(frozen=True)
class SecretKey:
    name: str
    key: str
    where: str = ""  # the spec field that names it, for messages

    @classmethod
    def from_spec(cls, ref: Mapping[str, Any], where: str) -> SecretKey:
        if not isinstance(ref, Mapping) or not ref.get("name") or not ref.get("key"):
            raise DefinitionError(f"{where}: expected a Secret reference with name and key")
        return cls(str(ref["name"]), str(ref["key"]), where)


@dataclass(frozen=True)
class SparkResources:
    image: str = DEFAULT_IMAGE
    driver_cores: int = 1
    driver_memory: str = "1g"
    executor_cores: int = 1
    executor_memory: str = "1g"
    snapshot_executors: int = 1  # defaults to pipeline.parallelism
    streaming_executors: int = 0  # 0: the driver alone reads the binlog
    # The Spark Operator's own retries of a failed run, before the operator's backoff takes over.
    restart_policy: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class PipelineSpec:
    definition: dict[str, Any]  # the Flink CDC document, with ${...} for the passwords
    secrets: dict[str, SecretKey]  # environment variable -> where its value is
    spark: SparkResources
    suspend: bool = False
    approved: tuple[str, ...] = field(default_factory=tuple)
    tls: tuple[tuple[str, TlsSecret], ...] = ()  # (section, its certificates' Secret), mounted at TLS_MOUNT/section
    python_files: tuple[PythonFiles, ...] = ()  # volumes of the UDFs' python-files

    def check(self) -> PipelineDefinition:
        """Sluice's own checks of the definition (option names, types, values), as
        `sluice run` makes them; DefinitionError names the option."""
        return build_definition(self.definition, dict.fromkeys(self.secrets, "checked-without-the-secret"))


def _secret_env(entries: Any, taken: set[str]) -> dict[str, SecretKey]:
    """spec.secretEnv: environment variables the driver and the executors get from Secrets
    (HMAC_SHA256's keys), by name, never by value."""
    found: dict[str, SecretKey] = {}
    if not isinstance(entries, list):
        raise DefinitionError("spec.secretEnv: expected a list of {name, secretKeyRef}")
    for i, entry in enumerate(entries):
        where = f"spec.secretEnv[{i}]"
        name = str(entry.get("name", "")) if isinstance(entry, Mapping) else ""
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise DefinitionError(f"{where}.name: '{name}' must be an environment variable's name")
        if name in taken or name in found:
            raise DefinitionError(f"{where}.name: {name} is given twice (or is one of Sluice's own)")
        found[name] = SecretKey.from_spec(entry.get("secretKeyRef"), f"{where}.secretKeyRef")
    return found


def read_pipeline(cdc_pipeline: Mapping[str, Any]) -> PipelineSpec | DefinitionError:
    """A CdcPipeline's spec, read once a pass, or what is wrong with it (reconcile reports it)."""
    meta = cdc_pipeline["metadata"]
    try:
        return read_spec(meta["name"], meta["namespace"], cdc_pipeline.get("spec") or {})
    except DefinitionError as exc:
        return exc


def read_spec(name: str, namespace: str, spec: Mapping[str, Any]) -> PipelineSpec:
    """The CdcPipeline `namespace/name`'s spec, read (DefinitionError names what is wrong)."""
    definition: dict[str, Any] = {}
    secrets: dict[str, SecretKey] = {}
    tls: list[tuple[str, TlsSecret]] = []
    for section, variable in (("source", SOURCE_PASSWORD_ENV), ("sink", SINK_PASSWORD_ENV)):
        options = dict(spec.get(section) or {})
        if "password" in options:
            raise DefinitionError(f"spec.{section}.password: give passwordSecretRef (a Secret's name and key) instead")
        ref = options.pop("passwordSecretRef", None)
        if ref is not None:
            secrets[variable] = SecretKey.from_spec(ref, f"spec.{section}.passwordSecretRef")
            options["password"] = f"${{{variable}}}"
        tls_ref = options.pop("tlsSecretRef", None)
        if tls_ref is not None:
            secret = TlsSecret.from_spec(tls_ref, f"spec.{section}.tlsSecretRef")
            tls.append((section, secret))
            for option, path in secret.options(f"{TLS_MOUNT}/{section}").items():
                if option in options:
                    raise DefinitionError(f"spec.{section}.{option}: given by tlsSecretRef already; give one of them")
                options[option] = path
        definition[section] = options
    secrets.update(_secret_env(spec.get("secretEnv") or [], set(secrets)))
    pipeline = dict(spec.get("pipeline") or {})
    # Targets keep their offsets per pipeline name: one per CdcPipeline, unless given.
    pipeline.setdefault("name", f"{namespace}.{name}")
    approved = tuple(str(i) for i in (spec.get("schemaChanges") or {}).get("approved", []))
    if approved:
        pipeline["schema-change.approved"] = list(approved)
    definition["pipeline"] = pipeline
    for section in ("route", "transform"):
        if section in spec:
            definition[section] = spec[section]
    parallelism = int(pipeline.get("parallelism", 1))
    spark = spec.get("spark") or {}
    sink_type = str(definition["sink"].get("type", ""))
    resources = SparkResources(
        image=str(spark.get("image", DEFAULT_IMAGE)),
        driver_cores=int(spark.get("driverCores", 1)),
        driver_memory=str(spark.get("driverMemory", "1g")),
        executor_cores=int(spark.get("executorCores", 1)),
        executor_memory=str(spark.get("executorMemory", "1g")),
        snapshot_executors=int(spark.get("snapshotExecutors", parallelism)),
        streaming_executors=int(spark.get("streamingExecutors", 1 if sink_type in SPARK_ONLY_SINKS else 0)),
        restart_policy=tuple(sorted((str(k), int(v)) for k, v in (spark.get("restartPolicy") or {}).items())),
    )
    return PipelineSpec(
        definition,
        secrets,
        resources,
        bool(spec.get("suspend", False)),
        approved,
        tuple(tls),
        _python_files(spec.get("pythonFiles") or []),
    )
