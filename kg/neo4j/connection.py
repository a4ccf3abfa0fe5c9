"""Where Neo4j is, an open driver, and the driver's errors as one-line KgErrors.

The ``neo4j`` driver is imported inside the functions that use it, never at module top: the
import takes about 0.2 s, which `kg --help`, `kg export` and every command that never talks
to a server should not pay.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass

from kg.errors import KgError, QueryError, ServiceError
from kg.text import shorten

DEFAULT_URI = "bolt://127.0.0.1:7687"
BOLT_SCHEMES = ("bolt", "bolt+s", "bolt+ssc", "neo4j", "neo4j+s", "neo4j+ssc")


@dataclass(frozen=True)
class Connection:
    """Where Neo4j is: from options, else NEO4J_URI / NEO4J_USER / NEO4J_PASSWORD / NEO4J_DATABASE.

    >>> Connection.from_env(uri="bolt://127.0.0.1:17687", user="neo4j", password="x").database
    'neo4j'
    """

    uri: str = DEFAULT_URI
    user: str = "neo4j"
    password: str = ""
    database: str = "neo4j"

    @classmethod
    def from_env(cls, uri: str | None = None, user: str | None = None,
                 password: str | None = None, database: str | None = None) -> Connection:
        env = os.environ
        return cls(uri=uri or env.get("NEO4J_URI") or DEFAULT_URI,
                   user=user or env.get("NEO4J_USER") or "neo4j",
                   password=password if password is not None else env.get("NEO4J_PASSWORD", ""),
                   database=database or env.get("NEO4J_DATABASE") or "neo4j")


def connect(conn: Connection, *, timeout: float = 10.0):
    """An open, verified ``neo4j.Driver``; unreachable server or bad credentials → ServiceError."""
    import neo4j  # (lazy: the driver import is slow, see the module doc)

    scheme = conn.uri.partition("://")[0].lower()
    if scheme not in BOLT_SCHEMES:
        raise ServiceError(f"unsupported Neo4j URI {conn.uri!r}: use one of "
                           f"{', '.join(s + '://' for s in BOLT_SCHEMES)} "
                           "(e.g. bolt://127.0.0.1:7687; --uri or NEO4J_URI)")
    try:
        driver = neo4j.GraphDatabase.driver(
            conn.uri, auth=(conn.user, conn.password), connection_timeout=timeout,
            max_transaction_retry_time=0, notifications_min_severity="OFF")
    except ValueError as exc:  # malformed URI
        raise ServiceError(f"bad Neo4j URI {conn.uri!r}: {exc}; use e.g. "
                           "bolt://127.0.0.1:7687 (--uri or NEO4J_URI)") from exc
    try:
        driver.execute_query("RETURN 1", database_=conn.database)
    except BaseException as exc:
        driver.close()
        raise service_error(exc, conn) from exc
    return driver


def service_error(exc: BaseException, conn: Connection) -> KgError:
    """A one-line, actionable KgError for a driver exception."""
    import neo4j.exceptions as nx  # (lazy: the driver import is slow, see the module doc)

    if isinstance(exc, KgError):
        return exc
    if isinstance(exc, nx.AuthError):
        return ServiceError(
            f"Neo4j at {conn.uri} rejected user {conn.user!r}: wrong user name or password "
            "(check --user/--password or NEO4J_USER/NEO4J_PASSWORD)")
    if isinstance(exc, nx.ServiceUnavailable | OSError):
        return ServiceError(
            f"cannot reach Neo4j at {conn.uri} ({first_line(exc)}); is the server running? "
            "(start one, e.g. scripts/neo4j-test-server start, or pass --uri / NEO4J_URI)")
    if isinstance(exc, nx.ClientError) and "database" in str(exc.code or "").lower():
        return ServiceError(f"Neo4j at {conn.uri}: {exc.message}; check --database / "
                            "NEO4J_DATABASE (Community edition has only 'neo4j')")
    if isinstance(exc, nx.ClientError):
        return QueryError(f"Neo4j rejected the query: {exc.message} ({exc.code})")
    if isinstance(exc, nx.Neo4jError | nx.DriverError):
        return ServiceError(f"Neo4j at {conn.uri} failed: {first_line(exc)}")
    raise exc


def first_line(exc: BaseException, limit: int = 200) -> str:
    """The server's code and the first sentence of its message, for one-line errors.

    >>> first_line(OSError("Connection refused. Is it running?"))
    'Connection refused'
    """
    text = (getattr(exc, "message", None) or str(exc) or "").strip()
    line = text.splitlines()[0] if text else type(exc).__name__
    sentence = line.split(". ")[0].rstrip(".")
    sentence = shorten(sentence, limit)
    code = getattr(exc, "code", None)
    return f"{code}: {sentence}" if code else sentence


@contextlib.contextmanager
def driver_for(conn: Connection, driver=None) -> Iterator:
    """``driver`` when the caller gives one (it stays the caller's to close), else a new driver
    for ``conn``, closed when the block ends."""
    if driver is not None:
        yield driver
        return
    driver = connect(conn)
    try:
        yield driver
    finally:
        driver.close()


@contextlib.contextmanager
def service_errors(conn: Connection) -> Iterator[None]:
    """Driver and socket errors raised inside the block, as ``service_error`` says them.

    >>> with service_errors(Connection()):
    ...     raise ConnectionRefusedError("Connection refused")
    Traceback (most recent call last):
    kg.errors.ServiceError: cannot reach Neo4j at bolt://127.0.0.1:7687 (Connection refused); ...
    """
    import neo4j.exceptions as nx  # (lazy: the driver import is slow, see the module doc)

    try:
        yield
    except (nx.Neo4jError, nx.DriverError, OSError) as exc:
        raise service_error(exc, conn) from exc
