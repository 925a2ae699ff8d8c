"""What pyproject.toml cannot say yet but as an experiment: the C extension, the row image
decoder's compiled loop (binlog/row_image_decoder.py keeps the Python one)."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "sluice.binlog._row_images",
            sources=["spark-images/sluice/binlog/_row_images.c"],
            extra_compile_args=["-O2"],
        )
    ]
)
