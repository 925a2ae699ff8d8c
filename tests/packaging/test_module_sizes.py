"""A module past about 500 lines holds more than one concept: it is split by concept. A
module waiting for its split would be listed with the size it may not pass, and leave the
list once split; none waits now."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MOST = 500
WAITING: dict[str, int] = {}  # module -> the lines it has now, at most


def _sizes() -> dict[str, int]:
    return {
        str(path.relative_to(ROOT)): len(path.read_text().splitlines())
        for tree in ("spark-images", "operator")
        for path in (ROOT / tree).rglob("*.py")
    }


def test_no_module_passes_500_lines():
    sizes = _sizes()
    too_long = {name: lines for name, lines in sizes.items() if lines > WAITING.get(name, MOST)}
    assert not too_long, f"split these by concept (at most {MOST} lines a module): {too_long}"


def test_the_modules_waiting_for_a_split_are_still_there_and_still_long():
    sizes = _sizes()
    done = [name for name in WAITING if sizes.get(name, 0) <= MOST]
    assert not done, f"split already: take them off WAITING: {done}"
