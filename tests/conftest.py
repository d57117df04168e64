"""Shared test set-up: quiet progress bars, a non-interactive matplotlib, and a record of the
suite's wall time (build/last_test_run.json) that `make bench` prints."""

import json
import os
import time
from datetime import datetime, timezone
from pathlib import Path

os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("TQDM_DISABLE", "1")

_T0 = time.perf_counter()


def pytest_sessionfinish(session, exitstatus):
    rep = session.config.pluginmanager.get_plugin("terminalreporter")
    if rep is None or getattr(session.config.option, "collectonly", False):
        return
    counts = {k: len(rep.stats.get(k, [])) for k in ("passed", "failed", "skipped", "error")}
    if sum(counts.values()) < 50:  # a partial run (-k, one file) is not the suite
        return
    root = Path(session.config.rootpath)
    out = root / "build" / "last_test_run.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"wall_s": time.perf_counter() - _T0, **counts, "exitstatus": int(exitstatus),
                               "finished": datetime.now(timezone.utc).isoformat(timespec="seconds")}))
