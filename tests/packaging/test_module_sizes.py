"""A module past about 500 lines holds more than one concept: it is split by concept."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MOST = 500


def test_no_module_passes_500_lines():
    """Python and C alike."""
    sizes = {
        str(path.relative_to(ROOT)): len(path.read_text().splitlines())
        for tree in ("spark-images", "operator")
        for suffix in ("*.py", "*.c", "*.h")
        for path in (ROOT / tree).rglob(suffix)
    }
    too_long = {name: lines for name, lines in sizes.items() if lines > MOST}
    assert not too_long, f"split these by concept (at most {MOST} lines a module): {too_long}"
