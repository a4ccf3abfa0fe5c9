"""What an incremental build runs beside it, in one worker process: the RDF store's delta,
the derived facts the store then holds, the ranking of the technique map's related papers and
the update of the store's derived facts.

The store's checkpoint and delta take 0.3-1.0 s of an incremental build (ICLR+ICML 2024, 50
papers added or removed), and pyoxigraph's SPARQL updates hold the GIL: a thread would not
overlap them with this process's resolution and index writing, a process does. Once the index
is written, the worker ranks every paper's related papers (1.1-1.3 s, kept in the generation:
``generation.stored_related``) and updates the derived facts (0.4-0.5 s; it read those the
store holds, another 0.4 s, while the index was being written) while this process draws the
rest of the map.
The worker runs what it is given in turn, so the derived facts follow the delta.
Its work and results travel pickled (top-level functions of plain data). It ends when the
build process does, even killed, rather than write on into a generation the next build
removes and makes again (or hold DIR's build lock, which a forked worker inherits).

The worker is forked where this process runs no other thread (the CLI's, at the start of
a build: the fork is instant and has kg imported), else ``spawn``ed (0.1-0.25 s to start):
a fork of a process where RocksDB's thread pool (once a store was opened) or a Dask client
runs could inherit a lock one of them holds, forever. As with any ``spawn``, a script that
calls ``kg.project.build`` guards its own code with ``if __name__ == "__main__":``.

>>> with store_worker() as worker:
...     wait(worker.submit(sum, range(10)))
45
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from kg.errors import KgError


def store_worker() -> ProcessPoolExecutor:
    """One worker process; leaving its ``with`` block waits for what it was given."""
    method = "fork" if _single_threaded() else "spawn"
    return ProcessPoolExecutor(1, mp_context=multiprocessing.get_context(method),
                               initializer=_die_with, initargs=(os.getpid(),))


def _single_threaded() -> bool:
    """True when this process runs one thread, native ones counted (Linux; elsewhere False)."""
    try:
        return len(os.listdir("/proc/self/task")) == 1
    except OSError:
        return False


def _die_with(parent: int) -> None:
    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.1)
        os._exit(1)

    threading.Thread(target=watch, name="kg-watch", daemon=True).start()


def wait(future: Future) -> Any:
    """The result of ``future``; a worker process that died (most likely out of memory) is
    told as a KgError."""
    try:
        return future.result()
    except BrokenProcessPool as exc:
        raise KgError("a helper process of the build died (out of memory?); run the command "
                      "again") from exc
