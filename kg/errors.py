"""The exceptions kg raises; the CLI maps each to a message and an exit code.

>>> raise InputError("papers.csv:3: no abstract column; pass --abstract-column")
Traceback (most recent call last):
...
kg.errors.InputError: papers.csv:3: no abstract column; pass --abstract-column
"""


class KgError(Exception):
    """Base of every error kg reports to a user (exit code 1)."""

    exit_code = 1


class InputError(KgError):
    """An input file or record cannot be read; the message names it and the fix (exit 2)."""

    exit_code = 2


class StrictModeError(KgError):
    """Records were skipped and --strict asked for that to fail the run (exit 3)."""

    exit_code = 3


class VocabularyError(KgError):
    """The ontology/vocabulary files are missing or malformed (exit 4)."""

    exit_code = 4


class QueryError(KgError):
    """A SPARQL or Cypher query is malformed or failed (exit 5)."""

    exit_code = 5


class ServiceError(KgError):
    """A service (Neo4j, the endpoint) cannot be reached or refused us (exit 6)."""

    exit_code = 6


class ProjectError(InputError):
    """DIR is not a usable kg project (foreign, damaged or from another format version)."""


class BusyError(KgError):
    """Another process is building this project."""


class NotFoundError(KgError):
    """A paper or technique the user named is not in the graph; the message lists suggestions."""

    def __init__(self, message: str, suggestions=()) -> None:
        super().__init__(message)
        self.suggestions = tuple(suggestions)


class AmbiguousPaperError(KgError):
    """A paper reference matches several papers; the message lists them."""

    def __init__(self, message: str, candidates=()) -> None:
        super().__init__(message)
        self.candidates = tuple(candidates)


class RefusedQueryError(QueryError):
    """The query would make kg fetch a URL (SERVICE, LOAD) from a host nobody allowed."""


class NotAcceptableError(QueryError):
    """No result format the client accepts fits the answer (HTTP 406)."""
