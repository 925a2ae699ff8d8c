"""SQL text helpers for the source dialect."""


def quote(identifier: str) -> str:
    return "`" + identifier.replace("`", "``") + "`"


def qualified(database: str, table: str) -> str:
    return f"{quote(database)}.{quote(table)}"
