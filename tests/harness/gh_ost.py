"""gh-ost's statement sequence for a migration, as its documentation and code give it: gh-ost
has no package here, so tests and `make bench` replay what it issues on the real MariaDB."""

from __future__ import annotations


def gh_ost_migration(source_db: str, rows: int, chunk: int = 500) -> tuple[list[str], int]:
    """gh-ost's statements migrating t (`id`, `v`; keys 0..rows-1) to ADD COLUMN w: the
    ghost and changelog tables, the row copy chunk by chunk with a write to t between chunks
    and the applier's replay of it into the ghost table, the sentry table and the atomic
    cut-over; then writes to t in its new shape. Also the row changes t's own changes
    make (an update is two)."""
    db = f"`{source_db}`"
    statements = [
        f"DROP TABLE IF EXISTS {db}.`_t_gho`",
        f"DROP TABLE IF EXISTS {db}.`_t_del`",
        f"DROP TABLE IF EXISTS {db}.`_t_ghc`",
        f"create /* gh-ost */ table {db}.`_t_ghc` (id bigint auto_increment, last_update timestamp not null "
        "DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP, hint varchar(64) charset ascii not null, "
        "value varchar(4096) charset ascii not null, primary key(id), unique key hint_uidx(hint)) "
        "auto_increment=256",
        f"create /* gh-ost */ table {db}.`_t_gho` like {db}.`t`",
        f"alter /* gh-ost */ table {db}.`_t_gho` add column w int not null default 7",
        f"insert /* gh-ost */ into {db}.`_t_ghc` (id, hint, value) values (2, 'state', 'GhostTableMigrated') "
        "on duplicate key update last_update=NOW(), value=VALUES(value)",
    ]
    changes = 0
    for low in range(0, rows, chunk):  # the row copy, chunk by chunk, with t's writes between
        statements += [
            f"insert /* gh-ost {db}.`t` */ ignore into {db}.`_t_gho` (`id`, `v`) (select `id`, `v` from "
            f"{db}.`t` force index (`PRIMARY`) where `id` >= {low} and `id` < {low + chunk} lock in share mode)",
            f"UPDATE t SET v = -v WHERE id = {low + 1}",
            # the applier's replay of it, from the binlog
            f"replace /* gh-ost {db}.`_t_gho` */ into {db}.`_t_gho` (`id`, `v`, `w`) "
            f"select id, v, 7 from t where id = {low + 1}",
            f"DELETE FROM t WHERE id = {low + 2}",
            f"delete /* gh-ost {db}.`_t_gho` */ from {db}.`_t_gho` where `id` = {low + 2}",
        ]
        changes += 2  # an update, a delete
    statements += [
        f"INSERT INTO t VALUES ({rows + 1}, 1)",
        f"replace /* gh-ost */ into {db}.`_t_gho` (`id`, `v`, `w`) values ({rows + 1}, 1, 7)",
        f"create /* gh-ost */ table {db}.`_t_del` (id int auto_increment primary key) engine=InnoDB "
        "comment='ghost-cut-over-sentry'",
        f"drop /* gh-ost */ table if exists {db}.`_t_del`",
        f"rename /* gh-ost */ table {db}.`t` to {db}.`_t_del`, {db}.`_t_gho` to {db}.`t`",
        f"drop /* gh-ost */ table if exists {db}.`_t_ghc`",
        f"drop /* gh-ost */ table if exists {db}.`_t_del`",
        f"INSERT INTO t VALUES ({rows + 9000}, 9, 9)",
        "UPDATE t SET w = 8 WHERE id = 3",
    ]
    return statements, changes + 3  # two inserts, an update


CUT_OVER = "rename /* gh-ost */ table"  # how the cut-over statement begins
