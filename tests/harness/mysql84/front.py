"""The MySQL 8.4 stand-in's front: a TCP server that greets a client as MySQL 8.4 (its
version, capability flags and collation), authenticates it with caching_sha2_password, logs
in to the MariaDB behind it as the same user, and then passes the client's commands there,
answering itself where MySQL 8.4 answers otherwise (statements.py). What rests on it and
what on a real server is said in docs/sources/mysql.md.

The binlog it serves is the MariaDB's, translated into MySQL 8.4's format (binlog.py,
dump.py)."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import re
import socket
import struct
import threading
from collections.abc import Iterator

from tests.harness.mysql84 import wire
from tests.harness.mysql84.auth import (
    CACHING_SHA2,
    FAST_AUTH_SUCCESS,
    NATIVE,
    PERFORM_FULL_AUTHENTICATION,
    REQUEST_PUBLIC_KEY,
    ServerKey,
    caching_sha2_scramble,
    native_scramble,
    nonce,
)
from tests.harness.mysql84.binlog import NotTranslatable, TranslatedBinlog
from tests.harness.mysql84.dump import BinlogDump, DumpRefused, DumpRequest
from tests.harness.mysql84.statements import Mysql84Settings, Mysql84Statements, Refusal, Rows
from tests.harness.services import MariaDB

log = logging.getLogger(__name__)

COM_QUIT, COM_QUERY, COM_BINLOG_DUMP, COM_BINLOG_DUMP_GTID = 0x01, 0x03, 0x12, 0x1E
# What a replica says of itself before a dump: it takes checksums; its heartbeat period (ns).
_CHECKSUM_AWARE = re.compile(r"@(?:master|source)_binlog_checksum\s*=\s*(?!'NONE')", re.IGNORECASE)
_HEARTBEAT = re.compile(r"@(?:master|source)_heartbeat_period\s*=\s*(\d+)", re.IGNORECASE)
UTF8MB4_0900_AI_CI = 255
UTF8MB4_GENERAL_CI = 45
# What MySQL 8.4 offers a client, less TLS (the stand-in speaks plaintext) and compression;
# the front offers what the MariaDB behind takes of these, so that packets pass unchanged.
MYSQL84_CAPABILITIES = (
    wire.CLIENT_LONG_PASSWORD
    | wire.CLIENT_FOUND_ROWS
    | wire.CLIENT_LONG_FLAG
    | wire.CLIENT_CONNECT_WITH_DB
    | wire.CLIENT_NO_SCHEMA
    | wire.CLIENT_ODBC
    | wire.CLIENT_LOCAL_FILES
    | wire.CLIENT_IGNORE_SPACE
    | wire.CLIENT_PROTOCOL_41
    | wire.CLIENT_INTERACTIVE
    | wire.CLIENT_TRANSACTIONS
    | wire.CLIENT_SECURE_CONNECTION
    | wire.CLIENT_MULTI_STATEMENTS
    | wire.CLIENT_MULTI_RESULTS
    | wire.CLIENT_PS_MULTI_RESULTS
    | wire.CLIENT_PLUGIN_AUTH
    | wire.CLIENT_CONNECT_ATTRS
    | wire.CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA
    | wire.CLIENT_SESSION_TRACK
    | wire.CLIENT_DEPRECATE_EOF
)


@contextlib.contextmanager
def mysql84_front(backend: MariaDB, settings: Mysql84Settings | None = None) -> Iterator[Mysql84Front]:
    """The stand-in in front of `backend`, its root the one account, for as long as the block runs."""
    front = Mysql84Front(backend, {backend.user: backend.password}, settings)
    try:
        yield front
    finally:
        front.close()
    assert not front.failures, f"the MySQL 8.4 stand-in failed: {front.failures}"


class AccessDenied(Exception):
    pass


class Mysql84Front:
    """Listens on 127.0.0.1:`port` for as long as it is open. `passwords`: the users it
    knows (each also a MariaDB user with the same password, mysql_native_password)."""

    def __init__(self, backend: MariaDB, passwords: dict[str, str], settings: Mysql84Settings | None = None) -> None:
        self.backend, self.passwords = backend, dict(passwords)
        self.settings = settings or Mysql84Settings()
        self.key = ServerKey()
        # Served from a file of its own on: the binlog before counts as purged (a session's
        # server has written much by then, and none of it is this stand-in's).
        self.ask("FLUSH BINARY LOGS")
        (first, *_), *_ = self.ask("SHOW MASTER STATUS")[1]
        self.binlog = TranslatedBinlog(backend.datadir, self.settings, first)
        self.cached: set[str] = set()  # users whose password the server cached (fast authentication)
        self.statements_seen: list[str] = []
        self.dumps: list[DumpRequest] = []  # the dump requests replicas sent
        self.authentications: list[tuple[str, str]] = []  # (user, "fast" | "full" | "denied")
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.host, self.port = "127.0.0.1", self._listener.getsockname()[1]
        self.failures: list[BaseException] = []  # what broke a session: a test's failure, not a quiet close
        self._open = True
        threading.Thread(target=self._accept, daemon=True, name="mysql84-front").start()

    def close(self) -> None:
        self._open = False
        self._listener.close()

    def server(self) -> MariaDB:
        """The stand-in as the tests reach a server: the MariaDB's handle, at the front's port."""
        return dataclasses.replace(self.backend, host=self.host, port=self.port)

    def flush_privileges(self) -> None:
        """FLUSH PRIVILEGES empties caching_sha2_password's cache: the next login is a full one."""
        self.cached.clear()

    def _accept(self) -> None:
        while self._open:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True, name="mysql84-session").start()

    def _serve(self, client_socket: socket.socket) -> None:
        client = wire.PacketStream(client_socket)
        try:
            with contextlib.closing(client_socket), self._backend() as (backend, greeting):
                session = _Session(self, client, backend, greeting)
                if session.login():
                    session.relay()
        except (ConnectionError, OSError):
            pass
        except Exception as exc:
            log.exception("the MySQL 8.4 stand-in failed a session")
            self.failures.append(exc)

    @contextlib.contextmanager
    def _backend(self) -> Iterator[tuple[wire.PacketStream, bytes]]:
        sock = socket.create_connection((self.backend.host, self.backend.port))
        with contextlib.closing(sock):
            stream = wire.PacketStream(sock)
            yield stream, stream.read()

    def ask(self, sql: str) -> Rows:
        """A query on the MariaDB behind, as its root."""
        conn = self.backend.connect()
        try:
            with conn.cursor() as cur:
                cur.execute(sql)
                return [d[0] for d in cur.description or ()], [tuple(r) for r in cur.fetchall()]
        finally:
            conn.close()


class _Session:
    def __init__(self, front: Mysql84Front, client: wire.PacketStream, backend: wire.PacketStream, greeting: bytes):
        self.front, self.client, self.backend = front, client, backend
        self.backend_greeting = _Greeting(greeting)
        self.capabilities = MYSQL84_CAPABILITIES & self.backend_greeting.capabilities
        self.salt = nonce()
        self.statements = Mysql84Statements(front.settings, front.ask, front.binlog)
        self.charset = UTF8MB4_GENERAL_CI
        self.checksum_aware = False
        self.heartbeat_seconds = 0.0

    # -- connection phase ------------------------------------------------------------------

    def login(self) -> bool:
        self.client.write(self._greeting(), sequence=0)
        response = _HandshakeResponse(self.client.read())
        self.statements.user = response.user
        self.capabilities &= response.capabilities
        self.charset = UTF8MB4_GENERAL_CI if response.charset >= UTF8MB4_0900_AI_CI else response.charset
        try:
            self._authenticate(response)
        except AccessDenied:
            self.front.authentications.append((response.user, "denied"))
            self.client.write(
                wire.err_packet(
                    1045, "28000", f"Access denied for user '{response.user}'@'localhost' (using password: YES)"
                )
            )
            return False
        return self._backend_login(response)

    def _greeting(self) -> bytes:
        caps = self.capabilities
        return (
            b"\x0a"
            + self.front.settings.version.encode()
            + b"\x00"
            + struct.pack("<I", threading.get_ident() & 0x7FFFFFFF)
            + self.salt[:8]
            + b"\x00"
            + struct.pack("<HBHH", caps & 0xFFFF, UTF8MB4_0900_AI_CI, wire.SERVER_STATUS_AUTOCOMMIT, caps >> 16)
            + bytes([len(self.salt) + 1])
            + b"\x00" * 10
            + self.salt[8:]
            + b"\x00"
            + CACHING_SHA2.encode()
            + b"\x00"
        )

    def _authenticate(self, response: _HandshakeResponse) -> None:
        """caching_sha2_password: fast when the user's password is cached, else full. A user
        of mysql_native_password (the server loads it: mysql_native_password=ON) is switched
        to it."""
        password = self.front.passwords.get(response.user)
        if password is None:
            raise AccessDenied
        if response.user in self.front.settings.native_users:
            if self.front.settings.variables["mysql_native_password"] != "ON":
                raise AccessDenied  # 8.4 without the plugin loaded: the account cannot log in
            self.client.write(b"\xfe" + NATIVE.encode() + b"\x00" + self.salt + b"\x00")
            if self.client.read() != native_scramble(password.encode(), self.salt):
                raise AccessDenied
            self.front.authentications.append((response.user, "native"))
            return
        scramble = response.auth
        if response.plugin != CACHING_SHA2:  # switched, as the server's default plugin asks
            self.client.write(b"\xfe" + CACHING_SHA2.encode() + b"\x00" + self.salt + b"\x00")
            scramble = self.client.read()
        if not password:
            if scramble not in (b"", b"\x00"):
                raise AccessDenied
            return
        if scramble != caching_sha2_scramble(password.encode(), self.salt):
            raise AccessDenied
        if response.user in self.front.cached:
            self.client.write(FAST_AUTH_SUCCESS)
            self.front.authentications.append((response.user, "fast"))
            return
        self.client.write(PERFORM_FULL_AUTHENTICATION)
        asked = self.client.read()
        if asked != REQUEST_PUBLIC_KEY:  # plaintext: only the RSA exchange carries the password
            raise AccessDenied
        self.client.write(b"\x01" + self.front.key.public_pem)
        if self.front.key.password(self.client.read(), self.salt) != password.encode():
            raise AccessDenied
        self.front.cached.add(response.user)
        self.front.authentications.append((response.user, "full"))

    def _backend_login(self, response: _HandshakeResponse) -> bool:
        """The same user into MariaDB; its answer (OK or ERR) is the client's."""
        caps = self.capabilities | wire.CLIENT_PROTOCOL_41 | wire.CLIENT_SECURE_CONNECTION | wire.CLIENT_PLUGIN_AUTH
        caps &= ~wire.CLIENT_CONNECT_ATTRS & ~wire.CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA
        if response.database:
            caps |= wire.CLIENT_CONNECT_WITH_DB
        scramble = native_scramble(self.front.passwords[response.user].encode(), self.backend_greeting.salt)
        payload = (
            struct.pack("<IIB", caps, wire.MAX_PAYLOAD, self.charset)
            + b"\x00" * 23
            + response.user.encode()
            + b"\x00"
            + bytes([len(scramble)])
            + scramble
            + ((response.database or "").encode() + b"\x00" if response.database else b"")
            + NATIVE.encode()
            + b"\x00"
        )
        self.backend.write(payload, sequence=1)
        answer = self.backend.read()
        if answer[:1] == b"\xfe":  # switched to another plugin: the stand-in's users are native
            plugin = answer[1:].split(b"\x00")[0].decode()
            raise ConnectionError(f"MariaDB asked {response.user} for another plugin: {plugin}")
        self.client.write(answer)
        return answer[:1] == b"\x00"

    # -- command phase ---------------------------------------------------------------------

    def relay(self) -> None:
        """The client's commands to MariaDB and its answers back, but for the commands MySQL
        8.4 answers otherwise. The protocol is request and answer, so while the front
        answers a query itself MariaDB has nothing to send."""
        pump = threading.Thread(target=self._pump, daemon=True, name="mysql84-answers")
        pump.start()
        while True:
            packet = self.client.read()
            command = packet[:1]
            if command == bytes([COM_QUIT]):
                self.backend.write(packet, sequence=0)
                return
            if command in (bytes([COM_BINLOG_DUMP]), bytes([COM_BINLOG_DUMP_GTID])):
                self._dump(packet)
                return
            if command == bytes([COM_QUERY]):
                sql = packet[1:].decode("utf-8", "replace")
                self.front.statements_seen.append(sql)
                self._replica_settings(sql)
                answer = self._answer(sql)
                if answer is not None:
                    self._send(answer)
                    continue
            self.backend.write(packet, sequence=0)

    def _replica_settings(self, sql: str) -> None:
        if _CHECKSUM_AWARE.search(sql):
            self.checksum_aware = True
        heartbeat = _HEARTBEAT.search(sql)
        if heartbeat:
            self.heartbeat_seconds = int(heartbeat.group(1)) / 1e9

    def _dump(self, packet: bytes) -> None:
        """The connection is the dump's from here on, as a replica's is."""
        try:
            if not self.checksum_aware:
                raise DumpRefused(
                    "Replica can not handle replication events with the checksum that source is configured to log"
                )
            request = DumpRequest.parse(packet)
            self.front.dumps.append(request)
            BinlogDump(self.front.binlog, self.client, self.front.settings.server_id).serve(
                request, self.heartbeat_seconds
            )
        except (DumpRefused, NotTranslatable) as exc:
            self.client.write(wire.err_packet(1236, "HY000", str(exc)))

    def _answer(self, sql: str) -> Rows | Refusal | None:
        try:
            return self.statements.answer(sql)
        except LookupError as exc:
            return Refusal(1105, "HY000", f"MySQL 8.4 stand-in: {exc}")

    def _send(self, answer: Rows | Refusal) -> None:
        if isinstance(answer, Refusal):
            self.client.write(wire.err_packet(answer.code, answer.sqlstate, answer.message), sequence=1)
            return
        columns, rows = answer
        wire.write_result_set(self.client, columns, rows, self.capabilities, self.charset)

    def _pump(self) -> None:
        """MariaDB's answers to the client, byte for byte."""
        source, target = self.backend.sock, self.client.sock
        try:
            while chunk := source.recv(65536):
                target.sendall(chunk)
        except OSError:
            pass
        with contextlib.suppress(OSError):
            target.shutdown(socket.SHUT_RDWR)


class _Greeting:
    """The MariaDB behind's handshake: what it can do and its scramble."""

    def __init__(self, packet: bytes) -> None:
        _, at = wire.read_nul_str(packet, 1)
        at += 4
        first = packet[at : at + 8]
        at += 9
        low = struct.unpack_from("<H", packet, at)[0]
        high = struct.unpack_from("<H", packet, at + 5)[0]
        self.capabilities = low | high << 16
        salt_length = packet[at + 7]
        at += 18
        rest = packet[at : at + max(13, salt_length - 8)]
        self.salt = first + rest.rstrip(b"\x00")[:12]


class _HandshakeResponse:
    """A client's HandshakeResponse41."""

    def __init__(self, packet: bytes) -> None:
        self.capabilities, _, self.charset = struct.unpack_from("<IIB", packet, 0)
        if not self.capabilities & wire.CLIENT_PROTOCOL_41:
            raise ConnectionError("a client older than protocol 4.1")
        user, at = wire.read_nul_str(packet, 32)
        self.user = user.decode()
        if self.capabilities & wire.CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA:
            length, at = wire.read_lenenc_int(packet, at)
        else:
            length, at = packet[at], at + 1
        self.auth, at = packet[at : at + length], at + length
        self.database = ""
        if self.capabilities & wire.CLIENT_CONNECT_WITH_DB and at < len(packet):
            database, at = wire.read_nul_str(packet, at)
            self.database = database.decode()
        self.plugin = ""
        if self.capabilities & wire.CLIENT_PLUGIN_AUTH and at < len(packet):
            plugin, at = wire.read_nul_str(packet, at)
            self.plugin = plugin.decode()
