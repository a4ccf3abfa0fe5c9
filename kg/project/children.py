"""Work a build starts beside its own: forked children and threads.

(To be replaced by concurrent.futures where a measurement shows it pays.)
"""

from __future__ import annotations

import contextlib
import os
import pickle
import threading
from collections.abc import Callable
from typing import Any

from kg.errors import KgError


def forked(work: Callable[[], Any]) -> Callable[[], Any]:
    """Start ``work`` (on data in memory, or files nobody else has open) in a forked child
    and return a function that waits for its result, or raises its exception (asked again,
    it says the same). Without fork, ``work`` runs here.

    The child inherits DIR's lock with the parent's descriptors, so every path reaps it, and
    it dies with its parent: a build killed with -9 leaves no process behind holding the lock.

    >>> forked(lambda: sum(range(10)))()
    45
    """
    if not hasattr(os, "fork"):
        return done(work())
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report and leave, never return into the caller
        try:
            os.close(read)
            with contextlib.suppress(Exception):
                import ctypes

                ctypes.CDLL(None).prctl(1, 9)  # PR_SET_PDEATHSIG = SIGKILL (Linux)
            try:
                data = pickle.dumps((True, work()), 5)
            except BaseException as exc:  # errors kg maps to messages pass as they are
                data = pickle.dumps((False, exc if isinstance(exc, (KgError, OSError)) else
                                     KgError(f"{type(exc).__name__}: {exc}")), 5)
            with os.fdopen(write, "wb") as fh:
                fh.write(data)
        finally:
            os._exit(0)
    os.close(write)
    outcome: list = []  # (ok, value), once the child is reaped: asking again repeats it

    def result() -> Any:
        if not outcome:
            data = b""
            try:
                with os.fdopen(read, "rb") as fh:
                    data = fh.read()
            finally:  # reaped whatever happens (an interrupted wait kills it: no more use)
                if not data:
                    with contextlib.suppress(OSError):
                        os.kill(pid, 9)
                os.waitpid(pid, 0)
                outcome.append(pickle.loads(data) if data else (False, KgError(
                    f"a helper process ({pid}) of the build died; run the command again")))
        ok, value = outcome[0]
        if not ok:
            raise value
        return value

    return result


def in_thread(work: Callable[[], Any]) -> Callable[[], Any]:
    """Start ``work`` (file work that releases the GIL: sendfile, fsync, hashing) in a thread
    and return a function that waits for its result, or raises its exception.

    >>> in_thread(lambda: sum(range(10)))()
    45
    """
    outcome: list = []

    def run() -> None:
        try:
            outcome.append((True, work()))
        except BaseException as exc:  # (given to the waiter)
            outcome.append((False, exc))

    thread = threading.Thread(target=run, name="kg-files", daemon=True)
    thread.start()

    def wait() -> Any:
        thread.join()
        ok, value = outcome[0]
        if not ok:
            raise value
        return value

    return wait


def done(value: Any) -> Callable[[], Any]:
    """What ``forked`` returns, for work done already."""
    return lambda: value


def rocksdb_free() -> bool:
    """True when no RocksDB thread runs in this process (RocksDB keeps its thread pool, named
    ``rocksdb:…``, once any store was opened), so a forked child may open a store."""
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:  # not Linux: never fork a store
        return False
    for task in tasks:
        try:
            with open(f"/proc/self/task/{task}/comm", encoding="utf-8") as fh:
                if fh.read().startswith("rocksdb"):
                    return False
        except OSError:  # the thread ended meanwhile
            continue
    return True
