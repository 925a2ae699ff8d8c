"""What pyproject.toml cannot say yet but as an experiment: the C extensions, the row image
decoder's compiled loop and the change fold's (binlog/row_image_decoder.py and
event/change_fold.py keep the Python ones)."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "sluice.binlog._row_images",
            sources=["spark-images/sluice/binlog/_row_images.c"],
            extra_compile_args=["-O2"],
        ),
        Extension(
            "sluice.event._change_fold",
            sources=["spark-images/sluice/event/_change_fold.c"],
            extra_compile_args=["-O2"],
        ),
    ]
)
