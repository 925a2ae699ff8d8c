"""Where a benchmark run's CPU time goes: the machine's busy time over the run, and the share
of it each server's process tree took (the rest is the run's own commands: Sluice's Python
and JVM, or the pipe's clients). On a small machine this tells whether a figure is bound by
the cores: two lanes cannot beat one when one already keeps every core busy.
"""

from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

_TICKS = os.sysconf("SC_CLK_TCK")


def _stat_fields(pid: int) -> list[str]:
    text = Path(f"/proc/{pid}/stat").read_text()
    return text[text.rindex(")") + 2 :].split()  # after "pid (comm) ": state is field 0


def _children() -> dict[int, list[int]]:
    by_parent: dict[int, list[int]] = defaultdict(list)
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                by_parent[int(_stat_fields(int(entry))[1])].append(int(entry))
            except (FileNotFoundError, ProcessLookupError, ValueError):
                continue  # ended while we looked
    return by_parent


def _tree_seconds(pid: int, children: dict[int, list[int]]) -> float:
    """CPU time of a process tree so far: a child that ended was folded into its parent's
    children times when reaped, so the difference of two readings counts it too."""
    try:
        utime, stime, cutime, cstime = (int(v) for v in _stat_fields(pid)[11:15])
    except (FileNotFoundError, ProcessLookupError):
        return 0.0
    own = (utime + stime + cutime + cstime) / _TICKS
    return own + sum(_tree_seconds(child, children) for child in children.get(pid, ()))


def _machine_busy_seconds() -> float:
    user, nice, system, _idle, _iowait, irq, softirq, steal = (
        int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]
    )
    return (user + nice + system + irq + softirq + steal) / _TICKS


@dataclass
class CpuReading:
    busy: float
    trees: dict[str, float]


def servers(mariadb, postgresql, target=None) -> dict[str, int]:  # noqa: ANN001 - the harness's servers
    """The root process of each server in the run: their trees' CPU time is told apart."""
    postmaster = int((postgresql.datadir / "postmaster.pid").read_text().split()[0])
    named = {"source MariaDB": mariadb.process.pid, "PostgreSQL": postmaster}
    return named if target is None else {**named, "target MariaDB": target.process.pid}


def read_cpu(servers: dict[str, int]) -> CpuReading:
    """Now: the machine's busy seconds and each named server tree's (by its root pid)."""
    children = _children()
    return CpuReading(_machine_busy_seconds(), {name: _tree_seconds(pid, children) for name, pid in servers.items()})


def cpu_summary(before: CpuReading, after: CpuReading, wall_seconds: float) -> str:
    """'12.6 CPU-s = 1.80 of 2 cores: MariaDB 5.1 s, PostgreSQL 4.0 s, the rest 3.5 s'."""
    busy = after.busy - before.busy
    shares = {name: after.trees[name] - before.trees[name] for name in after.trees}
    rest = max(0.0, busy - sum(shares.values()))
    parts = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in shares.items())
    return (
        f"{busy:.1f} CPU-s = {busy / wall_seconds:.2f} of {os.cpu_count()} cores busy: {parts}, "
        f"the run's own processes {rest:.1f} s"
    )
