"""Authentication as MySQL 8.4 does it by default: caching_sha2_password, with its fast
path for a user whose password the server has cached since it started, and its full
authentication otherwise, which over a plaintext connection takes the password encrypted
with the server's RSA public key (sent to a client that asks for it). The stand-in then
logs in to the MariaDB behind it with mysql_native_password."""

from __future__ import annotations

import hashlib
import os

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

CACHING_SHA2 = "caching_sha2_password"
NATIVE = "mysql_native_password"

FAST_AUTH_SUCCESS = b"\x01\x03"
PERFORM_FULL_AUTHENTICATION = b"\x01\x04"
REQUEST_PUBLIC_KEY = b"\x02"


def nonce() -> bytes:
    """20 random bytes, none NUL (a client reads the scramble's second part to a NUL)."""
    return bytes(1 + b % 127 for b in os.urandom(20))


def _xor(data: bytes, key: bytes) -> bytes:
    return bytes(b ^ key[i % len(key)] for i, b in enumerate(data))


def caching_sha2_scramble(password: bytes, salt: bytes) -> bytes:
    """What the client sends: SHA256(password) XOR SHA256(SHA256(SHA256(password)), nonce)."""
    first = hashlib.sha256(password).digest()
    return _xor(first, hashlib.sha256(hashlib.sha256(first).digest() + salt).digest())


def native_scramble(password: bytes, salt: bytes) -> bytes:
    """mysql_native_password: SHA1(password) XOR SHA1(nonce, SHA1(SHA1(password)))."""
    if not password:
        return b""
    first = hashlib.sha1(password).digest()
    return _xor(first, hashlib.sha1(salt + hashlib.sha1(first).digest()).digest())


class ServerKey:
    """The server's RSA key pair (MySQL makes one at its first start)."""

    def __init__(self) -> None:
        self._key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.public_pem = self._key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )

    def password(self, encrypted: bytes, salt: bytes) -> bytes:
        """The password from a client's RSA-OAEP packet: it encrypts password+NUL XOR the nonce."""
        plain = self._key.decrypt(
            encrypted, padding.OAEP(mgf=padding.MGF1(algorithm=hashes.SHA1()), algorithm=hashes.SHA1(), label=None)
        )
        return _xor(plain, salt).rstrip(b"\x00")
