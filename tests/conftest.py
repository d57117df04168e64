"""Shared test set-up: quiet progress bars, a non-interactive matplotlib, and a record of the
suite's wall time (build/last_test_run.json) that `make bench` prints."""

import json
import os
import subprocess
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("TQDM_DISABLE", "1")

_T0 = time.perf_counter()
ROOT = Path(__file__).resolve().parent.parent


def seeds_dir() -> Path | None:
    """The folder of the two source articles: $GPUKIT_SEEDS, else ../shared/seeds next to the repository
    (where CI lays them out), else next to the main checkout of a git worktree; None when absent."""
    candidates = [Path(os.environ["GPUKIT_SEEDS"])] if os.environ.get("GPUKIT_SEEDS") else []
    candidates.append(ROOT.parent / "shared" / "seeds")
    try:  # a worktree: the main checkout is the parent of the common git dir
        common = subprocess.run(
            ["git", "rev-parse", "--path-format=absolute", "--git-common-dir"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
        if common:
            candidates.append(Path(common).parent.parent / "shared" / "seeds")
    except (OSError, subprocess.SubprocessError):
        pass
    return next((c for c in candidates if c.is_dir() and any(c.glob("*.txt"))), None)


@pytest.fixture(scope="session")
def seeds() -> Path:
    """The source articles' folder; the test is skipped, with the places looked at, when it is absent."""
    found = seeds_dir()
    if found is None:
        pytest.skip(
            "source articles not found: set GPUKIT_SEEDS or lay them out at ../shared/seeds "
            "next to the repository"
        )
    return found


def pytest_sessionfinish(session, exitstatus):
    rep = session.config.pluginmanager.get_plugin("terminalreporter")
    if rep is None or getattr(session.config.option, "collectonly", False):
        return
    counts = {k: len(rep.stats.get(k, [])) for k in ("passed", "failed", "skipped", "error")}
    if sum(counts.values()) < 50:  # a partial run (-k, one file) is not the suite
        return
    root = Path(session.config.rootpath)
    quick = (
        os.environ.get("GPUKIT_TEST_QUICK") == "1"
    )  # `make test-quick` is not the suite that make bench quotes
    out = root / "build" / ("last_quick_run.json" if quick else "last_test_run.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "wall_s": time.perf_counter() - _T0,
                **counts,
                "exitstatus": int(exitstatus),
                "finished": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            }
        )
    )
