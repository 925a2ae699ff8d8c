"""What pyproject.toml cannot say yet but as an experiment: the C extensions, the row image
decoder's compiled loop, the replication packets' framing and frequent events' parsing,
the change fold's, and PostgreSQL's numeric dumper (binlog/rows/row_image_decoder.py,
binlog/protocol/packet_frames.py, binlog/protocol/event_stream.py and event/change_fold.py keep the Python
code; psycopg's dumper stays the reference of sink/jdbc/pg_numeric.py)."""

from pathlib import Path

from setuptools import Extension, setup

# Each module, with the other C files it is built from (a module over about 500 lines is split by concept).
COMPILED = {
    "binlog/rows/_row_images": ["binlog/rows/row_values"],
    "binlog/protocol/_event_parse": [],
    "binlog/protocol/_packet_frames": [],
    "event/_change_fold": [],
    "sink/jdbc/_pg_numeric": [],
}

LIBRARIES = {"binlog/protocol/_event_parse": ["z"]}  # zlib's crc32: the events' checksums

setup(
    ext_modules=[
        Extension(
            "sluice." + path.replace("/", "."),
            sources=[f"spark-images/sluice/{source}.c" for source in (path, *more)],
            depends=[str(header) for header in Path("spark-images/sluice", path).parent.glob("*.h")],
            extra_compile_args=["-O2"],
            libraries=LIBRARIES.get(path, []),
        )
        for path, more in COMPILED.items()
    ]
)
