"""Where a user-defined function's code comes from: a module on the import path (the image's,
the definition file's directory, `python-files`), or the entry's own `python-code`, as
Flink CDC's Python UDFs take it. Sluice calls them in its own interpreter: a
`python-executable` must be a Python of the same version, or the code could mean
something else there than where it was written for."""

from __future__ import annotations

import functools
import hashlib
import shutil
import subprocess
import sys
import tempfile
import types
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sluice.errors import DefinitionError


def on_import_path(where: str, files: Sequence[str], search_path: str = "") -> None:
    """`python-files` (directories, or .zip archives extracted first, as Flink CDC does) and
    the definition file's directory, added to the import path once a process."""
    for entry in (*files, search_path):
        if not entry:
            continue
        directory = _directory_of(where, entry)
        if directory not in sys.path:
            sys.path.append(directory)


def _directory_of(where: str, entry: str) -> str:
    path = Path(entry)
    if path.is_dir():
        return str(path)
    if path.is_file() and zipfile.is_zipfile(path):
        return _extracted(str(path.resolve()), path.stat().st_mtime_ns)
    raise DefinitionError(f"{where}: python-files: {entry} is not a directory or a .zip archive")


@functools.cache
def _extracted(archive: str, modified: int) -> str:
    """The archive's files in a directory of their own (extension modules cannot be
    imported from inside an archive); once a process and version of the archive."""
    digest = hashlib.sha256(f"{archive}:{modified}".encode()).hexdigest()[:16]
    target = Path(tempfile.gettempdir()) / "sluice-python-files" / digest
    if not target.is_dir():
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix="staging-", dir=target.parent))
        with zipfile.ZipFile(archive) as zipped:
            zipped.extractall(staging)
        try:
            staging.rename(target)
        except OSError:  # another process of this machine extracted it first
            shutil.rmtree(staging, ignore_errors=True)
    return str(target)


def checked_executable(where: str, executable: str) -> None:
    """Refuses a python-executable that is not a Python of this interpreter's version."""
    if executable:
        _check_executable(where, executable)


@functools.cache
def _check_executable(where: str, executable: str) -> None:
    """Once a process: a Spark task loads the functions anew (its end closes them)."""
    mine = f"{sys.version_info.major}.{sys.version_info.minor}"
    try:
        said = subprocess.run(
            [executable, "-c", "import sys; print(f'{sys.version_info.major}.{sys.version_info.minor}')"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        raise DefinitionError(f"{where}: python-executable {executable} does not run: {exc}") from None
    if said != mine:
        raise DefinitionError(
            f"{where}: python-executable {executable} is Python {said}; Sluice calls functions in its own Python "
            f"{mine}: name that one, or leave python-executable out"
        )


def inline_eval(where: str, name: str, code: str) -> Any:
    """The top-level eval of `python-code`, run as a module of its own."""
    module = types.ModuleType(f"sluice_udf_{name}")
    try:
        compiled = compile(code, f"<python-code of {name}>", "exec")
    except SyntaxError as exc:
        raise DefinitionError(f"{where}: the code does not compile: SyntaxError: {exc}") from None
    try:
        exec(compiled, module.__dict__)  # noqa: S102 - the pipeline's own code, as Flink CDC runs it
    except Exception as exc:  # noqa: BLE001 - whatever the code's top level raised, named
        raise DefinitionError(f"{where}: the code failed to run: {type(exc).__name__}: {exc}") from exc
    function = module.__dict__.get("eval")
    if not callable(function):
        raise DefinitionError(f"{where}: the code has no top-level eval function")
    return function
