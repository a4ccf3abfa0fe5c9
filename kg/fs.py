"""Files written so a reader never sees half of one: atomic replace, fsync, JSON, the record.

Every export and every file of a project generation is written through here. ``replacing``
gives a temporary name beside the target and moves it into place once the bytes are on disk;
``build.json`` (``BuildRecord``) is the completion record of an export directory: written
last, removed first, so a directory without one is refused rather than read half-built.

>>> import tempfile
>>> target = Path(tempfile.mkdtemp()) / "a.json"
>>> write_json(target, {"b": 1})
>>> target.read_text()
'{"b": 1}\\n'
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from kg.errors import InputError

RECORD = "build.json"
TMP_PREFIX = ".kg-tmp-"
PROBE_PREFIX = ".kg-probe-"  # check_writable's test file: not an export being written
_UMASK = os.umask(0o022)
os.umask(_UMASK)


@dataclass(frozen=True)
class BuildRecord:
    """What ``build.json`` says: the build's files (bytes, sha256), inputs and counts."""

    version: str
    counts: dict[str, int]
    files: dict[str, dict[str, object]]  # name -> {"bytes": int, "sha256": str}
    inputs: tuple[dict[str, object], ...] = field(default=())
    notices: tuple[str, ...] = field(default=(), compare=False)  # for the user, not recorded

    def as_dict(self) -> dict[str, object]:
        return {"kg_version": self.version, "counts": self.counts, "inputs": list(self.inputs),
                "files": self.files}


def rebuild_hint(directory: Path) -> str:
    return f"rebuild it with `kg build INPUT... -o {directory}`"


def read_record(directory: str | Path) -> BuildRecord:
    """The completion record of an export directory; InputError (exit 2) when there is none."""
    directory = Path(directory)
    try:
        data = json.loads((directory / RECORD).read_text(encoding="utf-8"))
        return BuildRecord(str(data["kg_version"]), dict(data["counts"]), dict(data["files"]),
                           tuple(data.get("inputs", ())))
    except FileNotFoundError as exc:
        raise InputError(f"{directory}: no {RECORD}, so not a complete `kg build` output (a "
                         "build was interrupted, is running, or predates build records); "
                         f"{rebuild_hint(directory)}") from exc
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputError(f"{directory}/{RECORD}: unreadable ({exc}); "
                         f"{rebuild_hint(directory)}") from exc


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with Path(path).open("rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _write_error(path: Path, exc: OSError) -> InputError:
    reason = exc.strerror or str(exc)
    return InputError(f"{path}: cannot write ({reason}); free some space, fix the permissions "
                      "or choose another -o")


@contextlib.contextmanager
def replacing(path: str | Path) -> Iterator[Path]:
    """A temporary path beside ``path``, moved onto ``path`` when the block ends without error.

    The temporary file is created exclusively (``mkstemp``), so no symlink planted under its
    name is followed, and ``os.replace`` swaps the directory entry — a symlink at ``path`` is
    replaced itself, its target untouched. On error the temporary file is removed.

    >>> import tempfile
    >>> target = Path(tempfile.mkdtemp()) / "a.txt"
    >>> with replacing(target) as tmp:
    ...     _ = tmp.write_text("new")
    >>> target.read_text()
    'new'
    """
    path = Path(path)
    try:
        fd, name = tempfile.mkstemp(prefix=f"{TMP_PREFIX}{path.name}.", dir=path.parent)
    except OSError as exc:
        raise _write_error(path, exc) from exc
    os.close(fd)
    tmp = Path(name)
    try:
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes 0600; exports are as readable as any file
        yield tmp
        with tmp.open("rb+") as fh:  # the bytes reach the disk before the name points at them
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise _write_error(path, exc) from exc
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def check_writable(directory: str | Path) -> Path:
    """Create ``directory`` if needed and prove a file can be made in it (before a long run).

    >>> try:
    ...     check_writable("/proc/kg-cannot-be-here")
    ... except InputError as exc:
    ...     print(str(exc).split(" (")[0])
    /proc/kg-cannot-be-here: cannot write here
    """
    directory = Path(directory)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=PROBE_PREFIX, dir=directory)
        try:
            os.write(fd, b"kg")
        finally:
            os.close(fd)
            os.unlink(name)
    except FileExistsError as exc:
        raise InputError(f"{directory}: exists and is not a directory; choose another -o"
                         ) from exc
    except OSError as exc:
        raise InputError(f"{directory}: cannot write here ({exc.strerror or exc}); "
                         "choose another -o") from exc
    return directory


def write_json(path: Path, data: object) -> None:
    """``data`` as one line of JSON at ``path``, replaced atomically."""
    with replacing(path) as tmp:
        # Not indented: only then does json use its C encoder (0.4 s less on a conference).
        tmp.write_text(json.dumps(data, ensure_ascii=False) + "\n", encoding="utf-8")


def fsync_file(path: Path) -> None:
    with path.open("rb") as fh:
        os.fsync(fh.fileno())


def fsync_tree(directory: Path) -> None:
    for path in directory.rglob("*"):
        if path.is_file():
            fsync_file(path)


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)  # its entries: the names of the files synced
    finally:
        os.close(fd)


def link_or_copy(source: Path, target: Path) -> None:
    """Hard-link ``source`` at ``target``, or copy it on a file system without hard links."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)
