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
import codecs
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
    # Not wrapped in a BufferedReader: its 1 MiB fill would raise at a truncation and lose
    # the good records decompressed in the same call; these buffer 8 KiB themselves.
    if kind == "gzip":
        return gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[return-value]
    if kind == "bzip2":
        return bz2.BZ2File(raw, "rb")  # type: ignore[return-value]
    if kind == "zstd":
        return io.BufferedReader(_Zstd(raw), 2**16)  # type: ignore[arg-type]
    return raw


class _Refilled(io.RawIOBase):
    """A raw stream over ``raw`` whose bytes come from ``refill`` a chunk at a time."""

    def __init__(self, raw: BinaryIO) -> None:
        self.raw, self.pending, self.at = raw, b"", 0

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        self.raw.close()
        super().close()

    def refill(self) -> bytes | None:
        """The next bytes (possibly empty: call again), or None at the end."""
        raise NotImplementedError

    def readinto(self, buffer) -> int:  # type: ignore[override]
        while self.at >= len(self.pending):
            more = self.refill()
            if more is None:
                return 0
            self.pending, self.at = more, 0
        size = min(len(buffer), len(self.pending) - self.at)
        buffer[:size] = self.pending[self.at:self.at + size]  # no copy of the rest each time
        self.at += size
        return size


class _Zstd(_Refilled):
    """zstd frames, one after another; a stream that ends mid-frame raises EOFError (the
    library's stream_reader ends quietly there, which would pass a truncated file as whole)."""

    def __init__(self, raw: BinaryIO) -> None:
        super().__init__(raw)
        self.frame = zstandard.ZstdDecompressor().decompressobj()
        self.started = False  # bytes of the current frame have been seen

    def refill(self) -> bytes | None:
        chunk = self.raw.read(2**16)
        if not chunk:
            if self.started and not self.frame.eof:
                raise EOFError("zstd data ended before the end of its frame")
            return None
        out = b""
        while chunk:
            if self.frame.eof:  # the next frame of a multi-frame file
                self.frame = zstandard.ZstdDecompressor().decompressobj()
            self.started = True
            out += self.frame.decompress(chunk)
            chunk = self.frame.unused_data if self.frame.eof else b""
        return out


def as_utf8(stream: BinaryIO, encoding: str) -> BinaryIO:
    """``stream`` re-encoded as UTF-8 when ``encoding`` is not ASCII-compatible (UTF-16/32:
    their bytes cannot be split at b"\\n"); ``stream`` itself otherwise.

    >>> import io
    >>> as_utf8(io.BytesIO("é\\n".encode("utf-16")), "utf-16").read()
    b'\\xc3\\xa9\\n'
    """
    wide = codecs.lookup(encoding).name.startswith(("utf-16", "utf-32"))
    if not wide and "\n".encode(encoding).endswith(b"\n"):
        return stream
    return io.BufferedReader(_Transcoded(stream, encoding), BUFFER)  # type: ignore[arg-type]


class _Transcoded(_Refilled):
    def __init__(self, raw: BinaryIO, encoding: str) -> None:
        super().__init__(raw)
        # errors="replace": a bad code unit becomes U+FFFD in its record, not a lost file.
        self.decoder = codecs.getincrementaldecoder(encoding)("replace")

    def refill(self) -> bytes | None:
        chunk = self.raw.read(2**16)
        out = self.decoder.decode(chunk, final=not chunk).encode("utf-8")
        return out if chunk or out else None


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
        text = line.decode(encoding)
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{where}: not valid {encoding} (byte 0x{line[exc.start]:02x} at column "
            f"{exc.start + 1}); convert the file (e.g. `iconv -f latin1 -t utf-8`) or pass "
            "--encoding") from None
    if "\0" in text:  # decodes fine, but no paper has one: binary data, or UTF-16 read as 8-bit
        raise InputError(f"{where}: NUL byte at column {text.index(chr(0)) + 1}; this is "
                         "binary data, not text (UTF-16? pass --encoding utf-16)")
    return text
