"""Headless Chromium driven over the Chrome DevTools Protocol, standard library only: the browser test of the viewer
(``tests/integration/test_view_browser.py``) and ``scripts/benchmarks/bench_view.py`` (the docs' screenshots, the page's
size and open time) open pages with it.

Chromium talks CDP over a pipe (``--remote-debugging-pipe``: it reads NUL-terminated JSON messages on fd 3 and
writes on fd 4), so no websocket client and no port are needed. One page (a target attached in flat mode) per
:class:`Chromium`; ``Network`` events are recorded from the start, so a test can count the page's requests.

    with Chromium() as b:
        b.open("file:///tmp/page.html")          # waits for window.__ready
        b.eval("document.title"); b.click("#list li"); png = b.screenshot()
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import time
from typing import Dict, List, Optional

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "chrome")


class BrowserError(RuntimeError):
    """Chromium missing, gone, or a CDP command failed."""


def find_chromium() -> Optional[str]:
    """The Chromium executable: ``$CHROMIUM`` or the first of :data:`CANDIDATES` on the PATH (Debian: ``chromium``)."""
    if os.environ.get("CHROMIUM"):
        return os.environ["CHROMIUM"]
    return next((p for p in map(shutil.which, CANDIDATES) if p), None)


def _high_pipe():
    """os.pipe() with both ends on fds >= 10, clear of the 3 and 4 the child's redirections write."""
    ends = []
    for fd in os.pipe():
        ends.append(fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10))
        os.close(fd)
    return ends


class Chromium:
    """A headless Chromium with one page. ``width`` x ``height``: the window (screenshots)."""

    def __init__(self, executable: Optional[str] = None, width: int = 1280, height: int = 860,
                 timeout: float = 30.0):
        exe = executable or find_chromium()
        if not exe:
            raise BrowserError(f"no Chromium found (tried $CHROMIUM, {', '.join(CANDIDATES)}): on Debian, "
                               f"apt-get install chromium (make browser)")
        self.timeout, self.events, self._id, self._buf = timeout, [], 0, b""
        self._profile = tempfile.mkdtemp(prefix="fairseq-tree-chromium-")
        to_chrome, self._write = _high_pipe()
        self._read, from_chrome = _high_pipe()
        flags = ["--headless=new", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe", "--no-first-run",
                 "--no-default-browser-check", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--disable-extensions", "--mute-audio", "--hide-scrollbars",
                 f"--user-data-dir={self._profile}", f"--window-size={width},{height}", "about:blank"]
        # bash puts the pipe ends on the fds Chromium reads (3) and writes (4)
        cmd = ["bash", "-c", f'exec "$0" "$@" 3<&{to_chrome} 4>&{from_chrome} {to_chrome}<&- {from_chrome}>&-',
               exe] + flags
        self.proc = subprocess.Popen(cmd, pass_fds=(to_chrome, from_chrome), stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_chrome)
        os.close(from_chrome)
        self.session = None
        target = self.send("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.send("Target.attachToTarget", targetId=target, flatten=True, session=False)["sessionId"]
        for domain in ("Page", "Runtime", "Network"):
            self.send(f"{domain}.enable")
        self.send("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1,
                  mobile=False)

    # ---------------------------------------------------------------- protocol
    def send(self, method: str, session: bool = True, **params) -> Dict:
        """One CDP command (to the page's session unless ``session=False``) -> its result; events that arrive
        meanwhile go to :attr:`events`."""
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params}
        if session and self.session:
            msg["sessionId"] = self.session
        os.write(self._write, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._next(deadline)
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            if "method" in reply:
                self.events.append(reply)

    def _next(self, deadline: float) -> Dict:
        while b"\0" not in self._buf:
            if time.monotonic() > deadline:
                raise BrowserError(f"no answer from Chromium in {self.timeout} s")
            chunk = os.read(self._read, 1 << 16)
            if not chunk:
                raise BrowserError(f"Chromium closed the pipe (exit status {self.proc.poll()})")
            self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        return json.loads(raw)

    # ---------------------------------------------------------------- page
    def open(self, url: str, ready: str = "window.__ready === true") -> float:
        """Navigate to ``url`` and wait until the expression ``ready`` is true -> seconds from the navigation."""
        t0 = time.monotonic()
        self.send("Page.navigate", url=url)
        self.wait(ready)
        return time.monotonic() - t0

    def wait(self, expression: str) -> None:
        deadline = time.monotonic() + self.timeout
        while not self.eval(expression):
            if time.monotonic() > deadline:
                raise BrowserError(f"timed out waiting for {expression!r}")
            time.sleep(0.01)

    def eval(self, expression: str):
        """The value of a JavaScript expression in the page (JSON-serialisable values)."""
        r = self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            raise BrowserError(f"{expression!r}: {r['exceptionDetails'].get('exception', r['exceptionDetails'])}")
        return r["result"].get("value")

    def click(self, selector: str) -> None:
        """A real mouse click (pressed and released) at the centre of the first element matching ``selector``."""
        box = self.eval(f"(() => {{ const e = document.querySelector({json.dumps(selector)}); if (!e) return null;"
                        f" e.scrollIntoView({{block: 'center'}}); const r = e.getBoundingClientRect();"
                        f" return [r.x + r.width / 2, r.y + r.height / 2]; }})()")
        if box is None:
            raise BrowserError(f"nothing matches {selector!r}")
        for kind in ("mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", type=kind, x=box[0], y=box[1], button="left", clickCount=1)

    def screenshot(self, path: Optional[str] = None) -> bytes:
        """The viewport as PNG bytes (written to ``path`` when given)."""
        png = base64.b64decode(self.send("Page.captureScreenshot", format="png")["data"])
        if path:
            with open(path, "wb") as f:
                f.write(png)
        return png

    def requests(self) -> List[str]:
        """The URLs of every request the page made (``Network.requestWillBeSent``), the page itself included."""
        return [e["params"]["request"]["url"] for e in self.events if e["method"] == "Network.requestWillBeSent"]

    def close(self) -> None:
        try:
            self.send("Browser.close", session=False)
        except (BrowserError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._read, self._write):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self._profile, ignore_errors=True)

    def __enter__(self) -> "Chromium":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
