"""What pyproject.toml cannot say yet but as an experiment: the C extensions, the row image
decoder's compiled loop, the replication packets' framing and frequent events' parsing,
the change fold's, and PostgreSQL's numeric dumper (binlog/row_image_decoder.py,
binlog/packet_frames.py, binlog/event_stream.py and event/change_fold.py keep the Python
code; psycopg's dumper stays the reference of sink/jdbc/pg_numeric.py)."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "sluice.binlog._row_images",
            sources=["spark-images/sluice/binlog/_row_images.c"],
            extra_compile_args=["-O2"],
        ),
        Extension(
            "sluice.binlog._event_parse",
            sources=["spark-images/sluice/binlog/_event_parse.c"],
            extra_compile_args=["-O2"],
        ),
        Extension(
            "sluice.binlog._packet_frames",
            sources=["spark-images/sluice/binlog/_packet_frames.c"],
            extra_compile_args=["-O2"],
        ),
        Extension(
            "sluice.event._change_fold",
            sources=["spark-images/sluice/event/_change_fold.c"],
            extra_compile_args=["-O2"],
        ),
        Extension(
            "sluice.sink.jdbc._pg_numeric",
            sources=["spark-images/sluice/sink/jdbc/_pg_numeric.c"],
            extra_compile_args=["-O2"],
        ),
    ]
)
