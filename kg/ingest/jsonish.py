"""JSON Lines and JSON documents, streamed: one record in memory at a time.

A JSON document is an array of records, an object holding one (``{"results": [...]}`` from
OpenAlex, ``{"data": [...]}`` from Semantic Scholar, ``{"notes": [...]}`` from OpenReview,
``{"papers": [...]}``), or a single record; ``ijson`` walks it without loading it whole.

>>> import io
>>> head = b'{"meta": {"count": 2}, "results": [{"id": 1}, {"id": 2}]}'
>>> document_prefix(head)
'results.item'
>>> [r for _, r in document_records("f", io.BytesIO(head), "results.item", 1000)]
[{'id': 1}, {'id': 2}]
"""

from __future__ import annotations

import io
import json
from collections import Counter
from collections.abc import Iterator
from typing import BinaryIO

import ijson

from kg.errors import InputError
from kg.ingest.filters import PaperFilter
from kg.ingest.streams import DECOMPRESS_ERRORS, decode
from kg.model import Skip

LIST_KEYS = ("results", "data", "notes", "papers", "records")
_NOT_AN_OBJECT = "expected a JSON object"


def json_lines(name: str, lines: Iterator[tuple[int, bytes | None]], encoding: str,
               limit: int, keep: PaperFilter | None = None, dropped: Counter | None = None
               ) -> Iterator[tuple[str, dict | Skip]]:
    """One JSON object per line; a bad line is a Skip, the next line is read. A line that
    cannot meet ``keep`` (see PaperFilter.raw_reject) is counted in ``dropped`` (by the
    condition it fails) without being parsed or passed on: most lines, on a narrow filter."""
    for number, raw in lines:
        where = f"{name}:{number}"
        if raw is None:
            yield where, Skip(where, f"line is over {limit:,} bytes; one record per line is "
                              "expected (is this really JSON Lines?); the line was skipped")
            continue
        missed = keep.raw_reject(raw) if keep and dropped is not None else None
        if missed:
            dropped[missed] += 1  # type: ignore[index]
            continue
        try:
            line = decode(raw, encoding, where)
        except InputError as exc:
            yield where, Skip(where, str(exc).removeprefix(f"{where}: "))
            continue
        if line.strip():
            yield where, parse_line(line, where)


def parse_line(line: str, where: str) -> dict | Skip:
    """One JSON Lines record, or a Skip saying what is wrong with it."""
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        return Skip(where, f"malformed JSON ({exc.msg} at column {exc.colno}); fix the line or "
                    "remove it")
    except RecursionError:
        return Skip(where, "JSON nested too deep to be a paper record; fix the line or remove it")
    return record if isinstance(record, dict) else Skip(where, f"{_NOT_AN_OBJECT} per line")


def document_prefix(head: bytes) -> str:
    """Where a JSON document's records are: ``item`` (an array), ``KEY.item`` (an object
    holding one array under a known key) or ``""`` (the document is one record)."""
    key = None
    try:
        for prefix, event, value in ijson.parse(io.BytesIO(head)):
            if prefix == "" and event == "start_array":
                return "item"
            if key is not None:
                if event == "start_array" and prefix == key:
                    return f"{key}.item"
                key = None
            if prefix == "" and event == "map_key" and value in LIST_KEYS:
                key = value
    except ijson.JSONError:
        pass  # the head ends mid-document: decide from what was seen
    return ""


class _Counted(io.RawIOBase):
    """A stream that refuses to give more than ``limit`` bytes between two ``reset`` s."""

    def __init__(self, stream: BinaryIO, limit: int) -> None:
        self.stream, self.limit, self.count = stream, limit, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # type: ignore[override]
        if self.count > self.limit:
            raise _TooLong
        data = self.stream.read(min(len(buffer), 2**16))
        self.count += len(data)
        buffer[: len(data)] = data
        return len(data)


class _TooLong(Exception):
    pass


def document_records(name: str, stream: BinaryIO, prefix: str, limit: int
                     ) -> Iterator[tuple[str, dict | Skip]]:
    """The records of a JSON document at ``prefix`` (see ``document_prefix``), streamed."""
    counted = _Counted(stream, limit)
    index = 0
    try:
        for index, record in enumerate(ijson.items(counted, prefix, use_float=True), start=1):
            counted.count = 0
            where = f"{name}:record {index}"
            if record is None:  # a batch API's answer for an id it does not know
                yield where, Skip(where, "null: the API found no paper for this id")
            else:
                yield where, record if isinstance(record, dict) else Skip(where, _NOT_AN_OBJECT)
    except _TooLong:
        raise InputError(f"{name}:record {index + 1}: over {limit:,} bytes; the records before "
                         "it were read; split the file") from None
    except (ijson.JSONError, UnicodeDecodeError) as exc:
        raise InputError(f"{name}:record {index + 1}: malformed JSON ({exc}); the records "
                         "before it were read; fix the file (one JSON array of objects, or "
                         "JSON Lines)") from None
    except DECOMPRESS_ERRORS as exc:
        raise InputError(f"{name}:record {index + 1}: the compressed data ends early or is "
                         f"corrupt ({exc}); the records before it were read; download or "
                         "compress the file again") from exc
