"""Opening an input once, decompressing by magic bytes, and reading bounded lines.

Every input is opened exactly once, so a pipe or FIFO works (``kg build <(zcat x.gz)``), and
read as bytes: a line is decoded on its own, so one bad byte costs one record, not the file.

>>> import io
>>> lines = list(bounded_lines(io.BytesIO(b"a\\n" + b"x" * 50 + b"\\nb\\n"), "f", 10))
>>> [(n, line) for n, line in lines]
[(1, b'a\\n'), (2, None), (3, b'b\\n')]
"""

from __future__ import annotations

import bz2
import gzip
import io
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

import zstandard

from kg.errors import InputError

# 1 MiB reads: large enough that a readline rarely refills, small enough to stay flat.
BUFFER = 2**20
_MAGIC = ((b"\x1f\x8b", "gzip"), (b"BZh", "bzip2"), (b"\x28\xb5\x2f\xfd", "zstd"))
# What a decompressor raises on a truncated or corrupt stream.
DECOMPRESS_ERRORS = (EOFError, zlib.error, gzip.BadGzipFile, zstandard.ZstdError)


def open_input(source: str | Path) -> tuple[str, BinaryIO]:
    """``(name, stream)`` for a path or ``-`` (stdin): opened once, decompressed if compressed.

    >>> import gzip, tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "x"
    >>> _ = path.write_bytes(gzip.compress(b"hello\\n"))
    >>> name, fh = open_input(path)
    >>> fh.read()
    b'hello\\n'
    """
    if str(source) == "-":
        return "<stdin>", _decompressed(sys.stdin.buffer)
    path = Path(source)
    name = str(path)
    if path.is_dir():
        raise InputError(f"{name}: is a directory; pass the files inside it")
    try:
        raw = open(path, "rb", buffering=BUFFER)  # noqa: SIM115 — the caller closes it
    except FileNotFoundError as exc:
        raise InputError(f"{name}: no such file") from exc
    except OSError as exc:
        raise InputError(f"{name}: cannot read ({exc.strerror}); check permissions") from exc
    return name, _decompressed(raw)


def _decompressed(raw: BinaryIO) -> BinaryIO:
    if not hasattr(raw, "peek"):  # a BytesIO standing in for stdin (click's test runner)
        raw = io.BufferedReader(raw, BUFFER)  # type: ignore[arg-type]
    head = raw.peek(4)[:4]  # type: ignore[attr-defined]
    kind = next((k for magic, k in _MAGIC if head.startswith(magic)), None)
    if kind == "gzip":
        return io.BufferedReader(gzip.GzipFile(fileobj=raw, mode="rb"), BUFFER)
    if kind == "bzip2":
        return io.BufferedReader(bz2.BZ2File(raw, "rb"), BUFFER)
    if kind == "zstd":
        reader = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True,
                                                            closefd=True)
        return io.BufferedReader(reader, BUFFER)  # type: ignore[arg-type]
    return raw


def peek(stream: BinaryIO, size: int = 65536) -> bytes:
    """Up to ``size`` bytes from the start of ``stream`` without consuming them."""
    try:
        head = stream.peek(size)  # type: ignore[attr-defined]
    except DECOMPRESS_ERRORS:
        return b""  # the first read reports it, with the file's name
    return head[:size]


def bounded_lines(stream: BinaryIO, name: str, limit: int) -> Iterator[tuple[int, bytes | None]]:
    """``(line number, line)``; ``None`` for a line over ``limit`` bytes (read past, not kept).

    A truncated compressed stream and a stream of NUL bytes (``/dev/zero``, a disk image)
    raise InputError naming the line: the lines before it have been yielded already.
    """
    number = 0
    while True:
        number += 1
        line = _read(stream, limit + 1, name, number)
        if not line:
            return
        if len(line) <= limit or line.endswith(b"\n"):
            yield number, line
            continue
        while not line.endswith(b"\n"):
            if not line.strip(b"\0"):
                raise InputError(f"{name}:{number}: NUL bytes, not text (is this a disk image "
                                 "or /dev/zero?); pass a text file")
            line = _read(stream, BUFFER, name, number)
            if not line:
                break
        yield number, None


def _read(stream: BinaryIO, size: int, name: str, number: int) -> bytes:
    try:
        return stream.readline(size)
    except DECOMPRESS_ERRORS as exc:
        raise InputError(f"{name}:{number}: the compressed data ends early or is corrupt "
                         f"({exc}); the records before it were read; download or compress the "
                         "file again") from exc
    except OSError as exc:
        raise InputError(f"{name}:{number}: cannot read ({exc.strerror or exc})") from exc


def decode(line: bytes, encoding: str, where: str) -> str:
    """``line`` as text; an undecodable byte raises InputError naming the record and the fix.

    >>> decode(b"caf\\xc3\\xa9", "utf-8", "f:1")
    'café'
    """
    try:
        return line.decode(encoding)
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{where}: not valid {encoding} (byte 0x{line[exc.start]:02x} at column "
            f"{exc.start + 1}); convert the file (e.g. `iconv -f latin1 -t utf-8`) or pass "
            "--encoding") from None
