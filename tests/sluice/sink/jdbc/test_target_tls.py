"""A JDBC target's connections are encrypted as the sink's ssl-mode says, with PostgreSQL's
libpq modes of the same meaning, against real servers started with TLS by the harness."""

from __future__ import annotations

import pytest

from sluice.errors import SinkUnavailable
from sluice.pipeline.sink_configs import JdbcSinkConfig
from sluice.sink.jdbc.sink import JdbcSink
from sluice.sink.jdbc.target import JdbcTarget


def target(server, scheme: str, database: str, **tls) -> JdbcTarget:  # noqa: ANN001
    options = {
        "url": f"{scheme}://{server.host if scheme == 'mysql' else '127.0.0.1'}:{server.port}/{database}",
        "username": server.user,
        "password": server.password,
        **{f"ssl-{key}": value for key, value in tls.items()},
    }
    return JdbcTarget(JdbcSinkConfig.from_options(options), "tls")


def encrypted(conn, scheme: str) -> bool:  # noqa: ANN001
    cur = conn.cursor()
    if scheme == "postgresql":
        cur.execute("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
        return bool(cur.fetchone()[0])
    cur.execute("SHOW SESSION STATUS LIKE 'Ssl_cipher'")
    return bool(cur.fetchone()[1])


@pytest.fixture(params=["postgresql", "mysql"])
def tls_target(request, tls_postgresql, tls_server):
    """A target of each dialect serving a certificate of the test CA for 127.0.0.1."""
    if request.param == "postgresql":
        return request.param, tls_postgresql, tls_postgresql.database
    return request.param, tls_server, "mysql"


def test_verify_identity_connects_to_a_target_whose_certificate_names_it(tls_target, certificates):
    scheme, server, database = tls_target
    conn = target(server, scheme, database, mode="verify_identity", ca=str(certificates.ca)).connect()
    assert encrypted(conn, scheme)
    conn.close()


def test_by_default_a_target_offering_tls_is_connected_to_with_it(tls_target):
    scheme, server, database = tls_target
    conn = target(server, scheme, database).connect()
    assert encrypted(conn, scheme)
    conn.close()


def test_sluice_check_is_told_the_targets_cipher_and_mode(tls_target, certificates, postgresql):
    scheme, server, database = tls_target
    sink = JdbcSink(
        JdbcSinkConfig.from_options(
            {
                "url": f"{scheme}://127.0.0.1:{server.port}/{database}",
                "username": server.user,
                "password": server.password,
                "ssl-mode": "verify_identity",
                "ssl-ca": str(certificates.ca),
            }
        ),
        "tls-check",
    )
    cipher, tls = sink.encryption()
    assert cipher.startswith("TLS_") and tls.mode == "verify_identity"
    plain = JdbcSink(
        JdbcSinkConfig.from_options(
            {"url": postgresql.url, "username": postgresql.user, "password": postgresql.password}
        ),
        "tls-check",
    )
    cipher, tls = plain.encryption()
    assert (cipher, tls.mode) == ("", "preferred")


def test_a_target_certificate_from_another_ca_is_refused(tls_target, certificates):
    scheme, server, database = tls_target
    with pytest.raises(SinkUnavailable, match=r"cannot connect: .*certificate"):
        target(server, scheme, database, mode="verify_ca", ca=str(certificates.cert("client"))).connect()


def test_required_refuses_a_target_without_tls(postgresql, mariadb_target):
    with pytest.raises(SinkUnavailable, match=r"cannot connect"):
        target(postgresql, "postgresql", postgresql.database, mode="required").connect()
    with pytest.raises(SinkUnavailable, match=r"cannot connect"):
        target(mariadb_target, "mysql", "mysql", mode="required").connect()
