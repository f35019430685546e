#!/usr/bin/env python3
"""How long a review report (`neardup report IDX -o report.html`) takes to open in Chromium.

Two figures per run, each in a fresh headless Chromium with a new profile:

  - through the DevTools protocol (`--remote-debugging-pipe`): the page is navigated to and
    the script reads the Navigation Timing entry once the load event has fired: milliseconds
    from the start of navigation to DOMContentLoaded and to the end of the load event, and
    the report's own `data-render-ms` (set once its script has rendered the page);
  - `chromium --headless --dump-dom` wall time (start, load, serialise the DOM, exit), and
    the same for an empty page, whose difference is what the report adds to a browser's
    start and exit.

Prints each run and the median of each figure. Needs Debian's `chromium` package and Python 3
only (no third-party module). Usage:

    python3 tools/report_open_time.py report.html [--runs 5] [--chromium /usr/bin/chromium]
"""
import argparse
import json
import os
import pathlib
import re
import statistics
import subprocess
import tempfile
import time

# Headless Chromium's flags, shared with tests/report.rs: a fresh profile, no network, no GPU.
FLAGS = (pathlib.Path(__file__).parent / "chromium-flags.txt").read_text().split()


def dump_dom_seconds(chromium, url):
    """Wall time of `--dump-dom` on `url`, and the DOM it printed."""
    with tempfile.TemporaryDirectory() as profile:
        start = time.perf_counter()
        out = subprocess.run(
            [chromium, *FLAGS, f"--user-data-dir={profile}", "--dump-dom", url],
            capture_output=True,
            check=True,
        )
        return time.perf_counter() - start, out.stdout.decode("utf-8", "replace")


class Pipe:
    """The DevTools protocol over `--remote-debugging-pipe` (fd 3 in, fd 4 out, messages
    ended by NUL)."""

    def __init__(self, chromium, profile):
        to_browser_r, self.to_browser = os.pipe()
        self.from_browser, from_browser_w = os.pipe()

        def fds():
            # Copies first (a pipe may already sit at 3 or 4); dup2 makes 3 and 4 inheritable.
            ends = os.dup(to_browser_r), os.dup(from_browser_w)
            os.dup2(ends[0], 3)
            os.dup2(ends[1], 4)

        self.proc = subprocess.Popen(
            [chromium, *FLAGS, f"--user-data-dir={profile}", "--remote-debugging-pipe",
             "about:blank"],
            preexec_fn=fds,
            close_fds=False,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        self.next_id = 0
        self.buffer = b""

    def send(self, method, params=None, session=None):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self.to_browser, json.dumps(message).encode() + b"\0")
        return self.next_id

    def receive(self):
        while b"\0" not in self.buffer:
            chunk = os.read(self.from_browser, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium closed the DevTools pipe")
            self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(message)

    def call(self, method, params=None, session=None):
        wanted = self.send(method, params, session)
        while True:
            message = self.receive()
            if message.get("id") == wanted:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message["result"]

    def wait_for(self, event):
        while self.receive().get("method") != event:
            pass

    def close(self):
        try:
            self.send("Browser.close")
            self.proc.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()


def navigation_ms(chromium, url):
    """(the wait from sending Page.navigate to the load event, as this script sees it;
    DOMContentLoaded, load event end and data-render-ms from navigation start), in ms."""
    with tempfile.TemporaryDirectory() as profile:
        pipe = Pipe(chromium, profile)
        try:
            targets = pipe.call("Target.getTargets")["targetInfos"]
            page = next(t["targetId"] for t in targets if t["type"] == "page")
            session = pipe.call("Target.attachToTarget", {"targetId": page, "flatten": True})[
                "sessionId"]
            pipe.call("Page.enable", session=session)
            start = time.perf_counter()
            pipe.call("Page.navigate", {"url": url}, session=session)
            pipe.wait_for("Page.loadEventFired")
            waited = (time.perf_counter() - start) * 1000
            # The load event's end is set once its handlers have run; wait a moment for it.
            expression = """new Promise((done) => setTimeout(() => {
                const n = performance.getEntriesByType("navigation")[0];
                done(JSON.stringify([n.domContentLoadedEventEnd, n.loadEventEnd,
                                     Number(document.body.dataset.renderMs)]));
            }, 50))"""
            result = pipe.call(
                "Runtime.evaluate",
                {"expression": expression, "awaitPromise": True, "returnByValue": True},
                session=session,
            )
            return [waited, *json.loads(result["result"]["value"])]
        finally:
            pipe.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("report")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    args = parser.parse_args()
    report = pathlib.Path(args.report).resolve()
    url = report.as_uri()
    with tempfile.TemporaryDirectory() as d:
        blank = pathlib.Path(d, "blank.html")
        blank.write_text("<!doctype html><title>blank</title><body></body>")
        rows = []
        print(f"{report.name}: {report.stat().st_size:,} bytes, {args.runs} runs")
        print("run  navigate-to-load ms  DOMContentLoaded ms  load end ms  data-render-ms  "
              "dump-dom s  empty page dump-dom s")
        for run in range(args.runs):
            waited, loaded, load_end, render = navigation_ms(args.chromium, url)
            dump, dom = dump_dom_seconds(args.chromium, url)
            if not re.search(r'data-ready="1"', dom):
                raise SystemExit("the dumped DOM has no data-ready=\"1\": the report's script "
                                 "did not finish")
            empty, _ = dump_dom_seconds(args.chromium, blank.as_uri())
            rows.append((waited, loaded, load_end, render, dump, empty))
            print(f"{run + 1:3}  {waited:20.0f}  {loaded:19.0f}  {load_end:11.0f}  "
                  f"{render:14.0f}  {dump:10.2f}  {empty:21.2f}")
        medians = [statistics.median(column) for column in zip(*rows)]
        print(f"median: load event {medians[0]:.0f} ms after Page.navigate; DOMContentLoaded "
              f"{medians[1]:.0f} ms, load event end {medians[2]:.0f} ms, rendered "
              f"{medians[3]:.0f} ms after navigation start; --dump-dom {medians[4]:.2f} s "
              f"({medians[4] - medians[5]:+.2f} s over an empty page's {medians[5]:.2f} s)")


if __name__ == "__main__":
    main()
