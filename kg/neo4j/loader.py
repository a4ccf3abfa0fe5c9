"""MERGE a Corpus into Neo4j in whole-paper transactions (schema and concepts first).

``load`` writes what it is given and deletes nothing, so loading again adds nothing and
loading another corpus merges shared entities; ``kg.neo4j.delta`` brings a database to a
project's exact state.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from kg.errors import ServiceError
from kg.model import Corpus
from kg.neo4j.connection import (
    Connection,
    driver_for,
    first_line,
    service_error,
    service_errors,
)
from kg.neo4j.rows import (
    DEFAULT_BATCH_PAPERS,
    DEFAULT_PROJECT,
    MERGE_BROADER,
    MERGE_CONCEPTS,
    OLD_SCHEMA,
    SCHEMA,
    Batch,
    chunks,
    concept_rows,
    plan_batches,
)


@dataclass
class LoadReport:
    """What a load did: input sizes, what Neo4j created, retries, time."""

    project: str = DEFAULT_PROJECT  # the scope it loaded into
    papers: int = 0
    entities: int = 0
    concepts: int = 0
    relations: int = 0
    batches: int = 0
    transactions: int = 0  # committed, the concepts' included
    nodes_created: int = 0
    relationships_created: int = 0
    retried: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def summary(self) -> str:
        text = (f"loaded {self.papers} papers, {self.entities} entities, {self.concepts} "
                f"concepts and {self.relations} relations in {self.batches} batch(es), "
                f"{self.seconds:.1f}s; created {self.nodes_created} nodes and "
                f"{self.relationships_created} relationships")
        if self.retried:
            text += f"; retried once: {', '.join(self.retried)}"
        return text


def ensure_schema(session) -> None:
    """Create kg's uniqueness constraints and indexes (idempotent), dropping those of databases
    loaded before a project owned its part."""
    for statement in (*OLD_SCHEMA, *SCHEMA):
        session.run(statement).consume()


def _run_batch(session, statements: Iterable[tuple[str, list[dict]]], timeout: float | None,
               report: LoadReport, chunk: int = 5000) -> None:
    # Every statement scopes what it writes with $project (unused ones ignore it).
    tx = session.begin_transaction(timeout=timeout)
    try:
        created_nodes = created_rels = 0
        for query, rows in statements:
            for part in chunks(rows, chunk):
                counters = tx.run(query, rows=list(part),
                                  project=report.project).consume().counters
                created_nodes += counters.nodes_created
                created_rels += counters.relationships_created
        tx.commit()
        report.transactions += 1
    except BaseException:
        if not tx.closed():
            tx.close()  # rolls back: nothing of this batch stays
        raise
    report.nodes_created += created_nodes
    report.relationships_created += created_rels


def commit_batches(session, batches: Iterable[Batch], conn: Connection,
                   tx_timeout: float | None, report: LoadReport,
                   on_retry: Callable[[Batch, BaseException], None] | None,
                   on_batch: Callable[[Batch], None] | None, rerun: str) -> None:
    """Commit each batch in its own transaction; a failed one is rolled back and retried once,
    a second failure raises ServiceError naming it (``rerun`` says what to do then)."""
    import neo4j.exceptions as nx  # (lazy: the driver import is slow; kg.neo4j.connection)

    committed = 0
    for batch in batches:
        try:
            _run_batch(session, batch.statements, tx_timeout, report)
        except (nx.Neo4jError, nx.DriverError, OSError) as first:
            if isinstance(first, nx.AuthError):
                raise service_error(first, conn) from first
            report.retried.append(batch.describe())
            if on_retry:
                on_retry(batch, first)
            time.sleep(0.5)
            try:
                _run_batch(session, batch.statements, tx_timeout, report)
            except (nx.Neo4jError, nx.DriverError, OSError) as second:
                raise ServiceError(
                    f"Neo4j at {conn.uri} rejected {batch.describe()} twice "
                    f"({first_line(second)}); it was rolled back, {committed} "
                    f"earlier paper(s) stay committed; {rerun}") from second
        committed += len(batch.papers)
        if batch.papers:
            report.batches += 1
        if on_batch:
            on_batch(batch)


def load(corpus: Corpus, conn: Connection, *, papers_per_batch: int = DEFAULT_BATCH_PAPERS,
         tx_timeout: float | None = 300.0, vocabulary=None,
         on_retry: Callable[[Batch, BaseException], None] | None = None,
         on_batch: Callable[[Batch], None] | None = None, driver=None,
         project: str = DEFAULT_PROJECT) -> LoadReport:
    """MERGE ``corpus`` into Neo4j: schema, concepts, then whole-paper batches.

    Papers and entities are written in the scope ``project`` (a node property): loads into
    one scope merge, other scopes are untouched (``kg.neo4j.delta`` gives each project its own).

    Each batch is one transaction; a failed batch is rolled back, retried once (reported in
    ``LoadReport.retried`` and to ``on_retry``), and a second failure raises ServiceError naming
    the batch — every earlier batch stays committed, no paper is ever half written.

    Example (needs a server)::

        report = load(run(["examples/iclr2025-seed.txt"]), Connection.from_env())
    """
    started = time.perf_counter()
    report = LoadReport(project=project, papers=len(corpus), entities=len(corpus.entities),
                        relations=sum(len(r.relations) for r in corpus.results))
    batches = plan_batches(corpus, papers_per_batch)
    concepts, broader = concept_rows(corpus, vocabulary)
    report.concepts = len(concepts)
    with driver_for(conn, driver) as driver, driver.session(database=conn.database) as session:
        with service_errors(conn):
            ensure_schema(session)
            _run_batch(session, [(MERGE_CONCEPTS, concepts), (MERGE_BROADER, broader)],
                       tx_timeout, report)
        commit_batches(session, batches, conn, tx_timeout, report, on_retry, on_batch,
                       "re-run the load (it MERGEs, so nothing is duplicated)")
    report.seconds = time.perf_counter() - started
    return report
