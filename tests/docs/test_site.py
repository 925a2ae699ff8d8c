"""The documentation site builds strictly (no broken link, no page outside the nav), its
references are what the code gives now, the README stays a front page, and every error a
user can meet links to an entry of the troubleshooting page."""

from __future__ import annotations

import importlib
import os
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import sluice
from sluice.errors import TROUBLESHOOTING, SluiceError
from sluice.pipeline import option_tables, pipeline_options
from sluice.transform import functions
from sluice.transform.functions.summaries import SUMMARIES

ROOT = Path(__file__).resolve().parents[2]


def test_the_generated_references_are_current():
    checked = subprocess.run(
        [sys.executable, str(ROOT / "docs" / "generate.py"), "--check"], capture_output=True, text=True, cwd=ROOT
    )
    assert checked.returncode == 0, checked.stderr


def mkdocs_build(where: Path, site: Path) -> subprocess.CompletedProcess:
    """`mkdocs build --strict` of the mkdocs.yml in `where`, into `site`."""
    return subprocess.run(
        [str(Path(sys.executable).parent / "mkdocs"), "build", "--strict", "--site-dir", str(site)],
        capture_output=True,
        text=True,
        cwd=where,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )


def test_the_site_builds_strictly(tmp_path):
    built = mkdocs_build(ROOT, tmp_path / "site")
    assert built.returncode == 0, built.stderr[-3000:]
    assert (tmp_path / "site" / "reference" / "options" / "index.html").exists()


def test_a_broken_link_fails_the_build(tmp_path):
    """The check above can fail: a page linking to a page that is not there."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n\nSee [nothing](missing.md).\n")
    config = (ROOT / "mkdocs.yml").read_text().split("\nnav:")[0].replace("docs_dir: docs", f"docs_dir: {docs}")
    (tmp_path / "mkdocs.yml").write_text(config)
    built = mkdocs_build(tmp_path, tmp_path / "site")
    assert built.returncode != 0 and "missing.md" in built.stderr


def test_the_readme_is_a_front_page_linking_into_the_site():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    linked = re.findall(r"\]\((docs/[^)#]+)", readme)
    assert len(set(linked)) >= 15
    assert all((ROOT / link).is_file() for link in linked), [link for link in linked if not (ROOT / link).is_file()]


def test_every_option_and_function_is_described():
    options = [*option_tables.SOURCE_OPTIONS, *pipeline_options.PIPELINE_OPTIONS]
    options += [option for block in option_tables.SINK_OPTIONS.values() for option in block]
    assert [o.key for o in options if not o.description] == []
    names = {s.name for s in [*functions.SIGNATURES.values(), *functions.NAMED_SIGNATURES.values()]}
    assert sorted(names - set(SUMMARIES)) == [] and sorted(set(SUMMARIES) - names) == []


def _error_classes() -> set[type[SluiceError]]:
    for module in pkgutil.walk_packages(sluice.__path__, "sluice."):
        if not module.name.startswith("sluice.runtime.kubernetes_driver"):
            importlib.import_module(module.name)
    found, pending = set(), [SluiceError]
    while pending:
        kind = pending.pop()
        found.add(kind)
        pending += kind.__subclasses__()
    return found


def test_every_kind_of_error_has_its_troubleshooting_entry():
    page = (ROOT / TROUBLESHOOTING).read_text()
    anchors = set(re.findall(r"\{#([a-z-]+)\}", page))
    kinds = _error_classes()
    assert len(kinds) >= 15
    missing = {kind.__name__: kind.troubleshooting for kind in kinds if kind.troubleshooting not in anchors | {""}}
    assert missing == {}
    unlinked = sorted(k.__name__ for k in kinds if not k.troubleshooting and k is not SluiceError)
    assert unlinked == [], "each kind of error names its entry"
