"""Small helpers shared by several test files (import as `from helpers import ...`)."""

from __future__ import annotations

import concurrent.futures
import os
import signal
from contextlib import contextmanager
from pathlib import Path


def tcp_listeners() -> list[tuple[str, int, int]]:
    """(local address as /proc/net/tcp{,6} write it in hex, port, socket inode) of every TCP socket in
    LISTEN state on this machine; [] where /proc/net/tcp does not exist."""
    out = []
    for f in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(f).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            cols = line.split()
            if cols[3] == "0A":  # 0A = LISTEN
                addr, port = cols[1].rsplit(":", 1)
                out.append((addr, int(port, 16), int(cols[9])))
    return out


def as_foreground_job() -> None:
    """preexec_fn for a child that a test will Ctrl-C: SIGINT back to its default disposition, as in a
    terminal's foreground job. A suite started as a background job (`make test &`, a CI step run
    with `&`) inherits SIGINT ignored, and an ignored signal stays ignored across fork and exec, so
    the child's Python would never raise KeyboardInterrupt."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@contextmanager
def side_by_side(request, test, argname: str, run, workers: int):
    """Start run(value) for the `argname` value of every case of the parametrized `test` that this
    session selected (-k, ::id), `workers` at a time on threads; yield {value: Future}. On the way out
    the runs not started are cancelled and the started ones awaited (each must end by its own timeout)."""
    wanted = [
        it.callspec.params[argname]
        for it in request.session.items
        if getattr(it, "function", None) is test and hasattr(it, "callspec")
    ]
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix=test.__name__)
    runs = {v: pool.submit(run, v) for v in wanted}
    try:
        yield runs
    finally:
        for fut in runs.values():
            fut.cancel()
        pool.shutdown(wait=True)


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    """`gpukit ARGV` in this process: (exit code, stdout, stderr)."""
    from gpukit.cli import main

    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def live_children() -> list[str]:
    """Command lines of this test process's live children (no zombies), minus multiprocessing's
    resource tracker (started on first use, it stays for the life of the process by design)."""
    out = []
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        try:
            pids = (task / "children").read_text().split()
        except OSError:
            continue
        for pid in pids:
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
                state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if "resource_tracker" not in cmd and state != "Z":
                out.append(cmd)
    return out
