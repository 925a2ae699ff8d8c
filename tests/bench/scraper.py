"""A scraper of a /metrics endpoint, as Prometheus is, but far more often: what serving the
metrics costs a run, for `make bench`'s figures with them on and off."""

from __future__ import annotations

import threading
import urllib.request

INTERVAL = 0.5  # seconds between scrapes (Prometheus's are 15 s to 1 min)


class Scraper:
    def __init__(self, port: int) -> None:
        self.url = f"http://127.0.0.1:{port}/metrics"
        self.scrapes = 0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self._done.wait(INTERVAL):
            try:
                with urllib.request.urlopen(self.url, timeout=5) as response:
                    response.read()
                self.scrapes += 1
            except OSError:
                continue  # not serving yet, or done

    def __enter__(self) -> Scraper:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._done.set()
        self._thread.join()
