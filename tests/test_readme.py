"""The README tells the truth on the user's path: its commands run as printed.

The first command block (install + demo build) and the "Everyday commands" and Neo4j blocks are
read from README.md itself, so a command that changes or disappears in the code fails here
before a newcomer meets it.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytest.register_assert_rewrite("neo4j_fixtures")

from neo4j_fixtures import free_port, neo4j_env, wipe  # noqa: E402

pytest_plugins = ["neo4j_fixtures"]  # neo4j_conn, neo4j_driver

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
pytestmark = pytest.mark.slow


def _blocks() -> list[tuple[str, list[str]]]:
    """Each fenced block of shell lines, with the heading it sits under."""
    out, heading = [], ""
    parts = re.split(r"^```([^\n]*)\n(.*?)^```$", README, flags=re.S | re.M)
    for i in range(0, len(parts), 3):
        headings = re.findall(r"^#+ (.+)$", parts[i], flags=re.M)
        heading = headings[-1] if headings else heading
        if i + 2 < len(parts) and not parts[i + 1].strip():  # no language: shell lines
            out.append((heading, [line for line in parts[i + 2].splitlines() if line.strip()]))
    return out


def _commands(heading: str) -> list[list[str]]:
    for title, lines in _blocks():
        if title == heading:
            return [shlex.split(line, comments=True) for line in lines if line.startswith("kg ")]
    raise AssertionError(f"README has no command block under {heading!r}")


def _kg(argv: list[str], cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kg", *argv[1:]], cwd=cwd, capture_output=True,
                          text=True, timeout=600, env={**os.environ, **(env or {})}, check=False)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    """A user's checkout after the README's first command: the demo built into exports/."""
    work = tmp_path_factory.mktemp("readme")
    for name in ("examples", "tests", "sparql", "cypher"):
        (work / name).symlink_to(ROOT / name)
    first = _blocks()[0][1][0]
    build = shlex.split(first.split("&&")[-1].strip())
    assert build[0].endswith("kg") and build[1] == "build", first
    done = _kg(["kg", *build[1:]], work)
    assert done.returncode == 0, done.stderr
    assert (work / "exports" / "graph.html").is_file()
    return work


def _serve(argv: list[str], cwd: Path) -> None:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "kg", *argv[1:], "--port", str(port)],
                            cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        url = f"http://127.0.0.1:{port}/sparql?query=ASK%7B%3Fs%20%3Fp%20%3Fo%7D"
        for _ in range(300):
            try:
                with urllib.request.urlopen(url, timeout=5) as reply:
                    assert reply.status == 200
                    return
            except OSError:
                assert proc.poll() is None, proc.stderr.read().decode()
                time.sleep(0.1)
        raise AssertionError(f"{shlex.join(argv)} did not answer on port {port}")
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_every_everyday_command_in_the_readme_runs_as_printed(workspace):
    commands = _commands("Everyday commands")
    assert len(commands) >= 10
    for argv in commands:
        if argv[1] == "serve":
            _serve(argv, workspace)
            continue
        done = _kg(argv, workspace)
        assert done.returncode == 0, f"{shlex.join(argv)}\n{done.stderr[-2000:]}"


def test_the_readme_commands_reading_other_formats_run_as_printed(workspace):
    commands = _commands("Reading the dumps you have")
    assert len(commands) >= 3
    for argv in commands:
        done = _kg(argv, workspace)
        assert done.returncode == 0, f"{shlex.join(argv)}\n{done.stderr[-2000:]}"
        assert done.stdout.strip() or "wrote" in done.stderr, shlex.join(argv)


def test_the_readme_trends_commands_run_on_the_conference_files(workspace, corpora_dir):
    commands = _commands("Techniques over time")
    for argv in commands:
        argv = [a.replace("../shared/corpora", str(corpora_dir)) for a in argv]
        done = _kg(argv, workspace)
        assert done.returncode == 0, f"{shlex.join(argv)}\n{done.stderr[-2000:]}"
    assert (workspace / "corl" / "rising.html").stat().st_size > 1000


def test_the_readme_neo4j_commands_run_as_printed(workspace, neo4j_driver, neo4j_conn):
    wipe(neo4j_driver, neo4j_conn)
    for _title, lines in _blocks():
        if any(line.startswith("kg neo4j") for line in lines):
            commands = [shlex.split(line, comments=True) for line in lines]
            break
    else:
        raise AssertionError("README shows no `kg neo4j` block")
    for argv in commands:
        done = _kg(argv, workspace, neo4j_env(neo4j_conn))
        assert done.returncode == 0, f"{shlex.join(argv)}\n{done.stderr[-2000:]}"
        assert done.stdout.strip(), shlex.join(argv)


def test_the_help_quick_start_is_a_subset_of_the_readme():
    done = subprocess.run([sys.executable, "-m", "kg", "--help"], capture_output=True, text=True,
                          check=True)
    quick = done.stdout.split("Quick start", 1)[1].split("\n\n", 1)[0]
    shown = [line.strip() for line in quick.splitlines()[1:] if line.strip().startswith("kg ")]
    assert shown
    readme = {shlex.join(shlex.split(line, comments=True))
              for _, lines in _blocks() for line in lines if line.startswith("kg ")}
    for line in shown:
        assert shlex.join(shlex.split(line, comments=True)) in readme, line
