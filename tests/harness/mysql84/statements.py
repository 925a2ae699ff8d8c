"""What MySQL 8.4 says to the statements a client sends, where it differs from the MariaDB
behind the stand-in: the statements 8.4 removed (the MASTER and SLAVE spellings) are syntax
errors, MariaDB's own functions and variables are unknown, `SHOW REPLICAS` and `SHOW BINARY
LOG STATUS` answer in MySQL's columns, and the GTID variables hold MySQL's sets (a MariaDB
GTID domain stands for a tag: see Mysql84Settings). Everything else goes to MariaDB as it is.

Sources: MySQL 8.4 Reference Manual (SHOW BINARY LOG STATUS, SHOW REPLICAS, Server System
Variables, Replication and Binary Logging Options), the 8.4.0 release notes ("SQL
statements removed"), and the error message reference (1064, 1193, 1305)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tests.harness.mysql84.binlog import TranslatedBinlog

Rows = tuple[list[str], list[tuple]]

# MySQL 8.4.0's release notes: removed, with their replacements in brackets there.
_REMOVED = re.compile(
    r"^\s*(?:START|STOP|RESET)\s+(SLAVE\b.*)|^\s*SHOW\s+(SLAVE\s+(?:STATUS|HOSTS)\b.*)|^\s*CHANGE\s+(MASTER\b.*)"
    r"|^\s*RESET\s+(MASTER\b.*)|^\s*SHOW\s+(MASTER\s+(?:STATUS|LOGS)\b.*)|^\s*PURGE\s+(MASTER\s+LOGS\b.*)",
    re.IGNORECASE | re.DOTALL,
)
_MARIADB_FUNCTIONS = re.compile(r"\b(BINLOG_GTID_POS|MASTER_GTID_WAIT)\s*\(", re.IGNORECASE)
_VARIABLE = re.compile(r"@@(?:(global|session|local)\.)?([a-z_][a-z0-9_]*)", re.IGNORECASE)
_ONLY_VARIABLES = re.compile(
    r"^\s*SELECT\s+(@@(?:(?:global|session|local)\.)?[a-z_][a-z0-9_]*(?:\s*,\s*@@(?:(?:global|session|local)\.)?"
    r"[a-z_][a-z0-9_]*)*)\s*;?\s*$",
    re.IGNORECASE,
)
_SHOW_VARIABLES = re.compile(
    r"^\s*SHOW\s+(?:(GLOBAL|SESSION|LOCAL)\s+)?(VARIABLES|STATUS)(?:\s+LIKE\s+'([^']*)'|\s+WHERE\s+Variable_name\s+"
    r"(?:=\s*'([^']*)'|IN\s*\(([^)]*)\)))?\s*;?\s*$",
    re.IGNORECASE,
)
_SHOW = re.compile(r"^\s*SHOW\s+(?:(GLOBAL|SESSION|LOCAL)\s+)?(VARIABLES|STATUS)\b", re.IGNORECASE)

# MariaDB's, which MySQL 8.4 has not got (or removed: expire_logs_days in 8.2).
MARIADB_VARIABLES = frozenset(
    {
        "gtid_binlog_pos",
        "gtid_binlog_state",
        "gtid_current_pos",
        "gtid_slave_pos",
        "gtid_domain_id",
        "gtid_seq_no",
        "gtid_strict_mode",
        "gtid_ignore_duplicates",
        "gtid_cleanup_batch_size",
        "gtid_pos_auto_engines",
        "binlog_annotate_row_events",
        "binlog_commit_wait_count",
        "binlog_commit_wait_usec",
        "binlog_file_cache_size",
        "binlog_optimize_thread_scheduling",
        "binlog_legacy_event_pos",
        "binlog_alter_two_phase",
        "expire_logs_days",
        "log_bin_compress",
        "log_bin_compress_min_len",
        "encrypt_binlog",
        "wsrep_on",
        "aria_log_file_size",
    }
)
MARIADB_STATUS = frozenset({"binlog_snapshot_file", "binlog_snapshot_position"})


@dataclass
class Mysql84Settings:
    """The server the stand-in plays. `tags`: the MariaDB GTID domain whose transactions
    stand for each tag's ("" the untagged ones); a test writes a tagged transaction with
    SET SESSION gtid_domain_id. `variables`: MySQL 8.4's values where they differ from the
    MariaDB's, its defaults unless a test sets them as a user would."""

    version: str = "8.4.3"
    server_id: int = 1
    server_uuid: str = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
    tags: dict[int, str] = field(default_factory=lambda: {0: ""})
    native_users: set[str] = field(default_factory=set)  # accounts IDENTIFIED WITH mysql_native_password
    variables: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.variables = {
            "version": self.version,
            "version_comment": "MySQL Community Server - GPL",
            "server_uuid": self.server_uuid,
            "gtid_mode": "ON",
            "enforce_gtid_consistency": "ON",
            "gtid_purged": "",
            "binlog_row_metadata": "MINIMAL",  # 8.4's default
            "binlog_transaction_compression": "OFF",
            "binlog_row_value_options": "",
            "sql_generate_invisible_primary_key": "OFF",
            "show_gipk_in_create_table_and_information_schema": "ON",
            "mysql_native_password": "OFF",  # 8.4 loads the plugin only when told to
            "authentication_policy": "*,,",
            "binlog_expire_logs_seconds": "2592000",  # 30 days
            **self.variables,
        }

    def mysql_gtid_set(self, executed: dict[str, int]) -> str:
        """Per tag, transactions 1 to its last, as MySQL prints a set: its untagged
        intervals, then each tag's."""
        untagged = executed.get("", 0)
        parts = [f"1-{untagged}" if untagged > 1 else "1"] if untagged else []
        parts += [f"{tag}:1-{n}" if n > 1 else f"{tag}:1" for tag, n in sorted(executed.items()) if tag and n]
        return f"{self.server_uuid}:{':'.join(parts)}" if parts else ""


@dataclass(frozen=True)
class Refusal:
    code: int
    sqlstate: str
    message: str


def syntax_error(near: str) -> Refusal:
    return Refusal(
        1064,
        "42000",
        "You have an error in your SQL syntax; check the manual that corresponds to your MySQL server version for "
        f"the right syntax to use near '{near.strip()[:80]}' at line 1",
    )


class Mysql84Statements:
    """Answers a statement as MySQL 8.4 would where the MariaDB behind would answer
    otherwise; None: MariaDB's answer is MySQL's. `ask`: a query on the MariaDB behind."""

    def __init__(self, settings: Mysql84Settings, ask: Callable[[str], Rows], binlog: TranslatedBinlog) -> None:
        self.settings, self.ask, self.binlog = settings, ask, binlog
        self.user = ""  # the session's, once it logged in

    def answer(self, sql: str) -> Rows | Refusal | None:
        removed = _REMOVED.match(sql)
        if removed:
            return syntax_error(next(g for g in removed.groups() if g))
        function = _MARIADB_FUNCTIONS.search(sql)
        if function:
            return Refusal(1305, "42000", f"FUNCTION {function.group(1).lower()} does not exist")
        for _scope, name in _VARIABLE.findall(sql):
            if name.lower() in MARIADB_VARIABLES:
                return Refusal(1193, "HY000", f"Unknown system variable '{name}'")
        statement = " ".join(sql.split()).rstrip(";").upper()
        if statement == "SHOW BINARY LOG STATUS":
            return self._binary_log_status()
        if statement in ("SHOW BINARY LOGS", "SHOW BINLOGS"):
            return ["Log_name", "File_size", "Encrypted"], [(f.name, len(f.data), "No") for f in self.binlog.files]
        if statement == "SHOW REPLICAS":
            return self._replicas()
        if statement in ("SHOW CREATE USER CURRENT_USER()", "SHOW CREATE USER CURRENT_USER"):
            return self._created_user()
        if statement in ("SELECT VERSION()", "SELECT @@VERSION"):
            return [sql.strip().split(None, 1)[1].rstrip(";")], [(self.settings.version,)]
        only = _ONLY_VARIABLES.match(sql)
        if only:
            return self._variables(only.group(1))
        show = _SHOW_VARIABLES.match(sql)
        if show:
            return self._show(show)
        if _SHOW.match(sql):
            raise NotImplementedError(f"the stand-in answers SHOW VARIABLES and STATUS by LIKE, = or IN only: {sql}")
        return None

    def _value(self, name: str) -> object:
        name = name.lower()
        if name == "gtid_executed":
            return self.settings.mysql_gtid_set(self.binlog.executed())
        if name in self.settings.variables:
            return self.settings.variables[name]
        return self.ask(f"SELECT @@{name}")[1][0][0]

    def _variables(self, items: str) -> Rows:
        names = [item.strip() for item in items.split(",")]
        return names, [tuple(self._value(_VARIABLE.match(n).group(2)) for n in names)]  # type: ignore[union-attr]

    def _show(self, show: re.Match) -> Rows:
        scope, kind, like, equal, listed = show.groups()
        scope = f"{scope} " if scope else ""
        columns, rows = self.ask(f"SHOW {scope}{kind}")
        if kind.upper() == "STATUS":
            values = {str(n).lower(): v for n, v in rows if str(n).lower() not in MARIADB_STATUS}
        else:
            values = {str(n).lower(): v for n, v in rows if str(n).lower() not in MARIADB_VARIABLES}
            values.update(self.settings.variables)
            values["gtid_executed"] = self._value("gtid_executed")
        if like is not None:
            pattern = re.compile(
                "".join(".*" if c == "%" else "." if c == "_" else re.escape(c) for c in like), re.IGNORECASE
            )
            names = [n for n in values if pattern.fullmatch(n)]
        elif equal is not None or listed is not None:
            wanted = [equal] if equal is not None else [w.strip().strip("'") for w in listed.split(",")]
            names = [n for n in values if n in {w.lower() for w in wanted}]
        else:
            names = list(values)
        return list(columns), [(n, values[n]) for n in sorted(names)]

    def _binary_log_status(self) -> Rows:
        """Where the translated binlog ends, and what it holds (as of that same end)."""
        file, position, executed = self.binlog.status()
        return (
            ["File", "Position", "Binlog_Do_DB", "Binlog_Ignore_DB", "Executed_Gtid_Set"],
            [(file, position, "", "", self.settings.mysql_gtid_set(executed))],
        )

    def _created_user(self) -> Rows:
        """As MySQL 8.4 shows an account (its hash: made up, as nobody reads it)."""
        plugin = "mysql_native_password" if self.user in self.settings.native_users else "caching_sha2_password"
        return (
            [f"CREATE USER for {self.user}@%"],
            [
                (
                    f"CREATE USER `{self.user}`@`%` IDENTIFIED WITH '{plugin}' AS '$A$005$stand-in' "
                    "REQUIRE NONE PASSWORD EXPIRE DEFAULT ACCOUNT UNLOCK PASSWORD HISTORY DEFAULT PASSWORD REUSE "
                    "INTERVAL DEFAULT PASSWORD REQUIRE CURRENT DEFAULT",
                )
            ],
        )

    def _replicas(self) -> Rows:
        _, rows = self.ask("SHOW SLAVE HOSTS")
        return (
            ["Server_Id", "Host", "Port", "Source_Id", "Replica_UUID"],
            [(row[0], row[1], row[2], row[3], "") for row in rows],
        )
