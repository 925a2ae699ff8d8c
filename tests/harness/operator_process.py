"""The Sluice operator as a real process (`python -m sluice_operator`) against the
Kubernetes API test double, restartable like a pod."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Sequence
from pathlib import Path

from tests.harness.services import free_port


class OperatorProcess:
    def __init__(
        self,
        kubeconfig: Path,
        log: Path,
        resync_seconds: float = 2.0,
        args: Sequence[str] = (),
        lease: tuple[str, str] = ("sluice-system", "sluice"),
    ) -> None:
        """`args`: the container's, as the chart's Deployment passes them; `lease`: the
        namespace and name of the leader Lease its replicas share."""
        self.kubeconfig, self.log, self.resync, self.args = kubeconfig, log, resync_seconds, list(args)
        self.lease = lease
        self.name = f"sluice-operator-{uuid.uuid4().hex[:6]}"  # the pod's name: its identity in the Lease
        self.port = free_port()
        self.process: subprocess.Popen | None = None

    def start(self) -> OperatorProcess:
        env = {
            **os.environ,
            "KUBECONFIG": str(self.kubeconfig),
            "SLUICE_OPERATOR_RESYNC_SECONDS": str(self.resync),
            "SLUICE_OPERATOR_HTTP_PORT": str(self.port),
            "POD_NAMESPACE": self.lease[0],
            "SLUICE_OPERATOR_LEASE": self.lease[1],
            "POD_NAME": self.name,
        }
        with self.log.open("a") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "sluice_operator", "-v", *self.args],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the operator exited: {self.log.read_text()[-3000:]}")
            if self.get("/readyz")[0] == 200:
                return self
            time.sleep(0.3)
        raise RuntimeError(f"the operator did not get ready: {self.log.read_text()[-3000:]}")

    def get(self, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=5) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, ""
        except OSError:
            return 0, ""

    def kill(self) -> None:
        """SIGKILL, as a node loss does: no cleanup."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.kill()
