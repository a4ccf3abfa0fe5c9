"""Fixtures for the tests that need a real Neo4j (start one with scripts/neo4j-test-server).

The server comes from NEO4J_URI / NEO4J_USER / NEO4J_PASSWORD / NEO4J_DATABASE (source
``.neo4j/env`` after ``scripts/neo4j-test-server start``). Without it the tests skip, saying why
— unless KG_REQUIRE_SERVICES=1 (CI), where a missing or unreachable server fails them.

Import the fixtures into a test module: ``from neo4j_fixtures import neo4j_conn, neo4j_db``.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from kg.errors import ServiceError
from kg.neo4j import Connection, connect

ROOT = Path(__file__).resolve().parent.parent


def _unavailable(reason: str):
    if os.environ.get("KG_REQUIRE_SERVICES") == "1":
        pytest.fail(f"Neo4j is required (KG_REQUIRE_SERVICES=1) but {reason}", pytrace=False)
    pytest.skip(f"no Neo4j: {reason} (run scripts/neo4j-test-server start; . .neo4j/env)")


@pytest.fixture(scope="session")
def neo4j_conn():
    """The test server's Connection, verified reachable with the given credentials."""
    if not os.environ.get("NEO4J_URI"):
        _unavailable("NEO4J_URI is not set")
    conn = Connection.from_env()
    try:
        connect(conn, timeout=5).close()
    except ServiceError as exc:
        _unavailable(str(exc))
    return conn


@pytest.fixture(scope="session")
def neo4j_driver(neo4j_conn):
    driver = connect(neo4j_conn)
    yield driver
    driver.close()


def wipe(driver, conn) -> None:
    """Delete every node and relationship (the test server is throw-away)."""
    with driver.session(database=conn.database) as session:
        session.run("MATCH (n) CALL { WITH n DETACH DELETE n } IN TRANSACTIONS OF 5000 ROWS"
                    ).consume()


@pytest.fixture
def neo4j_db(neo4j_driver, neo4j_conn):
    """An empty database and a session on it; yields ``(session, conn)``."""
    wipe(neo4j_driver, neo4j_conn)
    with neo4j_driver.session(database=neo4j_conn.database) as session:
        yield session, neo4j_conn


def free_port() -> int:
    """A local TCP port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run_kg(*args: str, env: dict[str, str] | None = None, cwd: Path = ROOT
           ) -> subprocess.CompletedProcess:
    """Run the real ``kg`` CLI in a subprocess (as a user would)."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run([sys.executable, "-m", "kg", *args], capture_output=True, text=True,
                          env=full_env, cwd=cwd, timeout=600, check=False)


def neo4j_env(conn) -> dict[str, str]:
    return {"NEO4J_URI": conn.uri, "NEO4J_USER": conn.user, "NEO4J_PASSWORD": conn.password,
            "NEO4J_DATABASE": conn.database}
