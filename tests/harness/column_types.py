"""Columns of every type the source has, and random values for them, edges included: what
the decoder and sink tests write to the source."""

from __future__ import annotations

import random
import uuid
from datetime import date, datetime, timedelta

ENUM_MEMBERS = [f"m{i}" for i in range(300)]  # more than 255: a two-byte index
SET_MEMBERS = [f"s{i}" for i in range(64)]  # sixty-four: an eight-byte mask

# name -> type; random_value() makes the values
COLUMNS: dict[str, str] = {
    "ti": "TINYINT",
    "tu": "TINYINT UNSIGNED",
    "su": "SMALLINT UNSIGNED",
    "mi": "MEDIUMINT",
    "mu": "MEDIUMINT UNSIGNED",
    "i": "INT",
    "bi": "BIGINT",
    "bu": "BIGINT UNSIGNED",
    "f": "FLOAT",
    "d": "DOUBLE",
    "d65": "DECIMAL(65,30)",
    "d10": "DECIMAL(10,10)",
    "d1": "DECIMAL(1,0)",
    "d18": "DECIMAL(18,9)",
    "d12": "DECIMAL(12,2)",
    "d7": "DECIMAL(7,3)",
    "b1": "BIT(1)",
    "b17": "BIT(17)",
    "b64": "BIT(64)",
    "y": "YEAR",
    "dt": "DATE",
    "dtm0": "DATETIME",
    "dtm1": "DATETIME(1)",
    "dtm4": "DATETIME(4)",
    "dtm6": "DATETIME(6)",
    "ts0": "TIMESTAMP NULL",
    "ts3": "TIMESTAMP(3) NULL",
    "ts6": "TIMESTAMP(6) NULL",
    "tm0": "TIME",
    "tm1": "TIME(1)",
    "tm3": "TIME(3)",
    "tm5": "TIME(5)",
    "tm6": "TIME(6)",
    "c": "CHAR(100)",  # 400 bytes in utf8mb4: a two-byte length
    "cl": "CHAR(3) CHARACTER SET latin1",
    "vc": "VARCHAR(20)",
    "vl": "VARCHAR(300) CHARACTER SET latin1",
    "v16": "VARCHAR(20) CHARACTER SET utf16",  # two- and four-byte units: charsets Python names otherwise
    "t32": "TEXT CHARACTER SET utf32",
    "vu2": "VARCHAR(20) CHARACTER SET ucs2",
    "tt": "TINYTEXT",
    "mt": "MEDIUMTEXT",
    "bn": "BINARY(3)",
    "vb": "VARBINARY(300)",
    "lb": "LONGBLOB",
    "e": f"ENUM({', '.join(repr(m) for m in ENUM_MEMBERS)})",
    "s": f"SET({', '.join(repr(m) for m in SET_MEMBERS)})",
    "s2": "SET('x', 'y', 'z', 'w', 'v', 'u', 't', 'r', 'q')",
    "j": "JSON",
    "g": "GEOMETRY",
    "pt": "POINT",
    "ls": "LINESTRING",
    "pg": "POLYGON REF_SYSTEM_ID=4326",
    "mp": "MULTIPOINT",
    "ml": "MULTILINESTRING",
    "mg": "MULTIPOLYGON",
    "gc": "GEOMETRYCOLLECTION",
    "nv": "NATIONAL VARCHAR(10)",
    "nc": "NCHAR(5)",
    "zf": "INT(8) UNSIGNED ZEROFILL",
    "fmd": "FLOAT(7,3)",
    "vbn": "VARCHAR(10) BINARY",
    "vcb": "VARCHAR(10) COLLATE utf8mb4_bin",
    "sw7": "VARCHAR(20) CHARACTER SET swe7",  # character sets Python has no codec for
    "kb2": "VARCHAR(20) CHARACTER SET keybcs2",
    "vz": "VARCHAR(500) COMPRESSED",  # MariaDB's compressed columns: types of their own in the binlog
    "bz": "BLOB COMPRESSED",
    "ip4": "INET4",
    "ip6": "INET6",
    "uid": "UUID",
}

SPATIAL = {  # column: its values as well-known text, from a maker of coordinates
    "g": lambda xy: f"POINT({xy()})",
    "pt": lambda xy: f"POINT({xy()})",
    "ls": lambda xy: f"LINESTRING({xy()}, {xy()}, {xy()})",
    "pg": lambda xy: "POLYGON((0 0, 10 0, 10 10, 0 10, 0 0), (2 2, 3 2, 3 3, 2 2))",
    "mp": lambda xy: f"MULTIPOINT({xy()}, {xy()})",
    "ml": lambda xy: f"MULTILINESTRING(({xy()}, {xy()}), ({xy()}, {xy()}))",
    "mg": lambda xy: "MULTIPOLYGON(((0 0, 1 0, 1 1, 0 0)), ((5 5, 6 5, 6 6, 5 5)))",
    "gc": lambda xy: f"GEOMETRYCOLLECTION(POINT({xy()}), LINESTRING({xy()}, {xy()}))",
}
TEXT = "aZ09 _-'\"\\%éüß€\x81漢字🎉\x00"  # NUL too: legal in MySQL, not in PostgreSQL text
LATIN1 = "aZ09 _-'\"\\%éüß€\x81\xff"
SWE7 = "aZ09 _-'\"%ÉÄÖÅÜéäöåü"
KEYBCS2 = "aZ09 _-'\"\\%ČüéďŠžÝ░▒αß≈√²"


def random_decimal(rng: random.Random, precision: int, scale: int) -> str:
    digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, precision)))
    digits = digits.rjust(scale + 1, "0")
    whole, frac = digits[: len(digits) - scale] or "0", digits[len(digits) - scale :]
    sign = rng.choice(["", "-"])
    return f"{sign}{whole}.{frac}" if scale else f"{sign}{whole}"


def _time(rng: random.Random, fsp: int) -> str:
    micros = rng.randint(0, 838 * 3600 + 59 * 60 + 59) * 10**6
    if fsp:
        micros += rng.randint(0, 10**fsp - 1) * 10 ** (6 - fsp)
    sign = rng.choice(["", "-"])
    seconds, micros = divmod(micros, 10**6)
    return f"{sign}{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}.{micros:06d}"


def _datetime(rng: random.Random, first: datetime, last: datetime, fsp: int) -> str:
    moment = first + timedelta(seconds=rng.randint(0, int((last - first).total_seconds())))
    micros = rng.randint(0, 10**fsp - 1) * 10 ** (6 - fsp) if fsp else 0
    return f"{moment:%Y-%m-%d %H:%M:%S}.{micros:06d}"


def _text(rng: random.Random, alphabet: str, length: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, length)))


def random_value(rng: random.Random, name: str) -> object:
    """A value for column `name`, as a query parameter (None: NULL), edges included."""
    if rng.random() < 0.15:
        return None
    integers = {
        "ti": (-128, 127),
        "tu": (0, 255),
        "su": (0, 65535),
        "mi": (-(2**23), 2**23 - 1),
        "mu": (0, 2**24 - 1),
        "i": (-(2**31), 2**31 - 1),
        "bi": (-(2**63), 2**63 - 1),
        "bu": (0, 2**64 - 1),
        "b1": (0, 1),
        "b17": (0, 2**17 - 1),
        "b64": (0, 2**64 - 1),
    }
    if name in integers:
        low, high = integers[name]
        return rng.choice([low, high, 0, rng.randint(low, high)])
    if name == "f":
        return rng.choice(
            [0.0, -1.5e38, 3.4e38, rng.uniform(-1e6, 1e6), rng.uniform(-1, 1) * 10 ** rng.randint(-30, 30)]
        )
    if name == "d":
        return rng.choice([0.0, -0.0, 1e-300, rng.uniform(-1e300, 1e300), rng.uniform(-1, 1)])
    decimals = {"d65": (65, 30), "d10": (10, 10), "d1": (1, 0), "d18": (18, 9), "d12": (12, 2), "d7": (7, 3)}
    if name in decimals:
        return random_decimal(rng, *decimals[name])
    if name == "y":
        return rng.choice([1901, 2155, rng.randint(1901, 2155)])
    dated = name in ("dt", "ts0", "ts3", "ts6") or name.startswith("dtm")
    if dated and rng.random() < 0.15:  # what legacy schemas hold: zero and partial dates
        day = rng.choice(["0000-00-00", "2020-00-15", "2021-03-00"] if not name.startswith("ts") else ["0000-00-00"])
        return day if name == "dt" else f"{day} 00:00:00"
    if name == "dt":
        return str(date(1000, 1, 1) + timedelta(days=rng.randint(0, 3_287_181)))
    if name.startswith("dtm"):
        return _datetime(rng, datetime(1000, 1, 1), datetime(9999, 12, 31, 23, 59, 59), int(name[3:]))
    if name.startswith("ts"):
        return _datetime(rng, datetime(1970, 1, 2), datetime(2038, 1, 18), int(name[2:]))
    if name.startswith("tm"):
        return _time(rng, int(name[2:]))
    strings = {"c": (TEXT, 100), "cl": (LATIN1, 3), "vc": (TEXT, 20), "vl": (LATIN1, 300), "tt": (TEXT, 60)}
    strings |= {"v16": (TEXT, 20), "t32": (TEXT, 200), "vu2": (TEXT.replace("🎉", ""), 20)}  # UCS-2: no emoji
    strings |= {"nv": (TEXT.replace("🎉", ""), 10), "nc": (TEXT.replace("🎉", ""), 5)}  # NATIONAL: utf8mb3
    strings |= {"vbn": (TEXT, 10), "vcb": (TEXT, 10), "sw7": (SWE7, 20), "kb2": (KEYBCS2, 20)}
    if name in strings:
        text = _text(rng, *strings[name])
        return text.rstrip(" ") if name.startswith("c") else text  # CHAR drops trailing spaces
    if name == "mt":
        return _text(rng, TEXT, 3000)
    if name in ("bn", "vb", "lb"):
        return rng.randbytes(rng.randint(0, {"bn": 3, "vb": 300, "lb": 5000}[name]))
    if name == "e":
        return rng.choice(ENUM_MEMBERS)
    if name == "s":
        return ",".join(rng.sample(SET_MEMBERS, rng.randint(0, 64)))
    if name == "s2":
        return ",".join(rng.sample("xyzwvutrq", rng.randint(0, 9)))
    if name == "j":
        return rng.choice(['{"a": [1, 2.5, null, true]}', "[]", '"text"', "12", '{"k": {"n": "é"}}'])
    if name in SPATIAL:
        return SPATIAL[name](lambda: f"{rng.randint(-180, 180)} {rng.randint(-90, 90)}")
    if name == "zf":
        return rng.choice([0, 1, 99999999, 2**32 - 1, rng.randint(0, 2**32 - 1)])
    if name == "fmd":
        return rng.choice([0.0, -9999.999, 9999.999, round(rng.uniform(-9999, 9999), 3)])
    if name == "vz":  # stored compressed when that is shorter, as is otherwise
        return rng.choice([_text(rng, TEXT, 40), _text(rng, TEXT, 5) * rng.randint(1, 100)])[:500]
    if name == "bz":
        return rng.choice([rng.randbytes(rng.randint(0, 300)), rng.randbytes(3) * rng.randint(1, 2000)])
    if name == "ip4":
        return ".".join(str(rng.choice([0, 255, rng.randrange(256)])) for _ in range(4))
    if name == "ip6":
        return ":".join(f"{rng.choice([0, 0, 1, 0xFFFF, rng.randrange(65536)]):x}" for _ in range(8))
    if name == "uid":
        return str(uuid.UUID(int=rng.getrandbits(128), version=rng.choice([1, 4])))  # MariaDB checks the variant
    raise AssertionError(name)


def placeholder(name: str) -> str:
    """The SQL for a parameter of column `name` (geometry goes in as text)."""
    return "ST_GeomFromText(%s)" if name in SPATIAL else "%s"


def create_every_type_table(mariadb, database: str) -> tuple[str, str]:  # noqa: ANN001 - a harness MariaDB
    """Table every_type (id, then a column of each type in COLUMNS), and the statements that
    insert a row of it and update one by id (placeholders for random_value's values)."""
    names = list(COLUMNS)
    mariadb.execute(
        f"CREATE TABLE every_type (id INT PRIMARY KEY, {', '.join(f'{n} {t}' for n, t in COLUMNS.items())})",
        database=database,
    )
    insert = f"INSERT INTO every_type (id, {', '.join(names)}) VALUES (%s, {', '.join(placeholder(n) for n in names)})"
    update = f"UPDATE every_type SET {', '.join(f'{n} = {placeholder(n)}' for n in names)} WHERE id = %s"
    return insert, update
