"""MySQL's client/server packets as the stand-in writes and reads them: the 4-byte frame
(3-byte length, sequence id), length-encoded integers and strings, and the OK, ERR, EOF and
text result set packets."""

from __future__ import annotations

import socket
import struct
from collections.abc import Sequence

MAX_PAYLOAD = 0xFFFFFF

# capability flags (the protocol documentation's names)
CLIENT_LONG_PASSWORD = 1
CLIENT_FOUND_ROWS = 1 << 1
CLIENT_LONG_FLAG = 1 << 2
CLIENT_CONNECT_WITH_DB = 1 << 3
CLIENT_NO_SCHEMA = 1 << 4
CLIENT_COMPRESS = 1 << 5
CLIENT_ODBC = 1 << 6
CLIENT_LOCAL_FILES = 1 << 7
CLIENT_IGNORE_SPACE = 1 << 8
CLIENT_PROTOCOL_41 = 1 << 9
CLIENT_INTERACTIVE = 1 << 10
CLIENT_SSL = 1 << 11
CLIENT_TRANSACTIONS = 1 << 13
CLIENT_SECURE_CONNECTION = 1 << 15
CLIENT_MULTI_STATEMENTS = 1 << 16
CLIENT_MULTI_RESULTS = 1 << 17
CLIENT_PS_MULTI_RESULTS = 1 << 18
CLIENT_PLUGIN_AUTH = 1 << 19
CLIENT_CONNECT_ATTRS = 1 << 20
CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA = 1 << 21
CLIENT_SESSION_TRACK = 1 << 23
CLIENT_DEPRECATE_EOF = 1 << 24
CLIENT_QUERY_ATTRIBUTES = 1 << 27

SERVER_STATUS_AUTOCOMMIT = 0x0002

MYSQL_TYPE_LONGLONG = 8
MYSQL_TYPE_VAR_STRING = 253
BINARY_CHARSET = 63


class PacketStream:
    """One side of a connection, packet by packet (a payload of 16 MiB or more comes in
    several frames; the stand-in's own packets are never that long)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.sequence = 0

    def _exactly(self, n: int) -> bytes:
        data = bytearray()
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError("the peer closed the connection")
            data += chunk
        return bytes(data)

    def read(self) -> bytes:
        payload = bytearray()
        while True:
            header = self._exactly(4)
            length = int.from_bytes(header[:3], "little")
            self.sequence = (header[3] + 1) & 0xFF
            payload += self._exactly(length)
            if length < MAX_PAYLOAD:
                return bytes(payload)

    def write(self, payload: bytes, sequence: int | None = None) -> None:
        if sequence is not None:
            self.sequence = sequence
        frames = bytearray()
        for start in range(0, len(payload) + 1, MAX_PAYLOAD):
            part = payload[start : start + MAX_PAYLOAD]
            frames += len(part).to_bytes(3, "little") + bytes([self.sequence])
            frames += part
            self.sequence = (self.sequence + 1) & 0xFF
            if len(part) < MAX_PAYLOAD:
                break
        self.sock.sendall(frames)


def lenenc_int(n: int) -> bytes:
    if n < 251:
        return bytes([n])
    if n < 1 << 16:
        return b"\xfc" + n.to_bytes(2, "little")
    if n < 1 << 24:
        return b"\xfd" + n.to_bytes(3, "little")
    return b"\xfe" + n.to_bytes(8, "little")


def lenenc_str(data: bytes) -> bytes:
    return lenenc_int(len(data)) + data


def read_lenenc_int(data: bytes, at: int) -> tuple[int, int]:
    first = data[at]
    if first < 251:
        return first, at + 1
    width = {0xFC: 2, 0xFD: 3, 0xFE: 8}[first]
    return int.from_bytes(data[at + 1 : at + 1 + width], "little"), at + 1 + width


def read_nul_str(data: bytes, at: int) -> tuple[bytes, int]:
    end = data.index(b"\x00", at)
    return data[at:end], end + 1


def ok_packet(affected: int = 0, status: int = SERVER_STATUS_AUTOCOMMIT, header: int = 0x00) -> bytes:
    return bytes([header]) + lenenc_int(affected) + lenenc_int(0) + struct.pack("<HH", status, 0)


def err_packet(code: int, sqlstate: str, message: str) -> bytes:
    return b"\xff" + struct.pack("<H", code) + b"#" + sqlstate.encode() + message.encode()


def eof_packet(status: int = SERVER_STATUS_AUTOCOMMIT) -> bytes:
    return b"\xfe" + struct.pack("<HH", 0, status)


def _column_definition(name: str, numeric: bool, charset: int) -> bytes:
    return (
        lenenc_str(b"def")
        + lenenc_str(b"")
        + lenenc_str(b"")
        + lenenc_str(b"")
        + lenenc_str(name.encode())
        + lenenc_str(name.encode())
        + b"\x0c"
        + struct.pack(
            "<HIBHB",
            BINARY_CHARSET if numeric else charset,
            21 if numeric else 1024,
            MYSQL_TYPE_LONGLONG if numeric else MYSQL_TYPE_VAR_STRING,
            0x80 if numeric else 0,
            0,
        )
        + b"\x00\x00"
    )


def write_result_set(
    client: PacketStream,
    columns: Sequence[str],
    rows: Sequence[Sequence[object]],
    capabilities: int,
    charset: int,
) -> None:
    """A text result set as the answer to a query (sequence ids from 1): an int column is
    a BIGINT, every other one a VARCHAR in the client's character set."""
    numeric = [bool(rows) and all(isinstance(r[i], int) for r in rows if r[i] is not None) for i in range(len(columns))]
    client.write(lenenc_int(len(columns)), sequence=1)
    for name, is_number in zip(columns, numeric, strict=True):
        client.write(_column_definition(name, is_number, charset))
    deprecate_eof = bool(capabilities & CLIENT_DEPRECATE_EOF)
    if not deprecate_eof:
        client.write(eof_packet())
    for row in rows:
        client.write(b"".join(b"\xfb" if v is None else lenenc_str(str(v).encode()) for v in row))
    client.write(ok_packet(header=0xFE) if deprecate_eof else eof_packet())
