"""Drive a real headless Chromium over the DevTools protocol (CDP) — for the viz tests and bench.

Chromium starts with ``--remote-debugging-port=0`` and a fresh profile; the port is read from
the profile's ``DevToolsActivePort`` file and commands go over one websocket
(``websocket-client``) using flattened target sessions. Every console message, uncaught
exception, log entry, network request and JavaScript dialog is recorded.

    with Browser.launch() as browser:
        page = browser.open("file:///tmp/graph.html")
        page.evaluate("document.title")
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import struct
import subprocess
import tempfile
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path

FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
    "--disable-extensions", "--disable-default-apps", "--mute-audio",
    "--no-default-browser-check", "--disable-features=Translate,MediaRouter",
    # Any host lookup fails at once, so an accidental request shows up as an error, never a hang.
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost",
)


def find_chromium() -> str | None:
    """Path of a Chromium/Chrome binary ($KG_CHROMIUM, then the usual names), or None."""
    explicit = os.environ.get("KG_CHROMIUM")
    if explicit:
        return explicit if Path(explicit).is_file() else None
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


class BrowserError(RuntimeError):
    pass


@dataclass
class Page:
    """One tab, with everything it reported since it opened."""

    browser: Browser
    session: str
    console: list[dict] = field(default_factory=list)  # {"type", "text"}
    exceptions: list[str] = field(default_factory=list)
    log: list[dict] = field(default_factory=list)  # {"level", "text", "url"}
    requests: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)
    loaded: bool = False

    def send(self, method: str, params: dict | None = None, timeout: float = 30) -> dict:
        return self.browser.send(method, params, session=self.session, timeout=timeout)

    def navigate(self, url: str, timeout: float = 60) -> None:
        """Load ``url`` and wait for its load event."""
        self.loaded = False
        reply = self.send("Page.navigate", {"url": url}, timeout=timeout)
        if reply.get("errorText"):
            raise BrowserError(f"cannot open {url}: {reply['errorText']}")
        deadline = time.monotonic() + timeout
        while not self.loaded:
            if time.monotonic() > deadline:
                raise BrowserError(f"{url} did not finish loading within {timeout}s")
            self.browser.pump(0.05)

    def evaluate(self, expression: str, timeout: float = 30):
        """The JSON value of ``expression`` (promises awaited); page exceptions raise."""
        reply = self.send("Runtime.evaluate", {
            "expression": expression, "returnByValue": True, "awaitPromise": True,
        }, timeout=timeout)
        if "exceptionDetails" in reply:
            details = reply["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text")
            raise BrowserError(f"evaluating {expression[:80]!r}: {text}")
        return reply["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 30, interval: float = 0.05):
        """Poll ``expression`` until it is truthy; return its value."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise BrowserError(f"timed out after {timeout}s waiting for {expression!r}")
            time.sleep(interval)

    def screenshot(self, scale: float = 1.0) -> bytes:
        """A PNG of the viewport, shrunk by ``scale`` (small images decode fast in Python)."""
        size = self.evaluate("[window.innerWidth, window.innerHeight]")
        clip = {"x": 0, "y": 0, "width": size[0], "height": size[1], "scale": scale}
        reply = self.send("Page.captureScreenshot", {"format": "png", "clip": clip})
        return base64.b64decode(reply["data"])

    def errors(self) -> list[str]:
        """Console errors, uncaught exceptions and error log entries, as readable lines."""
        out = [f"console.{c['type']}: {c['text']}" for c in self.console
               if c["type"] in ("error", "assert")]
        out += [f"exception: {e}" for e in self.exceptions]
        out += [f"log {e['level']}: {e['text']} ({e.get('url', '')})" for e in self.log
                if e["level"] == "error"]
        return out

    def _event(self, method: str, params: dict) -> None:
        if method == "Runtime.consoleAPICalled":
            text = " ".join(str(a.get("value", a.get("description", ""))) for a in params["args"])
            self.console.append({"type": params["type"], "text": text})
        elif method == "Runtime.exceptionThrown":
            d = params["exceptionDetails"]
            self.exceptions.append(d.get("exception", {}).get("description") or d.get("text", ""))
        elif method == "Log.entryAdded":
            e = params["entry"]
            self.log.append({"level": e["level"], "text": e["text"], "url": e.get("url", "")})
        elif method == "Network.requestWillBeSent":
            self.requests.append(params["request"]["url"])
        elif method == "Page.javascriptDialogOpening":
            self.dialogs.append(params.get("message", ""))
            self.browser.send("Page.handleJavaScriptDialog", {"accept": True},
                              session=self.session, wait=False)
        elif method == "Page.loadEventFired":
            self.loaded = True


class Browser:
    """A headless Chromium process and its CDP websocket."""

    def __init__(self, process: subprocess.Popen, profile: str, ws) -> None:
        self.process, self.profile, self.ws = process, profile, ws
        self._next_id = 0
        self._pages: dict[str, Page] = {}

    @classmethod
    def launch(cls, binary: str | None = None, timeout: float = 30,
               window: tuple[int, int] = (1280, 800)) -> Browser:
        import websocket  # websocket-client

        binary = binary or find_chromium()
        if not binary:
            raise BrowserError("chromium not found; install it (apt-get install -y chromium) "
                               "or set KG_CHROMIUM")
        profile = tempfile.mkdtemp(prefix="kg-chromium-")
        args = [binary, *FLAGS, f"--user-data-dir={profile}", "--remote-debugging-port=0",
                f"--window-size={window[0]},{window[1]}", "about:blank"]
        process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        port_file = Path(profile) / "DevToolsActivePort"
        deadline = time.monotonic() + timeout
        while not (port_file.is_file() and port_file.read_text().count("\n") >= 1):
            if process.poll() is not None:
                err = process.stderr.read().decode(errors="replace") if process.stderr else ""
                shutil.rmtree(profile, ignore_errors=True)
                raise BrowserError(f"{binary} exited with {process.returncode}: {err[-2000:]}")
            if time.monotonic() > deadline:
                process.kill()
                shutil.rmtree(profile, ignore_errors=True)
                raise BrowserError(f"{binary} did not open a DevTools port within {timeout}s")
            time.sleep(0.05)
        port, path = port_file.read_text().split("\n")[:2]
        ws = websocket.create_connection(f"ws://127.0.0.1:{port.strip()}{path.strip()}",
                                         timeout=timeout, suppress_origin=True)
        return cls(process, profile, ws)

    def send(self, method: str, params: dict | None = None, *, session: str | None = None,
             timeout: float = 30, wait: bool = True) -> dict:
        self._next_id += 1
        message: dict = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        self.ws.send(json.dumps(message))
        if not wait:
            return {}
        return self._wait_reply(self._next_id, timeout)

    def _wait_reply(self, msg_id: int, timeout: float) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise BrowserError(f"no reply to CDP message {msg_id} within {timeout}s")
            self.ws.settimeout(remaining)
            message = json.loads(self.ws.recv())
            if message.get("id") == msg_id:
                if "error" in message:
                    raise BrowserError(f"CDP error: {message['error']}")
                return message.get("result", {})
            self._dispatch(message)

    def _dispatch(self, message: dict) -> None:
        page = self._pages.get(message.get("sessionId", ""))
        if page is not None and "method" in message:
            page._event(message["method"], message.get("params", {}))

    def pump(self, seconds: float) -> None:
        """Process events for ``seconds`` (late console messages, requests)."""
        deadline = time.monotonic() + seconds
        import websocket

        while (remaining := deadline - time.monotonic()) > 0:
            self.ws.settimeout(remaining)
            try:
                self._dispatch(json.loads(self.ws.recv()))
            except websocket.WebSocketTimeoutException:
                return

    def open(self, url: str, timeout: float = 60, width: int = 1280, height: int = 800) -> Page:
        """A new tab with every event domain on, navigated to ``url`` and loaded."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget",
                            {"targetId": target, "flatten": True})["sessionId"]
        page = Page(self, session)
        self._pages[session] = page
        for domain in ("Runtime", "Log", "Network", "Page"):
            page.send(f"{domain}.enable")
        page.send("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})
        page.navigate(url, timeout)
        return page

    def close(self) -> None:
        with contextlib.suppress(Exception):  # the browser may already be gone
            self.send("Browser.close", timeout=5)
        try:
            self.ws.close()
        finally:
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def png_pixels(png: bytes) -> tuple[int, int, list[bytes]]:
    """Decode an 8-bit RGB/RGBA non-interlaced PNG (what Chromium writes): width, height, rows."""
    if png[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, header = 8, b"", None
    while pos < len(png):
        length, kind = struct.unpack(">I4s", png[pos:pos + 8])
        chunk = png[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", chunk)
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + length
    if header is None:
        raise ValueError("PNG without IHDR")
    width, height, depth, colour, _, _, interlace = header
    channels = {2: 3, 6: 4}.get(colour)
    if depth != 8 or channels is None or interlace:
        raise ValueError(f"unsupported PNG (depth {depth}, colour type {colour})")
    raw = zlib.decompress(idat)
    stride = width * channels
    rows: list[bytes] = []
    prev = bytearray(stride)
    for y in range(height):
        ftype = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b = prev[i]
            c = prev[i - channels] if i >= channels else 0
            if ftype == 1:
                line[i] = (line[i] + a) & 0xFF
            elif ftype == 2:
                line[i] = (line[i] + b) & 0xFF
            elif ftype == 3:
                line[i] = (line[i] + (a + b) // 2) & 0xFF
            elif ftype == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pred) & 0xFF
        rows.append(bytes(line))
        prev = line
    return width, height, rows


def distinct_colours(png: bytes, step: int = 4) -> int:
    """How many distinct RGB colours a PNG has (sampling every ``step``-th pixel and row)."""
    width, _, rows = png_pixels(png)
    channels = len(rows[0]) // width
    seen = set()
    for row in rows[::step]:
        for x in range(0, width, step):
            seen.add(row[x * channels:x * channels + 3])
    return len(seen)
