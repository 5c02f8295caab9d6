"""Drive headless Chromium over its DevTools protocol, with no extra dependency.

``--remote-debugging-pipe`` makes Chromium read protocol commands from file descriptor 3
and write replies and events to descriptor 4, each message JSON ended by a NUL byte, so
two OS pipes stand in for a websocket client.
"""
from __future__ import annotations

import base64
import json
import os
import select
import shutil
import subprocess
import tempfile
import time

NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find() -> str | None:
    return next((path for path in map(shutil.which, NAMES) if path), None)


class Browser:
    def __init__(self, executable: str, *, width: int = 1280, height: int = 900, timeout: float = 60.0):
        self.timeout = timeout
        self.events: list[dict] = []
        self._next_id = 0
        self._buffer = b""
        self._profile = tempfile.mkdtemp(prefix="report-browser-")
        cmd_read, self._cmd_write = os.pipe()
        self._reply_read, reply_write = os.pipe()

        def wire_pipes():  # in the child, before exec: the protocol lives on fds 3 and 4
            high = [os.dup(cmd_read), os.dup(reply_write)]  # out of the way of 3 and 4 first
            for target, fd in zip((3, 4), high):
                os.dup2(fd, target, inheritable=True)

        self._log = open(os.path.join(self._profile, "stderr.log"), "w+b")
        self.proc = subprocess.Popen(
            [executable, "--headless", "--remote-debugging-pipe", "--no-sandbox", "--disable-gpu",
             "--no-first-run", "--no-default-browser-check", "--disable-extensions",
             f"--user-data-dir={self._profile}", f"--window-size={width},{height}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self._log,
            preexec_fn=wire_pipes, close_fds=False)
        os.close(cmd_read)
        os.close(reply_write)
        targets = self.call("Target.getTargets")["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        self.session = self.call("Target.attachToTarget", targetId=page["targetId"], flatten=True)["sessionId"]

    # -- protocol ---------------------------------------------------------------------

    def _send(self, method: str, params: dict, session: str | None) -> int:
        self._next_id += 1
        msg = {"id": self._next_id, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        os.write(self._cmd_write, json.dumps(msg).encode() + b"\0")
        return self._next_id

    def _read(self, deadline: float) -> dict:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._reply_read], [], [], left)[0]:
                raise TimeoutError("Chromium did not answer in time")
            chunk = os.read(self._reply_read, 1 << 16)
            if not chunk:
                self._log.seek(0)
                raise RuntimeError(f"Chromium exited: {self._log.read().decode(errors='replace')[-2000:]}")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(raw)

    def call(self, method: str, _session: bool = False, **params) -> dict:
        """Send one command and wait for its reply, keeping every event that arrives meanwhile."""
        msg_id = self._send(method, params, self.session if _session else None)
        deadline = time.monotonic() + self.timeout
        while True:
            msg = self._read(deadline)
            if msg.get("id") == msg_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            if "method" in msg:
                self.events.append(msg)

    def page(self, method: str, **params) -> dict:
        return self.call(method, True, **params)

    def wait_for(self, event: str) -> dict:
        deadline = time.monotonic() + self.timeout
        for msg in self.events:
            if msg["method"] == event:
                return msg
        while True:
            msg = self._read(deadline)
            if "method" in msg:
                self.events.append(msg)
                if msg["method"] == event:
                    return msg

    # -- what the tests use -----------------------------------------------------------

    def open(self, url: str) -> None:
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.page(f"{domain}.enable")
        self.page("Page.navigate", url=url)
        self.wait_for("Page.loadEventFired")

    def evaluate(self, expression: str):
        out = self.page("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in out:
            raise RuntimeError(f"evaluation failed: {out['exceptionDetails']}")
        return out["result"].get("value")

    def console_errors(self) -> list[str]:
        errors = []
        for e in self.events:
            p = e.get("params", {})
            if e["method"] == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                errors.append(" ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", [])))
            elif e["method"] == "Runtime.exceptionThrown":
                errors.append(p["exceptionDetails"].get("text", "exception"))
            elif e["method"] == "Log.entryAdded" and p["entry"].get("level") == "error":
                errors.append(f"{p['entry'].get('source')}: {p['entry'].get('text')} {p['entry'].get('url', '')}")
        return errors

    def requested_urls(self) -> list[str]:
        return [e["params"]["request"]["url"] for e in self.events if e["method"] == "Network.requestWillBeSent"]

    def screenshot(self, path: str, *, full_page: bool = False) -> None:
        params = {"format": "png"}
        if full_page:
            size = self.page("Page.getLayoutMetrics")["cssContentSize"]
            params.update(captureBeyondViewport=True,
                          clip={"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1})
        data = self.page("Page.captureScreenshot", **params)["data"]
        with open(path, "wb") as fh:
            fh.write(base64.b64decode(data))

    def close(self) -> None:
        try:
            self.call("Browser.close")
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._cmd_write)
        os.close(self._reply_read)
        self._log.close()
        shutil.rmtree(self._profile, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
