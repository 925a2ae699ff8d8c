"""The two images install exactly what pyproject.toml declares (the Spark image less the
pyspark its base image brings, at the pinned version), leave no compiler in the final
layer, run as non-root, and put the driver where the SparkApplication looks for it. The
operator's image has no database drivers and no pyspark: the operator imports, and checks
a spec, with what its image installs."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import tomllib

from sluice_operator.spark_application import DRIVER, SPARK_VERSION

ROOT = Path(__file__).parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
COMPILERS = ("build-essential", "gcc", "g++", "clang", "make", "-dev")


def requirements(path: Path) -> set[str]:
    lines = (line.split("#")[0].strip() for line in path.read_text().splitlines())
    return {line for line in lines if line}


def name(requirement: str) -> str:
    return re.split(r"[\[<>=!~ ]", requirement, maxsplit=1)[0].lower()


def final_stage(dockerfile: Path) -> str:
    return re.split(r"^FROM ", dockerfile.read_text(), flags=re.MULTILINE)[-1]


def test_the_spark_image_installs_pyprojects_dependencies_and_the_spark_extra_less_pyspark():
    declared = set(PYPROJECT["dependencies"]) | set(PYPROJECT["optional-dependencies"]["spark"])
    pyspark = next(r for r in declared if name(r) == "pyspark")
    assert requirements(ROOT / "spark-images" / "requirements.txt") == declared - {pyspark}
    base = re.search(r"^ARG SPARK_IMAGE=spark:(\S+?)-", (ROOT / "spark-images" / "Dockerfile").read_text(), re.M)
    assert base and pyspark == f"pyspark=={base.group(1)}" and base.group(1) == SPARK_VERSION


# The core dependencies the operator's imports reach: the definition's YAML and time zones,
# and the transform SQL it checks in a CdcPipeline's spec.
OPERATOR_CORE = ("pyyaml", "tzdata", "sqlglot")
# The name each dependency is imported by.
IMPORTED_AS = {
    "pyyaml": "yaml",
    "pymysql": "pymysql",
    "mysqlclient": "MySQLdb",
    "mysql-replication": "pymysqlreplication",
    "psycopg": "psycopg",
    "sqlglot": "sqlglot",
    "prometheus-client": "prometheus_client",
    "tzdata": "tzdata",
    "zstandard": "zstandard",
    "pyspark": "pyspark",
    "pyarrow": "pyarrow",
    "pandas": "pandas",
    "kubernetes": "kubernetes",
    "pyiceberg": "pyiceberg",
    "deltalake": "deltalake",
    "pyroaring": "pyroaring",
}


def test_the_operator_image_installs_the_operator_extra_and_only_the_core_dependencies_it_imports():
    core = {r for r in PYPROJECT["dependencies"] if name(r) in OPERATOR_CORE}
    declared = core | set(PYPROJECT["optional-dependencies"]["operator"])
    assert requirements(ROOT / "operator" / "requirements.txt") == declared


def test_the_operator_checks_a_spec_without_database_drivers_or_pyspark():
    """It imports, and checks a CdcPipeline's spec as `sluice run` would, transforms and all
    (their SQL is parsed with sqlglot, which the image has)."""
    image = {name(r) for r in requirements(ROOT / "operator" / "requirements.txt")}
    everything = {name(r) for r in [*PYPROJECT["dependencies"], *PYPROJECT["optional-dependencies"]["spark"]]}
    blocked = sorted(IMPORTED_AS[n] for n in everything - image)  # what the image does not install
    assert {"pyspark", "pymysql", "MySQLdb", "psycopg"} <= set(blocked)
    spec = {
        "source": {"type": "mysql", "hostname": "db", "username": "cdc", "tables": "shop.orders"},
        "sink": {"type": "jdbc", "url": "postgresql://pg:5432/lake", "username": "writer"},
        "transform": [{"source-table": "shop.orders", "projection": "id, UPPER(name) AS name", "filter": "id > 0"}],
    }
    probe = textwrap.dedent(
        f"""
        import sys
        class Block:
            def find_spec(self, fullname, path=None, target=None):
                if fullname.split(".")[0] in {blocked!r}:
                    raise ImportError(f"{{fullname}} is not in the operator image")
        sys.meta_path.insert(0, Block())
        import sluice_operator.__main__, sluice_operator.handlers, sluice_operator.crd
        from sluice_operator.pipeline_spec import read_spec
        definition = read_spec("orders", "data", {spec!r}).check()
        assert definition.routing.transforms, definition
        """
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_final_layers_run_as_non_root_without_compilers():
    for dockerfile in (ROOT / "spark-images" / "Dockerfile", ROOT / "operator" / "Dockerfile"):
        final = final_stage(dockerfile)
        users = re.findall(r"^USER (\S+)", final, re.M)
        assert users and users[-1] not in ("root", "0"), dockerfile
        installs = " ".join(re.findall(r"apt-get install ([^\n\\]*)", final))
        assert not [c for c in COMPILERS if c in installs], (dockerfile, installs)


def test_the_driver_is_where_the_spark_application_runs_it():
    final = final_stage(ROOT / "spark-images" / "Dockerfile")
    assert f"COPY spark-images/driver.py {DRIVER.removeprefix('local://')}" in final


def test_the_spark_image_builds_every_compiled_module():
    """setup.py declares every C source as an extension; the build stage has it and a
    compiler. (The operator's image leaves them out: the operator decodes no binlog.)"""
    build = re.split(r"^FROM ", (ROOT / "spark-images" / "Dockerfile").read_text(), flags=re.MULTILINE)[1]
    copied = " ".join(re.findall(r"^COPY ([^\n]*)", build, re.M))
    assert "setup.py" in copied.split() and "build-essential" in build
    package = ROOT / "spark-images" / "sluice"
    sources = sorted(str(c.relative_to(package).with_suffix("")) for c in package.rglob("_*.c"))
    assert len(sources) == 5
    declared = (ROOT / "setup.py").read_text()
    assert [s for s in sources if f'"{s}"' not in declared] == []
