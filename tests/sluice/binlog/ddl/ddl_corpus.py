"""Table DDL from MariaDB's own test suite (Debian's mariadb-test package): statements
nobody here wrote, in the order each test file runs them.

mysqltest files are SQL with commands around it: `--error` expects the next statement to
fail, `delimiter` changes how statements end, `$variables`, `eval` and `let` are the
runner's. What is taken: each file's CREATE/ALTER/DROP/RENAME/TRUNCATE TABLE statements
with no runner syntax, up to the first change of delimiter (stored programs come after).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

SUITE = Path("/usr/share/mysql/mysql-test")
DIRECTORIES = ("main",)  # the server's own tests: the broadest DDL, a few thousand statements

_TABLE_DDL = re.compile(
    r"^(?:CREATE\s+(?:OR\s+REPLACE\s+)?TABLE|ALTER\s+(?:ONLINE\s+)?(?:IGNORE\s+)?TABLE|DROP\s+TABLE|RENAME\s+TABLE"
    r"|TRUNCATE\s+(?:TABLE\s+)?\w)",
    re.IGNORECASE,
)
_RUNNER = re.compile(r"\$|^\s*(?:--|#)|\b(?:eval|let)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Statement:
    file: str
    line: int
    text: str


def suite_files(suite: Path = SUITE) -> list[Path]:
    return sorted(p for d in DIRECTORIES for p in (suite / d).glob("*.test"))


def statements(path: Path) -> Iterator[Statement]:
    """The table DDL statements of one test file, in order."""
    text = path.read_text(encoding="utf-8", errors="replace")
    pending: list[str] = []
    start = 0
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not pending:
            if re.match(r"^-*\s*delimiter\b", stripped, re.IGNORECASE):
                return  # stored programs follow: their bodies are no table DDL to take
            if not stripped or stripped.startswith(("#", "--")):
                continue
            start = number
        pending.append(line)
        if stripped.endswith(";"):
            statement = "\n".join(pending).strip()[:-1].strip()
            pending = []
            if _TABLE_DDL.match(statement) and not _RUNNER.search(statement) and "TEMPORARY" not in statement.upper():
                yield Statement(path.name, start, statement)
