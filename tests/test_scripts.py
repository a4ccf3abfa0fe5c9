"""The scripts and docs a user follows: exports/README.md, import.sh, scripts/test."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys

import pytest
from conftest import ROOT, SEED

from kg.neo4j import SCHEMA, write_admin_csvs


def _kg(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "kg", *args], cwd=ROOT, check=True,
                   capture_output=True)


def test_every_path_in_the_exports_readme_is_written_by_the_commands_it_names(tmp_path):
    table = (ROOT / "exports" / "README.md").read_text(encoding="utf-8")
    listed = {name for line in table.splitlines() if line.startswith("| `")
              for name in re.findall(r"`([^`\s]+)`", line.split("|")[1])}
    assert {"neo4j-admin/", "graph.cypher", "graph.nt"} <= listed
    _kg("build", str(SEED), "-o", str(tmp_path))
    _kg("export", str(tmp_path), "--format", "cypher", "-o", str(tmp_path))
    _kg("export", str(tmp_path), "--format", "neo4j-admin", "-o", str(tmp_path))
    missing = [name for name in sorted(listed) if not (tmp_path / name).exists()]
    assert missing == []


def test_import_sh_prints_the_schema_it_tells_the_user_to_create(seed_corpus, tmp_path):
    write_admin_csvs(seed_corpus, tmp_path)
    script = tmp_path / "import.sh"
    assert "graph.cypher" not in script.read_text()  # a file this export does not write
    out = subprocess.run(["bash", str(script), "--schema"], capture_output=True, text=True,
                         check=True)
    assert out.stdout.splitlines() == [f"{s};" for s in SCHEMA]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_scripts_test_uses_kg_neo4j_state_and_keeps_the_password_and_colours_out(tmp_path):
    if not shutil.which("java") or not (
            ROOT / "scripts" / "neo4j-harness" / "target" / "classpath.txt").is_file():
        reason = "the Neo4j tools are not fetched (scripts/neo4j-test-server fetch)"
        if os.environ.get("KG_REQUIRE_SERVICES") == "1":
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEO4J_")}
    env.update(KG_NEO4J_STATE=str(tmp_path / "state"), NEO4J_PORT=str(_free_port()),
               NEO4J_TEST_PASSWORD="not-in-the-log-42", PY=sys.executable)
    # A one-test run that needs Neo4j: it passes only if scripts/test exported the server's env.
    check = tmp_path / "test_env.py"
    check.write_text("import os\n\ndef test_env():\n"
                     "    assert os.environ['NEO4J_PASSWORD'] == 'not-in-the-log-42'\n")
    out = subprocess.run(["bash", str(ROOT / "scripts" / "test"), str(check), "-q", "-p",
                          "no:cacheprovider"], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=600)
    log = out.stdout + out.stderr
    assert out.returncode == 0, log
    assert "1 passed" in log
    assert "not-in-the-log-42" not in log and "NEO4J_PASSWORD" not in log
    assert "\x1b[" not in log
