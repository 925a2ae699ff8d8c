"""A TEST DOUBLE of the Kubeflow Spark Operator (v2.x): it watches SparkApplications in the
Kubernetes API test double and runs each as a local `spark-submit` of the real image entry
point (spark-images/driver.py for local:///opt/sluice/driver.py), with local[N] standing
in for N executors.

It plays one release of the Spark Operator (`SPARK_OPERATOR_VERSIONS`), read from its code
(github.com/kubeflow/spark-operator: internal/webhook, api/v1beta2/defaults.go,
pkg/util/sparkapplication.go) at v2.3.0, v2.4.0 and v2.5.2:
- it serves that release's SparkApplication CRD: the current one from ../shared/reference,
  without `spec.suspend` before v2.4.0 (the API server then prunes the field);
- its defaulting webhook, registered with the API double, sets what SetSparkApplicationDefaults
  sets, only on a new or invalidating application; from v2.4.0 that includes
  `dynamicAllocation.shuffleTrackingEnabled: true`;
- its validating webhook refuses, from v2.4.0, a name that is no DNS-1035 label;
- restartPolicy as ShouldRetry and TimeUntilNextRetryDue do it: OnFailure retries while
  executionAttempts <= onFailureRetries, Always retries every end, the wait is the interval
  times the attempts made (linear).

It reproduces the documented state machine:
- new: SUBMITTED, then RUNNING while the driver runs; COMPLETED on exit 0;
- a driver failure: FAILING, then per restartPolicy (Never/OnFailure/Always with
  onFailureRetries and onFailureRetryInterval, linear backoff interval x attempts)
  PENDING_RERUN and SUBMITTED again, or FAILED with the driver's error message;
- a spec change while it runs: INVALIDATING (the driver is stopped), PENDING_RERUN, SUBMITTED;
- spec.suspend: SUSPENDING, SUSPENDED; unset: RESUMING, SUBMITTED;
- deletion stops the driver.

What a pod gets it gets here too: ConfigMap and Secret volumes become files (mount paths in the
arguments and in the ConfigMaps' files rewritten to them); the driver's declared ports, which a pod has on an IP of its
own, become free local ports, one per application for all its runs (arguments naming a
port rewritten to it; `ports` tells a test where to scrape); env from secretKeyRef is read from the Secret, and the
driver reaches the API double with the token of its `spec.driver.serviceAccount`, so the
Role the operator gave it is what it may do. The double itself acts as the cluster admin
(the real operator's own ClusterRole is not under test). No pods, images or executors.
"""

from __future__ import annotations

import base64
import copy
import functools
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.harness.kube_api_double import Admission, ApiError, RunningApiDouble, Webhook
from tests.harness.services import free_port

GROUP, VERSION, PLURAL = "sparkoperator.k8s.io", "v1beta2", "sparkapplications"
REPO = Path(__file__).parents[2]
CRD = REPO.parent / "shared" / "reference" / "sparkoperator.k8s.io_sparkapplications.yaml"
SPARK_OPERATOR_VERSION = "2.5.2"


class _VolumeRefused(Exception):
    """A volume the double cannot make (a PersistentVolumeClaim): the run fails to submit."""


@dataclass(frozen=True)
class Release:
    suspend: bool  # spec.suspend in the CRD (v2.4.0)
    validates_name: bool  # the validating webhook's DNS-1035 check (v2.4.0)
    defaults_shuffle_tracking: bool  # dynamicAllocation.shuffleTrackingEnabled defaulted (v2.4.0)


SPARK_OPERATOR_VERSIONS = {
    "2.3.0": Release(suspend=False, validates_name=False, defaults_shuffle_tracking=False),
    "2.4.0": Release(suspend=True, validates_name=True, defaults_shuffle_tracking=True),
    "2.5.2": Release(suspend=True, validates_name=True, defaults_shuffle_tracking=True),
}
DNS_1035 = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
IMAGE_FILES = {"local:///opt/sluice/": REPO / "spark-images"}  # what the image holds, here
GRACE_SECONDS = 20.0  # a pod's termination grace period


@dataclass
class _Run:
    uid: str
    spec_hash: str
    state: str = ""
    attempts: int = 0
    process: subprocess.Popen | None = None
    log: Path | None = None
    retry_at: float = 0.0
    error: str = ""
    history: list[str] = field(default_factory=list)  # every state it went through
    times: list[float] = field(default_factory=list)  # when (time.monotonic())
    ports: dict[str, int] = field(default_factory=dict)  # the driver's declared port names -> local ports


class SparkOperatorDouble:
    def __init__(
        self,
        kube_api: RunningApiDouble,
        workdir: Path,
        namespace: str,
        version: str = SPARK_OPERATOR_VERSION,
        poll: float = 0.3,
    ) -> None:
        """Watches SparkApplications in `namespace` (a test's own), as release `version`."""
        api_client = kube_api.client()
        self.kube_api = kube_api
        self.custom = client.CustomObjectsApi(api_client)
        self.core = client.CoreV1Api(api_client)
        self.extensions = client.ApiextensionsV1Api(api_client)
        self.release = SPARK_OPERATOR_VERSIONS[version]
        self.workdir = workdir
        self.namespace = namespace
        self.poll = poll
        self.runs: dict[tuple[str, str], _Run] = {}
        self.extra_env: dict[str, str] = {}  # for the next drivers (a failpoint, say)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="spark-operator-double", daemon=True)

    def start(self) -> SparkOperatorDouble:
        self.install_crd()
        self.kube_api.double.webhooks[:] = [
            h for h in self.kube_api.double.webhooks if h.kind != "SparkApplication"
        ] + self._webhooks
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)
        for run in self.runs.values():
            self._kill(run, signal.SIGKILL)

    # -- what the release installs -------------------------------------------------------------

    def install_crd(self) -> None:
        """This release's CRD, as `helm upgrade` of its chart would leave it."""
        crd = copy.deepcopy(_reference_crd())
        if not self.release.suspend:
            for version in crd["spec"]["versions"]:
                version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"].pop("suspend", None)
                columns = version.get("additionalPrinterColumns") or []
                version["additionalPrinterColumns"] = [c for c in columns if c["jsonPath"] != ".spec.suspend"]
        name = crd["metadata"]["name"]  # read and written raw: the client's models of 1.4 MB take seconds
        current = json.loads(self.extensions.read_custom_resource_definition(name, _preload_content=False).data)
        crd["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
        self.extensions.replace_custom_resource_definition(name, crd, _preload_content=False)

    @property
    def _webhooks(self) -> list[Webhook]:
        return [
            Webhook("mutate-sparkapplication.sparkoperator.k8s.io", "SparkApplication", True, self._default),
            Webhook("validate-sparkapplication.sparkoperator.k8s.io", "SparkApplication", False, self._validate),
        ]

    def _default(self, review: Admission) -> dict[str, Any]:
        """SetSparkApplicationDefaults, for a new or invalidating application only."""
        app = review.obj
        state = ((app.get("status") or {}).get("applicationState") or {}).get("state", "")
        if state not in ("", "INVALIDATING"):
            return app
        spec = app.setdefault("spec", {})
        spec.setdefault("type", "Scala")
        spec.setdefault("mode", "cluster")
        policy = spec.setdefault("restartPolicy", {})
        policy.setdefault("type", "Never")
        if policy["type"] != "Never":
            policy.setdefault("onFailureRetryInterval", 5)
            policy.setdefault("onSubmissionFailureRetryInterval", 5)
        conf = spec.get("sparkConf") or {}
        for role in ("driver", "executor"):
            pod = spec.setdefault(role, {})
            if f"spark.{role}.cores" not in conf:
                pod.setdefault("cores", 1)
            if f"spark.{role}.memory" not in conf:
                pod.setdefault("memory", "1g")
        allocation = spec.get("dynamicAllocation")
        dynamic = allocation["enabled"] if allocation else conf.get("spark.dynamicallocation.enabled") == "true"
        if not dynamic and not conf.get("spark.executor.instances"):
            spec["executor"].setdefault("instances", 1)
        if dynamic and allocation is not None and self.release.defaults_shuffle_tracking:
            allocation.setdefault("shuffleTrackingEnabled", True)
        return app

    def _validate(self, review: Admission) -> dict[str, Any]:
        """The validating webhook: a name fit for the driver's Service (v2.4.0), the spec's rules."""
        app, name = review.obj, review.obj["metadata"]["name"]
        if self.release.validates_name:
            problems = []
            if len(name) > 63:
                problems.append("must be no more than 63 characters")
            if not DNS_1035.fullmatch(name):
                problems.append(
                    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
                    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
                    "regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
                )
            if problems:
                raise ApiError(403, "Forbidden", f'invalid SparkApplication name "{name}": ' + ", ".join(problems))
        spec = app.get("spec") or {}
        if spec.get("nodeSelector") and (
            (spec.get("driver") or {}).get("nodeSelector") or (spec.get("executor") or {}).get("nodeSelector")
        ):
            raise ApiError(
                403, "Forbidden", "node selector cannot be defined at both SparkApplication and Driver/Executor"
            )
        return app

    def driver_pid(self, namespace: str, name: str) -> int | None:
        run = self.runs.get((namespace, name))
        return run.process.pid if run and run.process and run.process.poll() is None else None

    # -- the control loop --------------------------------------------------------------------

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self._pass()
            except Exception as exc:  # noqa: BLE001 - the API double may be busy; go on
                print(f"spark-operator-double: {type(exc).__name__}: {exc}", file=sys.stderr)
            self._stop.wait(self.poll)

    def _pass(self) -> None:
        listed = self.custom.list_namespaced_custom_object(GROUP, VERSION, self.namespace, PLURAL)["items"]
        seen = set()
        for app in listed:
            key = (app["metadata"]["namespace"], app["metadata"]["name"])
            seen.add(key)
            self._step(key, app)
        for key in set(self.runs) - seen:  # deleted: its driver pod goes
            self._kill(self.runs.pop(key), signal.SIGKILL)
            with (self.workdir / "spark-operator-double.log").open("a") as log:
                log.write(f"{time.strftime('%H:%M:%S')} {key[0]}/{key[1]}: deleted, driver stopped\n")

    def _step(self, key: tuple[str, str], app: dict[str, Any]) -> None:
        spec = app["spec"]
        spec_hash = hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()
        run = self.runs.get(key)
        if run is None or run.uid != app["metadata"]["uid"]:
            if run is not None:
                self._kill(run, signal.SIGKILL)
            run = self.runs[key] = _Run(app["metadata"]["uid"], spec_hash)
        if spec.get("suspend"):
            if run.state not in ("SUSPENDING", "SUSPENDED"):
                self._set(key, run, "SUSPENDING")
                self._kill(run, signal.SIGTERM)
                self._set(key, run, "SUSPENDED")
            return
        if run.state in ("SUSPENDED", "SUSPENDING"):
            self._set(key, run, "RESUMING")
            run.spec_hash, run.attempts = spec_hash, 0
            self._submit(key, run, app)
            return
        if run.spec_hash != spec_hash and run.state not in ("", "COMPLETED", "FAILED"):
            self._set(key, run, "INVALIDATING")
            self._kill(run, signal.SIGTERM)
            run.spec_hash, run.attempts = spec_hash, 0
            self._set(key, run, "PENDING_RERUN")
            self._submit(key, run, app)
            return
        if run.spec_hash != spec_hash:  # a finished application whose spec changed runs again
            run.spec_hash, run.attempts = spec_hash, 0
            self._submit(key, run, app)
            return
        if run.state == "":
            self._submit(key, run, app)
        elif run.state in ("SUBMITTED", "RUNNING"):
            self._watch_driver(key, run, app)
        elif run.state == "FAILING" and time.monotonic() >= run.retry_at:
            self._set(key, run, "PENDING_RERUN")
            self._submit(key, run, app)

    def _watch_driver(self, key: tuple[str, str], run: _Run, app: dict[str, Any]) -> None:
        assert run.process is not None
        code = run.process.poll()
        if code is None:
            if run.state != "RUNNING":
                self._set(key, run, "RUNNING")
            return
        policy = app["spec"].get("restartPolicy") or {"type": "Never"}
        if code == 0:
            if policy.get("type") == "Always":  # SUCCEEDING is retried too
                run.retry_at = time.monotonic() + float(policy.get("onFailureRetryInterval", 5)) * run.attempts
                self._set(key, run, "FAILING")
                return
            self._set(key, run, "COMPLETED")
            return
        run.error = _driver_error(run.log, code)
        retries = policy.get("onFailureRetries")
        if policy.get("type") == "Always" or (
            policy.get("type") == "OnFailure" and retries is not None and run.attempts <= int(retries)
        ):
            interval = float(policy["onFailureRetryInterval"])  # the defaulting webhook set it
            run.retry_at = time.monotonic() + interval * run.attempts  # linear: interval x attempts
            self._set(key, run, "FAILING")
        else:
            self._set(key, run, "FAILED")

    # -- a driver ----------------------------------------------------------------------------

    def _submit(self, key: tuple[str, str], run: _Run, app: dict[str, Any]) -> None:
        namespace = key[0]
        spec = app["spec"]
        run.attempts += 1
        directory = self.workdir / f"{namespace}-{key[1]}" / f"attempt-{run.attempts}-{int(time.time() * 1000)}"
        directory.mkdir(parents=True)
        try:
            mounts = self._volumes(namespace, spec, directory)
        except _VolumeRefused as exc:
            run.error = str(exc)
            self._set(key, run, "SUBMISSION_FAILED")
            return
        account = spec.get("driver", {}).get("serviceAccount") or "default"
        kubeconfig = self.kube_api.service_account_kubeconfig(namespace, account, directory)
        env = {**os.environ, **self.extra_env, "KUBECONFIG": str(kubeconfig), "PYSPARK_PYTHON": sys.executable}
        env["PYSPARK_DRIVER_PYTHON"] = sys.executable
        env.pop("KUBERNETES_SERVICE_HOST", None)
        for variable in spec.get("driver", {}).get("env", []):
            env[variable["name"]] = self._env_value(namespace, variable)
        executor = spec.get("executor", {})
        instances = executor.get("instances") or (spec.get("dynamicAllocation") or {}).get("maxExecutors", 1) or 1
        cores = int(instances) * int(executor.get("cores", 1))
        command = [str(Path(sys.executable).with_name("spark-submit")), "--master", f"local[{cores}]"]
        command += ["--name", key[1]]
        for name, value in (spec.get("sparkConf") or {}).items():
            command += ["--conf", f"{name}={value}"]
        command.append(_local_path(spec["mainApplicationFile"]))
        for port in spec.get("driver", {}).get("ports", []):
            run.ports.setdefault(port["name"], free_port())
        local_ports = {str(p["containerPort"]): str(run.ports[p["name"]]) for p in spec["driver"].get("ports", [])}
        command += [local_ports.get(arg, _mounted(arg, mounts)) for arg in spec.get("arguments", [])]
        run.log = directory / "driver.log"
        with run.log.open("w") as out:
            run.process = subprocess.Popen(
                command, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=directory, start_new_session=True
            )
        run.error = ""
        self._set(key, run, "SUBMITTED")

    def _volumes(self, namespace: str, spec: dict[str, Any], directory: Path) -> dict[str, Path]:
        """ConfigMap and Secret volumes as directories, as the kubelet makes them; mount path ->
        local directory. A mount path named in a ConfigMap's files (a definition naming its
        certificates) is rewritten to the local directory, as arguments are."""
        mounts = {m["name"]: m["mountPath"] for m in spec.get("driver", {}).get("volumeMounts", [])}
        local = {volume["name"]: directory / "volumes" / volume["name"] for volume in spec.get("volumes", [])}
        for volume in spec.get("volumes", []):
            target = local[volume["name"]]
            target.mkdir(parents=True)
            if "secret" in volume:
                secret = self.core.read_namespaced_secret(volume["secret"]["secretName"], namespace)
                for file, value in (secret.data or {}).items():
                    (target / file).write_bytes(base64.b64decode(value))
            elif "configMap" in volume:
                config_map = self.core.read_namespaced_config_map(volume["configMap"]["name"], namespace)
                for file, text in (config_map.data or {}).items():
                    for name, path in mounts.items():  # a path, not a longer path it begins
                        if name != volume["name"]:
                            text = re.sub(re.escape(path) + r"(?![\w.-])", str(local[name]), text)
                    (target / file).write_text(text)
                for file, value in (config_map.binary_data or {}).items():
                    (target / file).write_bytes(base64.b64decode(value))
            else:  # a volume this double cannot make: refused, not mounted empty
                raise _VolumeRefused(
                    f"volume {volume['name']}: the Spark Operator double mounts ConfigMaps and Secrets"
                )
        return {path: local[name] for name, path in mounts.items()}

    def _env_value(self, namespace: str, variable: dict[str, Any]) -> str:
        if "value" in variable:
            return str(variable["value"])
        ref = variable["valueFrom"]["secretKeyRef"]
        secret = self.core.read_namespaced_secret(ref["name"], namespace)
        return base64.b64decode((secret.data or {})[ref["key"]]).decode()

    def _kill(self, run: _Run, sig: int) -> None:
        """Stops the driver as a pod deletion does: SIGTERM, then SIGKILL after the grace period."""
        process = run.process
        if process is None or process.poll() is not None:
            return
        try:
            os.killpg(process.pid, sig)
            process.wait(GRACE_SECONDS if sig != signal.SIGKILL else 10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)
        except ProcessLookupError:
            pass

    def _set(self, key: tuple[str, str], run: _Run, state: str) -> None:
        run.state = state
        run.history.append(state)
        run.times.append(time.monotonic())
        self.workdir.mkdir(parents=True, exist_ok=True)
        with (self.workdir / "spark-operator-double.log").open("a") as log:
            log.write(f"{time.strftime('%H:%M:%S')} {key[0]}/{key[1]} {run.uid[:8]} attempt {run.attempts}: {state}\n")
        status: dict[str, Any] = {
            "applicationState": {"state": state, **({"errorMessage": run.error} if run.error else {})},
            "executionAttempts": run.attempts,
            "submissionAttempts": run.attempts,
            "driverInfo": {"podName": f"{key[1]}-driver"},
        }
        try:
            self.custom.patch_namespaced_custom_object_status(
                GROUP, VERSION, key[0], PLURAL, key[1], {"status": status}
            )
        except ApiException as exc:
            if exc.status != 404:
                raise


@functools.cache
def _reference_crd() -> dict[str, Any]:
    """The current CRD, parsed once (1.4 MB of YAML: seconds with the pure-Python parser)."""
    return yaml.load(CRD.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def _local_path(uri: str) -> str:
    for prefix, directory in IMAGE_FILES.items():
        if uri.startswith(prefix):
            return str(directory / uri[len(prefix) :])
    raise ValueError(f"mainApplicationFile {uri}: not a file of the image")


def _mounted(argument: str, mounts: dict[str, Path]) -> str:
    for path, directory in mounts.items():
        if argument.startswith(path + "/"):
            return str(directory) + argument[len(path) :]
    return argument


def _driver_error(log: Path | None, code: int) -> str:
    """The driver's own last error line, as the real operator's errorMessage carries the
    driver container's termination message."""
    lines = log.read_text(errors="replace").splitlines() if log and log.exists() else []
    errors = [line for line in lines if line.startswith("sluice:")]
    return errors[-1] if errors else f"driver container failed with ExitCode: {code}, Reason: Error"
