"""An Iceberg REST catalog reached over HTTPS verifies the catalog's certificate against the
CA the sink's catalog properties name (ssl.cabundle, as Flink CDC's and pyiceberg's rest
catalogs take it), and refuses a certificate no trusted CA signed."""

from __future__ import annotations

import json
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import requests

from sluice.sink.lakehouse.iceberg import IcebergTables


class _Config(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        body = json.dumps({"defaults": {}, "overrides": {}}).encode()
        self.send_response(200 if self.path.startswith("/v1/config") else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def https_catalog(certificates) -> Iterator[str]:
    """A catalog answering its config over HTTPS, with the test CA's certificate for 127.0.0.1."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Config)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certificates.cert("server"), certificates.key("server"))
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"https://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_a_rest_catalog_is_verified_against_the_ca_its_properties_name(https_catalog, certificates, monkeypatch):
    # requests takes these over a session's own CA (its issue 3829): docs/security.md says so
    for variable in ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"):
        monkeypatch.delenv(variable, raising=False)
    trusted = IcebergTables("lake", {"type": "rest", "uri": https_catalog, "ssl.cabundle": str(certificates.ca)}, {})
    assert trusted.catalog.name == "lake"
    untrusted = IcebergTables("lake", {"type": "rest", "uri": https_catalog}, {})
    with pytest.raises(requests.exceptions.SSLError):
        untrusted.catalog  # noqa: B018 - loading it is what is tried
