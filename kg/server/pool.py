"""The query workers of ``kg serve``: processes holding the graph, and the pool that uses them.

Each worker is a plain subprocess with the graph in an in-memory pyoxigraph Store
(:mod:`kg.sparql` loads, vets and runs the queries). A query cannot be interrupted from
Python, so the pool waits on a worker's pipe for at most ``timeout`` seconds and then kills
it (the runaway query dies with it) and starts a fresh one, replaying the updates applied so
far; a worker that dies by itself (a query crashed the engine) is reported as a crash. The
pool also keeps a lane for cheap queries, bounds each client, and caches answers.

A project is served one generation at a time: every worker opens the generation the pool
pinned (never whatever CURRENT names when it starts), and the pool follows the project —
once a build, add or remove commits a new generation, a full set of workers loads it and
replaces the old set at once (an *epoch*), so a request that starts after the switch is
answered by the new generation only, and an old worker still busy is retired when it ends.
"""

from __future__ import annotations

import collections
import contextlib
import datetime
import math
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from kg.errors import InputError, KgError, QueryError, ServiceError
from kg.exports import graph_file
from kg.project import META, is_project, open_project
from kg.sparql import (
    NotAcceptableError,
    QueryOutput,
    RefusedQueryError,
    execute_query,
    load_store,
    normalise,
    run_update,
    substitutions,
    writable,
)


class _Store:
    """A worker's graph: a project's read-only store until an update needs a copy of its own."""

    def __init__(self, graph: str, generation: str | None, updates: list[str],
                 allow_service: tuple[str, ...]) -> None:
        self.graph = graph
        self.allow_service = allow_service
        self.store = load_store(graph, generation)
        self.copied = bool(updates)
        if updates:
            self.store = writable(self.store, graph)
        for update in updates:
            run_update(self.store, update, allow_service=allow_service)

    def answer(self, op: str, text: str, requested: str | None, accept: str | None,
               max_results: int, bindings: dict[str, str]) -> tuple[str, Any]:
        """("ok", value) or (failure kind, message) for one request."""
        try:
            if op == "update":
                if not self.copied:
                    self.store, self.copied = writable(self.store, self.graph), True
                run_update(self.store, text, allow_service=self.allow_service)
                return "ok", None
            return "ok", execute_query(
                self.store, text, requested=requested, accept=accept, max_results=max_results,
                substitutions=substitutions(bindings), allow_service=self.allow_service)
        except RefusedQueryError as exc:
            return "refused", str(exc)
        except NotAcceptableError as exc:
            return "unacceptable", str(exc)
        except (QueryError, InputError) as exc:
            return "bad", str(exc)
        except Exception as exc:  # anything else: report, keep serving
            return "error", f"{type(exc).__name__}: {exc}"


def worker_main(conn_in: Any, conn_out: Any) -> None:
    """Loop in a worker process: load the graph, replay updates, then answer requests."""
    graph, generation, updates, allow_service = conn_in.recv()
    try:
        store = _Store(graph, generation, updates, allow_service)
    except Exception as exc:  # reported to the parent, which raises ServiceError
        conn_out.send(("fail", str(exc)))
        return
    conn_out.send(("ready", len(store.store)))
    while True:
        try:
            request = conn_in.recv()
        except (EOFError, OSError):
            return
        conn_out.send(store.answer(*request))


def worker_entry() -> None:
    """Entry point of ``python -c 'from kg.server.pool import worker_entry; worker_entry()'``.

    The protocol runs over stdin/stdout; stdout is moved aside first so a stray print cannot
    corrupt it.
    """
    out_fd = os.dup(1)
    os.dup2(2, 1)
    # The server going away (shutdown, or the pool killing us) is not worth a traceback.
    with contextlib.suppress(BrokenPipeError, EOFError, KeyboardInterrupt):
        worker_main(Connection(0, writable=False), Connection(out_fd, readable=False))


class _Worker:
    """One worker: a plain subprocess (not multiprocessing, so the caller's __main__ is never
    re-imported) speaking multiprocessing's Connection protocol over its stdin/stdout."""

    def __init__(self, graph: str, generation: str | None, updates: list[str],
                 allow_service: tuple[str, ...], epoch: int = 0) -> None:
        self.generation, self.epoch = generation, epoch
        self._killing = threading.Lock()
        env = dict(os.environ)
        root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH")
                                    else "")
        self.process = subprocess.Popen(
            [sys.executable, "-c", "from kg.server.pool import worker_entry; worker_entry()"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        assert self.process.stdin is not None and self.process.stdout is not None
        self._send = Connection(os.dup(self.process.stdin.fileno()), readable=False)
        self._recv = Connection(os.dup(self.process.stdout.fileno()), writable=False)
        self.process.stdin.close()
        self.process.stdout.close()
        self._send.send((graph, generation, list(updates), tuple(allow_service)))

    def send(self, message: tuple) -> None:
        self._send.send(message)

    def poll(self, timeout: float) -> bool:
        return self._recv.poll(timeout)

    def recv(self) -> Any:
        return self._recv.recv()

    def wait_ready(self, timeout: float) -> int:
        try:
            loaded = self.poll(timeout)
            status, value = self.recv() if loaded else (None, None)
        except (EOFError, OSError) as exc:  # (OSError: killed meanwhile, as the pool closed)
            self.kill()
            raise ServiceError("the SPARQL worker exited while loading the graph") from exc
        if not loaded:
            self.kill()
            raise ServiceError(f"the SPARQL worker did not load the graph within {timeout:.0f} s")
        if status != "ready":
            self.kill()
            raise ServiceError(f"cannot load the graph: {value}")
        return value

    def exit_code(self) -> int | None:
        """How the process ended (a negative signal number), once it has; None if it runs."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            return self.process.wait(2)
        return None

    def kill(self) -> None:
        # Two threads may kill one worker at once (the server stopping while the request
        # thread finds its worker dead): closing a connection twice at the same moment closed
        # its descriptor twice (EBADF in `kg serve`'s stop, seen once in CI).
        with self._killing:
            if self.process.returncode is None:
                self.process.kill()
                self.process.wait(5)
            for conn in (self._send, self._recv):
                with contextlib.suppress(OSError):
                    conn.close()


@dataclass
class Reply:
    status: int
    body: bytes
    media_type: str = "text/plain; charset=utf-8"
    headers: dict[str, str] = field(default_factory=dict)


def text_reply(status: int, message: str, **headers: str) -> Reply:
    """A plain-text answer: ``message`` and a newline."""
    return Reply(status, (message.rstrip() + "\n").encode("utf-8"), headers=headers)


# A worker's failure kinds as HTTP statuses ("error", anything unexpected, is a 500).
_FAILED = {"bad": 400, "refused": 403, "unacceptable": 406}


@dataclass(frozen=True)
class Served:
    """What the workers answer from: a project's generation (its name, when it was built) or
    a graph file (no generation)."""

    generation: str | None = None
    built: str | None = None  # UTC, to the second

    @classmethod
    def of(cls, graph: str) -> Served:
        """The generation of ``graph`` (a project) to serve now, checked (ProjectError)."""
        if not is_project(graph):
            return cls()
        gen = open_project(graph).generation
        stamp = (gen / "manifest.json").stat().st_mtime
        built = datetime.datetime.fromtimestamp(stamp, datetime.UTC)
        return cls(gen.name, built.strftime("%Y-%m-%d %H:%M:%S UTC"))


def current_name(graph: str) -> str | None:
    """The generation CURRENT names now (None when unreadable): a cheap test for a commit."""
    try:
        return (Path(graph) / META / "CURRENT").read_text(encoding="utf-8").strip()
    except OSError:
        return None


class QueryPool:
    """Worker processes with the graph loaded; a runaway query costs a worker, not the server.

    Cheap queries keep a lane: a query remembered as heavy (it timed out, or ran for more than
    half the timeout) may hold at most ``workers - 1`` workers, counting a killed worker until
    its replacement has loaded. Each client address may have ``max_per_client`` queries
    waiting or running. Answers are cached (least recently used out) up to ``cache_entries``
    entries and ``cache_bytes`` bytes of answers and query text.
    """

    HEAVY_MEMORY = 4096  # normalised query texts remembered as heavy

    def __init__(self, graph: str | Path, *, workers: int = 2, timeout: float = 10.0,
                 max_results: int = 10_000, load_timeout: float = 300.0,
                 cache_entries: int = 256, cache_bytes: int = 64 << 20,
                 max_per_client: int = 16, allow_service: tuple[str, ...] = (),
                 follow: float = 1.0) -> None:
        if Path(graph).is_dir() and not is_project(graph):
            open_project(graph)  # raises, saying how to upgrade an older export directory
        self.graph = str(graph if is_project(graph) else graph_file(graph))
        self.served = Served.of(self.graph)
        self.epoch = 0  # one more at each switch to a new generation
        self.notice = ""  # why a newer generation is not served (damaged), for the page
        self.timeout = timeout
        self.max_results = max_results
        self.load_timeout = load_timeout
        self.allow_service = tuple(allow_service)
        self.retry_after = str(max(1, math.ceil(timeout)))
        self._idle: queue.Queue[_Worker] = queue.Queue()
        self._updates: list[str] = []
        self._update_lock = threading.Lock()
        self._size = max(1, workers)
        self._closed = False
        self.triples = 0
        # Heavy queries share workers-1 slots (all of them with a single worker).
        self._heavy_slots = threading.BoundedSemaphore(max(1, self._size - 1))
        self._heavy: collections.OrderedDict[str, None] = collections.OrderedDict()
        self.max_per_client = max_per_client
        self._per_client: collections.Counter[str] = collections.Counter()
        self._lock = threading.Lock()  # guards _heavy and _per_client
        # The graph only changes through update(), which clears this: identical queries (saved
        # queries behind a dashboard, say) are answered from memory. Least recently used first out.
        self._cache: collections.OrderedDict[tuple, tuple[Reply, int]] = collections.OrderedDict()
        self.cache_entries = cache_entries
        self.cache_bytes = cache_bytes
        self.cached_bytes = 0
        self._cache_lock = threading.Lock()
        self._live: set[_Worker] = set()  # every worker not yet killed, busy or idle
        started = [self._spawn([]) for _ in range(self._size)]
        try:
            for worker in started:
                self.triples = worker.wait_ready(load_timeout)
        except ServiceError:
            for worker in started:
                worker.kill()
            raise
        for worker in started:
            self._idle.put(worker)
        if self.served.generation is not None and follow > 0:
            threading.Thread(target=self._follow, args=(follow,), daemon=True,
                             name="kg-sparql-follow").start()

    def _spawn(self, updates: list[str]) -> _Worker:
        worker = _Worker(self.graph, self.served.generation, updates, self.allow_service,
                         self.epoch)
        with self._lock:
            self._live.add(worker)
        return worker

    def _retire(self, worker: _Worker) -> None:
        worker.kill()
        with self._lock:
            self._live.discard(worker)

    def _release(self, worker: _Worker) -> None:
        """Back to the idle queue; a worker of an older epoch is retired instead."""
        if worker.epoch == self.epoch:
            self._idle.put(worker)
        else:
            self._retire(worker)

    def _follow(self, every: float) -> None:
        """Poll CURRENT; when it names another generation, switch to it (``_switch``). A
        generation that fails its check is not served: the old one goes on, with a notice."""
        refused = None
        while not self._closed:
            time.sleep(every)
            name = current_name(self.graph)
            if name in (None, self.served.generation, refused):
                continue
            try:
                served = Served.of(self.graph)
            except (KgError, OSError) as exc:  # (OSError: pruned meanwhile; the next is read)
                refused, self.notice = name, f"not serving {name}: {exc}"
                continue
            refused = None
            with contextlib.suppress(KgError, OSError):  # (tried again at the next poll)
                self._switch(served)

    def _switch(self, served: Served) -> None:
        """Load ``served`` into a full set of new workers, then make them the only ones a
        request can take: the old idle workers are retired now, busy ones when they end."""
        with self._update_lock:  # the updates replayed are all there are
            fresh = [_Worker(self.graph, served.generation, self._updates, self.allow_service,
                             self.epoch + 1) for _ in range(self._size)]
            try:
                triples = [worker.wait_ready(self.load_timeout) for worker in fresh][-1]
            except ServiceError:
                for worker in fresh:
                    worker.kill()
                raise
            with self._lock:
                self.epoch += 1
                self.served, self.triples, self.notice = served, triples, ""
                self._live.update(fresh)
            stale = []
            with contextlib.suppress(queue.Empty):
                while True:
                    stale.append(self._idle.get_nowait())
            for worker in fresh:
                self._idle.put(worker)
            for worker in stale:
                self._release(worker)
            with self._cache_lock:
                self._cache.clear()
                self.cached_bytes = 0

    @property
    def pids(self) -> list[int]:
        """The process ids of the live workers (to watch them, or to test a crash)."""
        with self._lock:
            return sorted(worker.process.pid for worker in self._live)

    @property
    def idle_workers(self) -> int:
        """Workers ready for a query right now (a replaced worker counts once it has loaded)."""
        return self._idle.qsize()

    def wait_idle(self, count: int | None = None, timeout: float = 60.0) -> bool:
        """Wait until ``count`` (default: all) workers are idle; False on timeout."""
        deadline = time.monotonic() + timeout
        while self._idle.qsize() < (count or self._size):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)
        return True

    @staticmethod
    def _heavy_key(text: str) -> str:
        # Lexing costs the HTTP thread ~5 µs a token: past 64 KB the raw text is the key.
        return normalise(text) if len(text) <= 65536 else text

    def is_heavy(self, text: str) -> bool:
        """Whether this query (comments and spacing aside) once timed out or ran long."""
        key = self._heavy_key(text)
        with self._lock:
            return key in self._heavy

    def _mark_heavy(self, key: str) -> None:
        with self._lock:
            self._heavy[key] = None
            self._heavy.move_to_end(key)
            while len(self._heavy) > self.HEAVY_MEMORY:
                self._heavy.popitem(last=False)

    def _acquire(self) -> _Worker | None:
        """An idle worker of the current epoch within the timeout (older ones are retired)."""
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                worker = self._idle.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                return None
            if worker.epoch == self.epoch:
                return worker
            self._retire(worker)

    def _replace(self, worker: _Worker, then: Callable[[], None] | None = None) -> None:
        """Kill ``worker`` and start a replacement in the background (replaying updates);
        ``then`` runs once the replacement is ready (or the pool closes)."""
        self._retire(worker)

        def start() -> None:
            try:
                # (a worker of an older epoch is not replaced: a full new set took over)
                while not self._closed and worker.epoch == self.epoch:
                    with self._update_lock:  # no update may slip between snapshot and ready
                        fresh = self._spawn(self._updates)
                        try:
                            fresh.wait_ready(self.load_timeout)
                        except ServiceError:
                            if not self._closed:
                                time.sleep(1)
                            continue
                    if self._closed:
                        fresh.kill()
                    else:
                        self._release(fresh)
                    return
            finally:
                if then is not None:
                    then()

        threading.Thread(target=start, daemon=True, name="kg-sparql-respawn").start()

    def _call(self, worker: _Worker, message: tuple,
              then: Callable[[], None] | None = None) -> tuple[str, Any] | None:
        """Send ``message``; the reply, or None after killing a worker that timed out, or
        ("crashed", how) when it died by itself (``then`` runs when its replacement is ready)."""
        try:
            worker.send(message)
            if worker.poll(self.timeout):
                return worker.recv()
            crashed = None
        except (EOFError, OSError):  # (BrokenPipeError is an OSError)
            crashed = ("crashed", _ending(worker.exit_code()))
        self._replace(worker, then)
        return crashed

    CACHE_MAX_BODY = 8 * 1024 * 1024

    def query(self, text: str, requested: str | None, accept: str | None,
              bindings: dict[str, str] | None = None, client: str = "") -> Reply:
        """Answer a query: from the cache, or on a worker (429 past the client's bound)."""
        # (the epoch: an answer of the generation served before is never given again)
        key = (text, requested, accept, tuple(sorted((bindings or {}).items())), self.epoch)
        with self._cache_lock:
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
                cached = hit[0]
                return Reply(cached.status, cached.body, cached.media_type,
                             {**cached.headers, "X-KG-Cache": "hit"})
        with self._lock:
            if self.max_per_client and self._per_client[client] >= self.max_per_client:
                return text_reply(429, f"too many queries at once from {client or 'this client'}: "
                             f"at most {self.max_per_client} may wait or run "
                             "(kg serve --max-per-client); retry when one has finished",
                             **{"Retry-After": "1"})
            self._per_client[client] += 1
        try:
            reply = self._query(text, requested, accept, bindings)
        finally:
            with self._lock:
                self._per_client[client] -= 1
                if not self._per_client[client]:
                    del self._per_client[client]
        if reply.status == 200:
            self._remember(key, reply)
        return reply

    def _remember(self, key: tuple, reply: Reply) -> None:
        cost = len(reply.body) + len(key[0]) + sum(len(v) for _, v in key[3])
        if not self.cache_entries or cost > min(self.CACHE_MAX_BODY, self.cache_bytes):
            return
        with self._cache_lock:
            if key in self._cache:
                return
            self._cache[key] = (reply, cost)
            self.cached_bytes += cost
            while len(self._cache) > self.cache_entries or self.cached_bytes > self.cache_bytes:
                _, (_, freed) = self._cache.popitem(last=False)
                self.cached_bytes -= freed

    def _query(self, text: str, requested: str | None, accept: str | None,
               bindings: dict[str, str] | None = None) -> Reply:
        heavy_key = self._heavy_key(text)
        with self._lock:
            heavy = heavy_key in self._heavy
        retry = {"Retry-After": self.retry_after}
        if heavy and not self._heavy_slots.acquire(timeout=self.timeout):
            return text_reply(503, "server busy: this query ran long before, so it may use only "
                              "the workers not kept for quick queries, and they stayed busy "
                              f"for {self.timeout:g} s; retry later, or narrow it", **retry)
        release = self._heavy_slots.release if heavy else None
        try:
            worker = self._acquire()
            if worker is None:
                return text_reply(503, "server busy: no query worker became free within "
                                  f"{self.timeout:g} s; retry later", **retry)
            started = time.monotonic()
            reply = self._call(worker, ("query", text, requested, accept, self.max_results,
                                        bindings or {}), then=release)
            if reply is None or reply[0] == "crashed":
                release = None  # handed to the respawn: the slot frees once the worker is back
                self._mark_heavy(heavy_key)
                if reply is not None:
                    return text_reply(500, f"query crashed the worker running it ({reply[1]}); "
                                      "a new worker is starting; do not send it again as it is")
                return text_reply(503, f"query stopped: it ran longer than the "
                                  f"{self.timeout:g} s timeout (kg serve --timeout); narrow it "
                                  "or add a LIMIT", **retry)
            elapsed = time.monotonic() - started
            self._release(worker)
        finally:
            if release is not None:
                release()
        if elapsed > self.timeout / 2:
            self._mark_heavy(heavy_key)
        return self._answer(reply, elapsed, worker.generation)

    def _answer(self, reply: tuple[str, Any], elapsed: float, generation: str | None) -> Reply:
        """A worker's reply to a query as an HTTP answer."""
        status, value = reply
        if status in _FAILED:
            return text_reply(_FAILED[status], value)
        if status != "ok":
            return text_reply(500, f"query failed: {value}")
        out: QueryOutput = value
        headers = {"X-KG-Results": str(out.rows), "X-KG-Elapsed-Ms": f"{elapsed * 1000:.1f}"}
        if generation is not None:
            headers["X-KG-Generation"] = generation
        if out.truncated:
            headers["X-KG-Truncated"] = f"results cut at --max-results {self.max_results}"
        return Reply(200, out.body, out.media_type, headers)

    def update(self, text: str) -> Reply:
        """Apply an update to every worker (serialised); 400 if the first rejects it."""
        with self._update_lock:
            taken = self._pause_all()
            if taken is None:
                return text_reply(503, "server busy: could not pause the query workers within "
                                  f"{self.timeout:g} s to apply the update; retry later",
                                  **{"Retry-After": self.retry_after})
            result = self._apply(taken, text)
            for worker in taken:
                if worker is not None:
                    self._release(worker)
            return result or Reply(204, b"")

    def _pause_all(self) -> list[_Worker | None] | None:
        """Every worker, taken from the idle queue within the timeout; None (and none taken)
        when they stay busy."""
        taken: list[_Worker | None] = []
        deadline = time.monotonic() + self.timeout
        while len(taken) < self._size:
            try:
                taken.append(self._idle.get(timeout=max(0.01, deadline - time.monotonic())))
            except queue.Empty:
                for worker in taken:
                    self._idle.put(worker)
                return None
        return taken

    def _apply(self, taken: list[_Worker | None], text: str) -> Reply | None:
        """Send the update to each taken worker (a killed one becomes None); an error Reply
        if the first fails or rejects it (transactional: nothing changed), else None."""
        for index, worker in enumerate(taken):
            assert worker is not None
            reply = self._call(worker, ("update", text, None, None, 0, {}))
            if reply is None or reply[0] == "crashed":
                taken[index] = None  # being replaced
                if index == 0:
                    return text_reply(503, f"update stopped after the {self.timeout:g} s "
                                      "timeout; nothing was changed",
                                      **{"Retry-After": self.retry_after})
                continue
            status, value = reply
            if status != "ok":
                # The first worker rejected it (transactional: nothing changed); stop here.
                code = {"bad": 400, "refused": 403}.get(status, 500)
                return text_reply(code, value if code != 500 else f"update failed: {value}")
            if index == 0:
                self._updates.append(text)
                with self._cache_lock:
                    self._cache.clear()
                    self.cached_bytes = 0
        return None

    def close(self) -> None:  # (kg serve's Ctrl-C, and every test's end)
        """Kill every worker, busy ones too: a runaway query must not outlive the server."""
        self._closed = True
        with self._lock:
            live, self._live = list(self._live), set()
        for worker in live:
            worker.kill()




def _ending(code: int | None) -> str:
    """How a worker ended, for the reply: "killed by SIGSEGV", "exit code 1"."""
    if code is None:
        return "it stopped answering"
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"killed by {signal.Signals(-code).name}"
    return f"exit code {code}"
