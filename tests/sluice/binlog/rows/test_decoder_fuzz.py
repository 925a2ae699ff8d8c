"""The C row loop and its Python reference give equal rows, or both refuse, on any bytes:
rows events of every column type read from a real binlog, then mutated (bytes, bitmaps,
table map metadata), for a minute with a fixed seed. The fuzz runs in a process of its own,
so that a crash or a hang fails the test; every difference it ever found is a case of
test_corrupt_row_images.py (`make fuzz` runs it longer, on a sanitized build)."""

from __future__ import annotations

import pickle
import subprocess
import sys
from pathlib import Path

from tests.harness.decoder_fuzz import capture

ROOT = Path(__file__).parents[4]
SEED, SECONDS = 20261129, 50


def test_the_decoders_agree_on_every_mutation_of_real_rows_events(mariadb, source_db, tmp_path):
    corpus = capture(mariadb, source_db)
    assert len(corpus) > 50 and {len(case.present) for case in corpus} == {1, 2}
    path = tmp_path / "corpus.pickle"
    path.write_bytes(pickle.dumps(corpus))

    fuzzed = subprocess.run(
        [sys.executable, "-m", "tests.harness.decoder_fuzz", str(path), "--seed", str(SEED), "--seconds", str(SECONDS)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=SECONDS + 120,
    )

    assert fuzzed.returncode == 0, f"exit {fuzzed.returncode}:\n{fuzzed.stdout[-6000:]}\n{fuzzed.stderr[-3000:]}"
    assert " 0 differences" in fuzzed.stdout
