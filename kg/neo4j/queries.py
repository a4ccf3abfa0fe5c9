"""Saved, parameterised Cypher queries (cypher/*.cypher) and the counts read back from Neo4j.

A saved query declares its parameters in its header, ``// @param name:type[=default] help``;
values travel as query parameters, never pasted into the query text.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from kg.errors import QueryError
from kg.model import ENTITY_TYPES, PREDICATES, Corpus
from kg.neo4j.rows import REL_TYPES


@dataclass(frozen=True)
class QueryParam:
    name: str
    kind: str  # str | int | float | bool | list
    default: Any = None
    required: bool = True
    help: str = ""


_PARAM_LINE = re.compile(
    r"^//\s*@param\s+(?P<name>[A-Za-z_]\w*)\s*:\s*(?P<kind>str|int|float|bool|list)"
    r"(?:\s*=\s*(?P<default>\S+))?\s*(?P<help>.*)$")


def query_params(text: str) -> dict[str, QueryParam]:
    """Parameters declared in a saved query's header: ``// @param name:type[=default] help``.

    >>> query_params("// @param limit:int=10 how many")["limit"].default
    10
    """
    out: dict[str, QueryParam] = {}
    for line in text.splitlines():
        m = _PARAM_LINE.match(line.strip())
        if not m:
            continue
        kind = m["kind"]
        raw = m["default"]
        default = None if raw in (None, "null") else convert_param(m["name"], kind, raw)
        out[m["name"]] = QueryParam(m["name"], kind, default, raw is None, m["help"].strip())
    return out


def convert_param(name: str, kind: str, raw: str) -> Any:
    """Turn a ``--param name=value`` string into the declared type."""
    try:
        if kind == "int":
            return int(raw)
        if kind == "float":
            return float(raw)
        if kind == "bool":
            if raw.lower() not in ("true", "false", "1", "0", "yes", "no"):
                raise ValueError(raw)
            return raw.lower() in ("true", "1", "yes")
        if kind == "list":
            return json.loads(raw) if raw.startswith("[") else [v for v in raw.split(",") if v]
    except ValueError as exc:
        raise QueryError(f"--param {name}={raw}: not a valid {kind}") from exc
    return raw


def bind_params(text: str, given: dict[str, str], path: str = "query") -> dict[str, Any]:
    """Declared params from ``given`` (strings, converted) or defaults; unknown/missing → error."""
    declared = query_params(text)
    params: dict[str, Any] = {}
    for name, raw in given.items():
        if declared and name not in declared:
            raise QueryError(f"{path}: unknown parameter {name!r}; it takes "
                             + (", ".join(sorted(declared)) or "no parameters"))
        params[name] = convert_param(name, declared[name].kind, raw) if name in declared else raw
    for name, p in declared.items():
        if name not in params:
            if p.required:
                raise QueryError(f"{path}: missing parameter {name!r}; pass --param {name}=…"
                                 + (f" ({p.help})" if p.help else ""))
            params[name] = p.default
    return params


def to_plain(value: Any) -> Any:
    """Driver values (nodes, relationships, paths, temporals) as JSON-friendly data."""
    import neo4j.graph as ng  # (lazy: the driver import is slow; kg.neo4j.connection)

    if isinstance(value, ng.Node):
        return {"labels": sorted(value.labels), **{k: to_plain(v) for k, v in value.items()}}
    if isinstance(value, ng.Relationship):
        return {"type": value.type, **{k: to_plain(v) for k, v in value.items()}}
    if isinstance(value, ng.Path):
        return [to_plain(x) for pair in zip(value.nodes, [*value.relationships, None],
                                            strict=True) for x in pair if x is not None]
    if isinstance(value, list | tuple):
        return [to_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: to_plain(v) for k, v in value.items()}
    if hasattr(value, "iso_format"):
        return value.iso_format()
    return value


def run_query(session, text: str, params: dict[str, Any]) -> tuple[list[str], list[dict]]:
    """Run a (read) query; returns column names and rows as plain data."""
    result = session.run(text, params)
    records = list(result)
    keys = list(result.keys())
    return keys, [{k: to_plain(r[k]) for k in keys} for r in records]


def corpus_counts(corpus: Corpus) -> dict[str, Any]:
    """Papers, entities per type and relations per predicate of a Corpus."""
    return {
        "papers": len(corpus),
        "entities": dict(sorted(Counter(e.type for e in corpus.entities.values()).items())),
        "relations": dict(sorted(Counter(r.predicate for r in corpus.relations()).items())),
    }


def graph_counts(session) -> dict[str, Any]:
    """The same counts read back from Neo4j (relationship types mapped back to predicates)."""
    papers = session.run("MATCH (p:Paper) RETURN count(p) AS n").single()["n"]
    entities = {}
    for type_ in ENTITY_TYPES:
        n = session.run(f"MATCH (e:Entity:{type_}) RETURN count(e) AS n").single()["n"]
        if n:
            entities[type_] = n
    by_type = {REL_TYPES[p]: p for p in PREDICATES}
    relations = {}
    for record in session.run("MATCH ()-[r]->() RETURN type(r) AS t, count(r) AS n"):
        if record["t"] in by_type:
            relations[by_type[record["t"]]] = record["n"]
    return {"papers": papers, "entities": dict(sorted(entities.items())),
            "relations": dict(sorted(relations.items()))}


def db_counts(session) -> dict[str, int]:
    """Papers, entities, concepts and relationships in the database (Neo4j's count store:
    constant time)."""
    counts = {}
    for key, pattern in (("papers", "(n:Paper)"), ("entities", "(n:Entity)"),
                         ("concepts", "(n:Concept)"), ("relationships", "()-[n]->()")):
        counts[key] = session.run(f"MATCH {pattern} RETURN count(n) AS n").single()["n"]
    return counts
