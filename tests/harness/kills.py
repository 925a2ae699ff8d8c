"""SIGKILLs at the moments that matter (mid-snapshot, at the switch to the binlog, while
streaming) for the crash-consistency tests, and waits on a run's state between them."""

from __future__ import annotations

import random
import shutil
import signal
import time
from pathlib import Path

from sluice.source.offset import BinlogOffset
from tests.harness.pipelines import kill_pipeline, read_state, start_sluice


def phase(state: dict) -> str:
    if "binlog" not in state:
        return "snapshot" if state.get("snapshot", {}).get("finished") else "starting"
    return "switching" if state["binlog"]["watermarks"] else "streaming"


def wait_for(state_dir: Path, process, predicate, stalled_after: float = 180) -> None:
    """Until `predicate(state)`; a pipeline whose state stops changing for `stalled_after`
    seconds fails the test (a busy one may take longer: a soak's backlog of schema changes
    into the parquet log is a Spark job each)."""
    state, deadline = None, 0.0
    while not predicate(latest := read_state(state_dir)):
        assert process.poll() is None, f"pipeline exited early:\n{process.stderr.read()}"
        if latest != state:
            state, deadline = latest, time.monotonic() + stalled_after
        elif time.monotonic() >= deadline:
            process.send_signal(signal.SIGUSR1)  # its threads' stacks: what it waits on
            time.sleep(1)
            kill_pipeline(process)  # its output ends: what it said is part of the failure
            said = process.stderr.read()[-12000:]
            raise AssertionError(f"stalled for {stalled_after:.0f} s; state: {state}\npipeline said:\n{said}")
        time.sleep(0.02)


class _After:
    """A kill moment `delay` seconds after it is first asked."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.started: float | None = None

    def __call__(self, _state: dict) -> bool:
        if self.started is None:
            self.started = time.monotonic()
        return time.monotonic() - self.started >= self.delay


def _kill_moments(rng: random.Random, kills: int) -> list:
    """Mid-snapshot, at the switch to the binlog, then at random moments of streaming."""
    moments = [
        lambda s: phase(s) == "snapshot",
        lambda s: phase(s) in ("switching", "streaming"),
    ]
    while len(moments) < kills:
        moments.append(_After(rng.uniform(0.5, 4.0)))
    return moments


def run_with_kills(
    name: str, pipeline: Path, state_dir: Path, env: dict, seed: int, log: dict, kills: int, state_losses: float
) -> None:
    """Starts and SIGKILLs the pipeline `kills` times, then leaves a last run going. The state
    directory is now and then deleted after a kill too, as an ephemeral disk loses it: the
    next run adopts the target's records (the jdbc tables', the parquet commit log's)."""
    rng = random.Random(seed)
    phases = []
    try:
        for moment in _kill_moments(rng, kills):
            process = start_sluice(pipeline, state_dir, env)
            wait_for(state_dir, process, moment)
            phases.append(phase(read_state(state_dir)))
            kill_pipeline(process)
            if rng.random() < state_losses:
                shutil.rmtree(state_dir, ignore_errors=True)  # a run killed before it saved made none
                phases.append("state deleted")
        log[name] = (start_sluice(pipeline, state_dir, env), phases)
    except BaseException as exc:  # noqa: BLE001 - reported by the test's thread
        log[name] = exc


def caught_up(state: dict, end: BinlogOffset) -> bool:
    return not BinlogOffset.from_json(state["binlog"]["offset"]).is_before(end)


def stop_caught_up(name: str, state_dir: Path, process, phases: list[str], end: BinlogOffset) -> None:  # noqa: ANN001
    """Once the last run has read the binlog to `end`: SIGTERM, a clean exit, and kills that
    hit the snapshot and the binlog phase both."""
    wait_for(state_dir, process, lambda s: "binlog" in s and caught_up(s, end))
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 0, f"{name}: exit {process.returncode}\n{err}"
    print(f"{name}: killed during {phases}")
    assert "snapshot" in phases and ("switching" in phases or "streaming" in phases), phases
