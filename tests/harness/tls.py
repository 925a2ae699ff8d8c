"""Certificates a test makes with the openssl CLI: a CA of its own, a server certificate for
127.0.0.1 and localhost, one for another name, and a client certificate; and MariaDB's
options that serve one of them."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Certificates:
    directory: Path

    @property
    def ca(self) -> Path:
        return self.directory / "ca.pem"

    def cert(self, name: str) -> Path:
        return self.directory / f"{name}.pem"

    def key(self, name: str) -> Path:
        return self.directory / f"{name}-key.pem"

    def server_options(self, name: str = "server") -> list[str]:
        """mariadbd's options serving the certificate `name`, trusting the CA for clients'."""
        return [f"--ssl-ca={self.ca}", f"--ssl-cert={self.cert(name)}", f"--ssl-key={self.key(name)}"]


def postgres_options(certificates: Certificates, base: Path, name: str = "server") -> list[str]:
    """postgres's options serving the certificate `name`: its key copied where the server's
    user (nobody, under root) owns it alone, as PostgreSQL requires."""
    held = base / "pg-tls"
    held.mkdir(parents=True, exist_ok=True)
    for made, kept in (
        (certificates.cert(name), held / "server.pem"),
        (certificates.key(name), held / "server-key.pem"),
    ):
        shutil.copyfile(made, kept)
        kept.chmod(0o600)
        if os.geteuid() == 0:
            shutil.chown(kept, "nobody")
    if os.geteuid() == 0:
        shutil.chown(held, "nobody")
    return ["-c ssl=on", f"-c ssl_cert_file={held / 'server.pem'}", f"-c ssl_key_file={held / 'server-key.pem'}"]


def make_certificates(directory: Path) -> Certificates:
    """A CA; `server` (127.0.0.1, localhost), `elsewhere` (db.elsewhere.example) and `client`
    (CN cdc_x509), each signed by it."""
    directory.mkdir(parents=True, exist_ok=True)
    made = Certificates(directory)
    _openssl(
        directory,
        "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=Sluice test CA",
        "-keyout", "ca-key.pem", "-out", "ca.pem",
    )  # fmt: skip
    for name, subject, names in (
        ("server", "/CN=localhost", "DNS:localhost,IP:127.0.0.1"),
        ("elsewhere", "/CN=db.elsewhere.example", "DNS:db.elsewhere.example"),
        ("client", "/CN=cdc_x509", "DNS:client.example"),
    ):
        _openssl(directory, "req", "-newkey", "rsa:2048", "-nodes", "-subj", subject,
                 "-keyout", f"{name}-key.pem", "-out", f"{name}.csr")  # fmt: skip
        (directory / f"{name}.ext").write_text(f"subjectAltName={names}\n")
        _openssl(directory, "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca-key.pem",
                 "-CAcreateserial", "-days", "2", "-extfile", f"{name}.ext", "-out", f"{name}.pem")  # fmt: skip
    for key in directory.glob("*-key.pem"):
        key.chmod(0o644)  # mariadbd reads them as the user it runs as
    return made


def _openssl(directory: Path, *arguments: str) -> None:
    subprocess.run(["openssl", *arguments], cwd=directory, check=True, capture_output=True)
