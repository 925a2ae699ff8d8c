"""The README's first command on a fresh, minimal Debian: `python -m tests.harness.fresh_debian`.

A minimal Debian (debootstrap's minbase variant, of the suite and from the mirror this
machine's apt uses) is made in a folder; the repository's files, as a clone has them, are
copied in; there, as root of that machine, `make` is installed (a minimal Debian lacks it,
the README says so) and `make demo` runs: it must install everything else itself (Python's
venv, a Java runtime, the servers, the compilers) and show the snapshot, the live changes
and the schema change. The folder is removed afterwards unless the run failed.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.harness.demo import demo_problems

REPO = Path(__file__).parents[2]
SOURCES = Path("/etc/apt/sources.list.d")


def apt_source() -> tuple[str, str]:
    """The suite and mirror this machine's apt reads Debian from (deb822 or one-line form)."""
    for path in sorted(SOURCES.glob("*.sources")):
        text = path.read_text()
        uri, suite = re.search(r"^URIs:\s*(\S+)", text, re.M), re.search(r"^Suites:\s*(\S+)", text, re.M)
        if uri and suite and "security" not in suite.group(1):
            return suite.group(1), uri.group(1)
    for path in [Path("/etc/apt/sources.list"), *sorted(SOURCES.glob("*.list"))]:
        if path.exists():
            for line in path.read_text().splitlines():
                words = line.split()
                if len(words) >= 3 and words[0] == "deb" and "security" not in words[2]:
                    return words[2], words[1]
    raise SystemExit("no Debian source in this machine's apt configuration")


def make_root(root: Path) -> None:
    suite, mirror = apt_source()
    _run(["debootstrap", "--variant=minbase", suite, str(root), mirror])
    root.chmod(0o755)  # as a machine's / is: services run as other users traverse it
    # Its name, resolvable as Debian's installer writes it (Spark's JVM looks its host up).
    name = os.uname().nodename
    (root / "etc/hostname").write_text(name + "\n")
    (root / "etc/hosts").write_text(f"127.0.0.1\tlocalhost\n127.0.1.1\t{name}\n::1\tlocalhost ip6-localhost\n")
    # The network's own trust anchors (a TLS-inspecting proxy's CA), as every machine on
    # this network has them: Debian's ca-certificates adds them when apt installs it.
    local = Path("/usr/local/share/ca-certificates")
    if local.is_dir():
        shutil.copytree(local, root / "usr/local/share/ca-certificates", dirs_exist_ok=True)


def copy_checkout(root: Path) -> Path:
    """The files a clone has (tracked, as they are in the work tree), at /src."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, check=True, capture_output=True).stdout
    source = root / "src"
    for name in filter(None, listed.decode().split("\0")):
        origin = REPO / name
        if origin.is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(origin, source / name)
    return source


@contextmanager
def mounted(root: Path) -> Iterator[None]:
    """/proc, /dev and name resolution, as a booted machine has them."""
    shutil.copy2("/etc/resolv.conf", root / "etc/resolv.conf")
    _run(["mount", "-t", "proc", "proc", str(root / "proc")])
    _run(["mount", "--rbind", "/dev", str(root / "dev")])
    try:
        yield
    finally:
        subprocess.run(["umount", "--lazy", str(root / "dev")], check=False)
        subprocess.run(["umount", "--lazy", str(root / "proc")], check=False)


def in_root(root: Path, command: str, timeout: float) -> str:
    """`command` run by root's shell in the fresh machine; its output, echoed as it comes."""
    environment = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root"}
    environment.update(LANG="C.UTF-8", DEBIAN_FRONTEND="noninteractive")
    process = subprocess.Popen(
        ["chroot", str(root), "/bin/sh", "-c", command],
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    said, deadline = [], time.monotonic() + timeout
    assert process.stdout is not None
    for line in process.stdout:
        said.append(line)
        sys.stdout.write(line)
        if time.monotonic() > deadline:
            process.kill()
            raise SystemExit(f"`{command}` took over {timeout:.0f}s on the fresh Debian")
    if process.wait() != 0:
        raise SystemExit(f"`{command}` failed on the fresh Debian (exit {process.returncode})")
    return "".join(said)


def _run(command: list[str]) -> None:
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, help="where the fresh Debian is made (default: a new temporary folder)")
    args = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("making a Debian root and chrooting into it needs root")
    root = args.root or Path(subprocess.check_output(["mktemp", "-d", "/tmp/sluice-debian-XXXX"], text=True).strip())
    started = time.monotonic()
    make_root(root)
    copy_checkout(root)
    print(f"a minimal Debian in {root} after {time.monotonic() - started:.0f}s; now the README's first command")
    with mounted(root):
        in_root(root, "apt-get update -qq && apt-get install -y -qq make >/dev/null", timeout=300)
        said = in_root(root, "cd /src && make demo", timeout=1500)
    problems = demo_problems(said)
    if problems:
        raise SystemExit("make demo on a fresh Debian: " + "; ".join(problems))
    print(f"make demo ran as the README says on a fresh Debian, in {time.monotonic() - started:.0f}s in all")
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
