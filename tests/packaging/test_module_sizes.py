"""A module past about 500 lines holds more than one concept: it is split by concept."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
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


BINLOG_PATH = [
    *(ROOT / "spark-images" / "sluice" / "binlog").rglob("*.py"),
    *(ROOT / "spark-images" / "sluice" / "binlog").rglob("*.c"),
    *(
        ROOT / "spark-images" / "sluice" / "runtime" / name
        for name in (
            "binlog_step.py",
            "binlog_streaming.py",
            "commit_pipeline.py",
            "reader_process.py",
            "reader_supervisor.py",
        )
    ),
]
LONGEST, MOST_PARAMETERS = 60, 6
# A C function: its signature at the start of a line (the type on the line before), its body
# from the `{` on the next line to the `}` at the start of one.
C_FUNCTION = re.compile(r"^(\w+)\(([^;{]*?)\)\n\{\n(.*?)^\}", re.MULTILINE | re.DOTALL)


def _functions(path: Path) -> Iterator[tuple[str, int, int]]:
    """Each function's name, lines and parameters (self and cls not counted)."""
    text = path.read_text()
    if path.suffix == ".c":
        for match in C_FUNCTION.finditer(text):
            parameters = [p for p in match.group(2).split(",") if p.strip() not in ("", "void")]
            yield match.group(1), match.group(3).count("\n") + 2, len(parameters)
        return
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            arguments = [a for a in [*node.args.args, *node.args.kwonlyargs] if a.arg not in ("self", "cls")]
            yield node.name, node.end_lineno - node.lineno + 1, len(arguments)


def test_no_function_of_the_binlog_path_passes_60_lines_or_6_parameters():
    """The path every binlog event takes, Python and C: a longer function holds more than one step."""
    found = {
        f"{path.relative_to(ROOT)}:{name}": (lines, parameters)
        for path in BINLOG_PATH
        for name, lines, parameters in _functions(path)
        if lines > LONGEST or parameters > MOST_PARAMETERS
    }
    assert not found, f"split these (at most {LONGEST} lines and {MOST_PARAMETERS} parameters): {found}"


def test_the_function_check_reads_c_functions():
    """It finds the C functions it measures (a pattern that found none would pass anything)."""
    found = dict((name, lines) for name, lines, _ in _functions(ROOT / "spark-images/sluice/binlog/rows/row_values.c"))
    assert "row_value" in found and "read_prefixed" in found and found["row_value"] > 10
