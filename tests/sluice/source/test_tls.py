"""Every source connection of a run (metadata, the binlog stream, the snapshot's chunk
readers) is encrypted as source.ssl-mode says, against real MariaDB servers started with
TLS: a certificate of the test's own CA for 127.0.0.1, one for another name, a user created
REQUIRE SSL and one REQUIRE X509 (what managed MySQL's require_secure_transport imposes)."""

from __future__ import annotations

import dataclasses

import pytest

from sluice.binlog.rows.event_reader import read_window
from sluice.errors import SourceError
from sluice.pipeline.definition import load_definition
from sluice.runtime.preflight import tls_finding
from sluice.source.connection import connect, connect_scan, current_offset, tls_cipher
from sluice.source.endpoint import SourceEndpoint
from sluice.source.schema import read_table_schema
from sluice.source.tls import TlsSettings
from tests.harness.pipelines import pipeline_yaml, write_pipeline


def endpoint(server, user: str = "root", password: str | None = None, **tls) -> SourceEndpoint:  # noqa: ANN001
    plain = server.endpoint()
    return dataclasses.replace(
        plain, username=user, password=password or plain.password, max_retries=0, tls=TlsSettings(**tls)
    )


def ciphers(at: SourceEndpoint) -> tuple[str, str]:
    """The TLS cipher of a metadata connection and of a chunk reader's."""
    conn, scan = connect(at), connect_scan(at)
    try:
        return tls_cipher(conn), tls_cipher(scan)
    finally:
        conn.close()
        scan.close()


def test_by_default_every_connection_is_encrypted_where_the_server_offers_tls(tls_server):
    """The snapshot's chunk reader connected in plaintext, so a REQUIRE SSL user was refused
    there (Access denied), after sluice check had passed."""
    metadata, scan = ciphers(endpoint(tls_server, "cdc_ssl", "pw-ssl"))
    assert metadata and scan


def test_the_binlog_stream_is_encrypted_too(tls_server):
    at = endpoint(tls_server, "cdc_ssl", "pw-ssl")
    with connect(at) as conn:
        start = current_offset(conn)
        schema = read_table_schema(conn, "shop", "orders")
    tls_server.execute("UPDATE shop.orders SET amount = 11 WHERE id = 1")
    with connect(at) as conn:
        end = current_offset(conn)
    changes = list(read_window(at, 7301, start, end, {schema.table_id: schema}, True))
    assert [c.after for c in changes] == [(1, 11)]


def test_verify_identity_connects_to_a_server_whose_certificate_names_it(tls_server, certificates):
    metadata, scan = ciphers(endpoint(tls_server, mode="verify_identity", ca=str(certificates.ca)))
    assert metadata and scan


@pytest.mark.parametrize("mode", ["verify_identity", "verify_ca"])
def test_a_certificate_of_another_name_or_an_unknown_ca_is_refused(elsewhere_server, tls_server, certificates, mode):
    if mode == "verify_identity":
        with pytest.raises(SourceError, match=r"refused the connection: .*(certificate|hostname).*source\.ssl-mode"):
            connect(endpoint(elsewhere_server, mode=mode, ca=str(certificates.ca)))
    with pytest.raises(SourceError, match=r"refused the connection: .*source\.ssl-ca"):
        connect_scan(endpoint(elsewhere_server, mode=mode, ca=str(certificates.ca)))
    untrusted = certificates.cert("client")  # a certificate, not the CA that signed the server's
    with pytest.raises(SourceError, match=r"certificate"):
        connect(endpoint(tls_server, mode=mode, ca=str(untrusted)))


def test_required_refuses_a_server_without_tls(mariadb):
    for open_connection in (connect, connect_scan):
        with pytest.raises(SourceError, match=r"offers no TLS|SSL is required"):
            open_connection(endpoint(mariadb, mode="required"))


def test_preferred_still_connects_to_a_server_without_tls(mariadb):
    assert ciphers(endpoint(mariadb)) == ("", "")


def test_a_client_certificate_is_presented_where_the_user_requires_one(tls_server, certificates):
    with_certificate = endpoint(
        tls_server,
        "cdc_x509",
        "pw-x509",
        mode="verify_identity",
        ca=str(certificates.ca),
        cert=str(certificates.cert("client")),
        key=str(certificates.key("client")),
    )
    metadata, scan = ciphers(with_certificate)
    assert metadata and scan
    with pytest.raises(SourceError, match=r"Access denied.*REQUIRE X509 or SUBJECT a client certificate"):
        connect(dataclasses.replace(with_certificate, tls=TlsSettings("required")))


def test_sluice_check_says_whether_each_connection_is_encrypted_and_verified(tls_server, certificates, tmp_path):
    options = {"ssl-mode": "verify_identity", "ssl-ca": str(certificates.ca)}
    definition = pipeline_yaml(tls_server, "shop.orders", {"type": "values"}, **options)
    path = write_pipeline(tmp_path / "p.yaml", definition)
    loaded = load_definition(path, {"SOURCE_PASSWORD": tls_server.password})
    with connect(loaded.source.endpoint()) as conn:
        finding = tls_finding(loaded, conn)
    assert (finding.level, finding.subject) == ("ok", "source.ssl-mode")
    assert (
        finding.message.startswith("every connection encrypted (TLS_")
        and "verified (verify_identity)" in finding.message
    )


def test_a_rotated_ca_file_is_read_by_the_next_connection(tls_server, certificates, tmp_path):
    """A Kubernetes Secret updated is swapped in by the kubelet: the next connection reads it."""
    ca = tmp_path / "ca.pem"
    ca.write_bytes(certificates.cert("client").read_bytes())  # not the CA: verification fails
    at = endpoint(tls_server, mode="verify_identity", ca=str(ca))
    with pytest.raises(SourceError, match="certificate"):
        connect(at)
    rotated = tmp_path / "ca.pem.new"
    rotated.write_bytes(certificates.ca.read_bytes())
    rotated.replace(ca)  # an atomic swap, as the kubelet's
    with connect(at) as conn:
        assert tls_cipher(conn)
