"""How connections to the source and to JDBC targets are encrypted and whose certificates
they trust: the five modes Debezium's `database.ssl.mode` and MySQL's `--ssl-mode` name,
for every connection of a run (the source's metadata, watermarks and binlog stream:
PyMySQL; its snapshot chunk readers: mysqlclient on libmariadb; a MySQL target: PyMySQL; a
PostgreSQL target: libpq's sslmode of the same meaning).

- disabled: plaintext.
- preferred (the default): TLS whenever the server offers it, unverified.
- required: TLS or no connection, unverified (it protects against a passive listener, not
  against an impostor).
- verify_ca: TLS, the server's certificate signed by `ca` (else the system's CAs). libmariadb
  checks the server's name under it too, so the chunk readers need a certificate naming the
  host Sluice connects to, as verify_identity does.
- verify_identity: verify_ca, and the certificate names the host.

`cert` and `key` present a client certificate (a user created REQUIRE X509 or SUBJECT) under
required and stricter.
"""

from __future__ import annotations

import functools
import os
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sluice.errors import DefinitionError, SourceError

TLS_MODES = ("disabled", "preferred", "required", "verify_ca", "verify_identity")
_LIBPQ_MODES = dict(zip(TLS_MODES, ("disable", "prefer", "require", "verify-ca", "verify-full"), strict=True))


@dataclass(frozen=True)
class TlsSettings:
    mode: str = "preferred"
    ca: str = ""  # PEM file of the CAs that sign the server's certificate (verify_*)
    cert: str = ""  # PEM file of the client certificate (with its key, or `key` apart)
    key: str = ""

    @property
    def requires(self) -> bool:
        return self.mode not in ("disabled", "preferred")

    @property
    def verifies(self) -> bool:
        return self.mode in ("verify_ca", "verify_identity")

    def pymysql_settings(self) -> dict[str, Any]:
        """PyMySQL's (and python-mysql-replication's) keyword arguments."""
        if self.mode == "disabled":
            return {"ssl_disabled": True}
        if self.mode == "preferred":  # PyMySQL's own: TLS when offered (connection.SharedTlsConnection)
            return {}
        return {"ssl": client_context(self)}

    def libpq_settings(self) -> dict[str, Any]:
        """libpq's (psycopg's) keyword arguments: its sslmode of the same meaning."""
        settings: dict[str, Any] = {"sslmode": _LIBPQ_MODES[self.mode]}
        if self.verifies:
            settings["sslrootcert"] = self.ca or "system"
        if self.cert:
            settings["sslcert"] = self.cert
            settings["sslkey"] = self.key or self.cert
        return settings

    def mysqlclient_settings(self) -> dict[str, Any]:
        """mysqlclient's. On libmariadb, REQUIRED gives TLS when offered and plaintext when not
        (connection.connect_scan refuses that where TLS is required); VERIFY_CA checks the
        server's name too."""
        if self.mode == "disabled":
            return {"ssl_mode": "DISABLED"}
        files = {name: path for name, path in (("ca", self.ca), ("cert", self.cert), ("key", self.key)) if path}
        mode = {"verify_ca": "VERIFY_CA", "verify_identity": "VERIFY_IDENTITY"}.get(self.mode, "REQUIRED")
        return {"ssl_mode": mode, **({"ssl": files} if files else {})}


NO_SETTINGS = TlsSettings()  # preferred: TLS when the server offers it


def tls_settings(block: str, options: Mapping[str, Any]) -> TlsSettings:
    """A definition block's ssl-mode, ssl-ca, ssl-cert and ssl-key, checked together."""
    tls = TlsSettings(
        str(options.get("ssl-mode", "preferred")).lower(),
        options.get("ssl-ca", ""),
        options.get("ssl-cert", ""),
        options.get("ssl-key", ""),
    )
    if tls.cert and not tls.requires:
        raise DefinitionError(
            f"{block}.ssl-cert: a client certificate is presented over TLS the pipeline requires: set {block}.ssl-mode "
            f"required, verify_ca or verify_identity (it is {tls.mode})"
        )
    if tls.key and not tls.cert:
        raise DefinitionError(f"{block}.ssl-key: the key of a client certificate needs {block}.ssl-cert")
    return tls


def client_context(tls: TlsSettings) -> ssl.SSLContext:
    """The context of the settings' files as they are now: a rotated certificate (a
    Kubernetes Secret updated, swapped in by the kubelet) is taken by the next connection."""
    return _context(tls, _versions(tls))


def _versions(tls: TlsSettings) -> tuple[tuple[int, int], ...]:
    stamps = []
    for path in (tls.ca, tls.cert, tls.key):
        try:
            found = os.stat(path) if path else None
        except OSError:
            found = None
        stamps.append((found.st_ino, found.st_mtime_ns) if found else (0, 0))
    return tuple(stamps)


@functools.lru_cache(maxsize=8)  # loading CAs costs more than a connection's handshake
def _context(tls: TlsSettings, versions: tuple[tuple[int, int], ...]) -> ssl.SSLContext:
    try:
        context = ssl.create_default_context(cafile=tls.ca or None)
        if tls.cert:
            context.load_cert_chain(tls.cert, tls.key or None)
    except (OSError, ssl.SSLError) as exc:
        which = "ssl-cert and ssl-key" if tls.cert and "cert" in str(exc).lower() else "ssl-ca"
        raise SourceError(f"{which}: cannot load {exc.filename or 'the certificates'}: {exc.strerror or exc}") from exc
    context.check_hostname = tls.mode == "verify_identity"
    context.verify_mode = ssl.CERT_REQUIRED if tls.verifies else ssl.CERT_NONE
    return context
