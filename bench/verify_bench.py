"""What ``referee verify SITE`` costs now that it renders every page again.

Run ``python -m bench.verify_bench``. A tournament of the publish benchmark's five bots (4 per
table, one faulting in every tenth match it starts) is played in this process with
in-memory bots (the real engine, match runner, coordinator, store and logs) and published
once; then, side by side in one run and interleaved (``rounds`` times each, the median
printed):

* **data**: ``verify SITE`` as it was before it checked the pages: the deals, the schedule,
  every log replayed, the results chain, and the leaderboard derived from the logs
  (:func:`referee.verify.pages.check_pages` left out);
* **whole**: ``verify SITE`` as it is: the same, then every file listed, hashed, and
  rendered again from the verified data and compared;
* **publish**: the publication itself, for scale (a full one, nothing reused).
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path
from unittest import mock

from bench import installed_bytecode
from bench.publish_bench import _play_in_memory, _write
from referee.publish.site import publish_site
from referee.publish.source import load_results
from referee.tournament.file import load_tournament
from referee.verify import sites as verify


def _timed(work: object) -> float:
    started = time.perf_counter()
    work()  # type: ignore[operator]
    return time.perf_counter() - started


def main(matches: int = 400, rounds: int = 3, rules: str = '"arschloch"') -> dict[str, float]:
    print(installed_bytecode())
    folder = Path(tempfile.mkdtemp(prefix="referee-verify-bench-"))
    path = _write(folder / "t", deals=matches // 20, rules=rules)
    _play_in_memory(path, None, restart=True)
    site = folder / "site"

    def publish() -> None:
        publish_site(load_results(load_tournament(path)), site, reuse=False)

    def whole() -> None:
        assert verify.verify_site(site).ok

    def data() -> None:
        with mock.patch.object(verify, "check_pages", lambda *args: None):
            found = verify.verify_site(site)
        assert found.ok and found.pages == 0

    publish()
    times: dict[str, list[float]] = {"data": [], "whole": [], "publish": []}
    for _ in range(rounds):
        times["data"].append(_timed(data))
        times["whole"].append(_timed(whole))
        times["publish"].append(_timed(publish))
    found = verify.verify_site(site)
    figures = {name: statistics.median(values) for name, values in times.items()}
    one, five, _ = os.getloadavg()
    load = f"load {one:.1f} {five:.1f} on {os.cpu_count()} cores"
    print(
        f"verify SITE of {found.matches} matches, {found.pages} files compared "
        f"(median of {rounds}; {load}):"
    )
    for name, values in times.items():
        shown = ", ".join(f"{v:.2f}" for v in values)
        print(f"  {name:8} {figures[name]:6.2f} s   ({shown})")
    extra = figures["whole"] - figures["data"]
    print(f"  pages cost {extra:.2f} s more ({figures['whole'] / figures['data']:.2f}x the data)")
    return figures


if __name__ == "__main__":
    main()
