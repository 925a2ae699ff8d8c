"""What lakehouse maintenance did in this process, by table: read by the run's metrics at
each scrape (runtime/pipeline_metrics), which a pipeline into any target serves; so this
module imports nothing of the formats."""

from __future__ import annotations

import collections

# By (table id, what): rounds, compacted (data files rewritten), deleted (files no kept
# snapshot or version reads), seconds.
maintained: collections.Counter[tuple[str, str]] = collections.Counter()


def count_maintenance(table_id: str, compacted: int, deleted: int, seconds: float) -> None:
    maintained[(table_id, "rounds")] += 1
    maintained[(table_id, "compacted")] += compacted
    maintained[(table_id, "deleted")] += deleted
    maintained[(table_id, "seconds")] += seconds
