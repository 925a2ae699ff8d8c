"""A MySQL 8.4 source, through the stand-in (tests/harness/mysql84): what Sluice sends it
and what `sluice check` says of it. The stand-in answers as 8.4 does at the protocol
level; its binlog in MySQL's format is not served yet."""

from __future__ import annotations

from tests.harness.mysql84.front import Mysql84Front
from tests.harness.pipelines import pipeline_yaml, postgres_sink, sluice_env, write_pipeline
from tests.sluice.runtime.test_preflight import findings, sluice_check


def test_sluice_check_reads_a_mysql_8_4_source_whose_user_is_not_cached_yet(
    tmp_path, mysql84: Mysql84Front, postgresql, source_db
):
    """8.4 removed SHOW SLAVE HOSTS (a syntax error there, which PyMySQL raises as a
    ProgrammingError); its default authentication, caching_sha2_password, takes a first
    login over plaintext by the server's RSA key."""
    source = mysql84.server()
    source.execute("CREATE TABLE t (id INT PRIMARY KEY, v INT)", database=source_db)
    mysql84.flush_privileges()
    definition = pipeline_yaml(source, f"{source_db}.t", postgres_sink(postgresql), **{"server-id": "7392-7393"})
    pipeline = write_pipeline(tmp_path / "p.yaml", definition)

    checked = sluice_check(pipeline, sluice_env(source, postgresql))

    assert "internal error" not in checked.stderr, checked.stderr
    said = findings(checked.stdout)
    assert ("ok", "source.server-id") in [(level, subject) for level, subject, _ in said], (
        checked.stdout + checked.stderr
    )
    assert "SHOW REPLICAS" in mysql84.statements_seen
    assert not [s for s in mysql84.statements_seen if "SLAVE" in s.upper() or "MASTER STATUS" in s.upper()]
    assert ("root", "full") in mysql84.authentications
