"""Run a rank body on local ranks (torch.multiprocessing, spawn) or under torchrun; leave nothing behind.

Every launcher hands its own rank body, a function body(cfg) -> payload that runs inside an
initialized process group (collectives.collective_body, article.article_body, ddp_rank.ddp_body,
fsdp.fsdp_body), to one of the two ways of running it:
- `spawn(body, cfg, n_ranks, timeout_s)`: local ranks from Python or a notebook, rank 0's payload;
- `torchrun_rank(cfg, body, report)`: this process is one rank started by torchrun (one node or
  many, under SLURM's srun too): env:// rendezvous from RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR
  and MASTER_PORT; rank 0 hands the payload to `report`.
Both set a rank up the same way (gpukit.bench.ranks.setup_rank: threads, the GPU of the local rank),
make it die with its parent (supervise.die_with_parent) and destroy the group on every exit path.

The launcher holds a TCPStore server on a port the OS picks (port 0) for the whole run, listening
on 127.0.0.1 only; ranks connect to it as clients. Nothing can take the port between choosing and
binding it, so two runs at the same time never collide (the bind-0-then-release `free_port` is
racy: only for callers that must name a port first). Ranks report ("ok" | "error", rank, payload) on a
queue; on error, death or timeout the others are terminated, then killed, and the store and queue
are closed. A rank's native stderr (gloo's C++ "failed to connect" lines, c10d's log, a Python
traceback) goes to a log file, not to the terminal: the launcher shows only its one line. The logs
are rank{R}.log in the directory named by GPUKIT_RANK_LOGS (created, kept) or in a temporary
directory removed when the run ends. The rank body must live in an importable module (spawn pickles it by name:
functions defined in a notebook cannot be spawned).

Signals (when called from the main thread): the ranks start with SIGINT ignored, so Ctrl-C reaches
only the launcher, which stops them and raises KeyboardInterrupt (the CLI: "interrupted", exit 130).
SIGTERM/SIGHUP stop the ranks the same way, print one line, then take their usual course (exit
status 128 + signal, as netlab does; gpukit.bench.supervise.signals_reraised). Each rank also dies
with the launcher (supervise.die_with_parent), so even a SIGKILLed launcher leaves no rank behind.
Used in: gpukit.bench.collectives, gpukit.bench.article, gpukit.bench.ddp, gpukit.bench.fsdp.
"""

from __future__ import annotations

import os
import queue as _queue
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
from datetime import timedelta

from gpukit.bench.ranks import check_local_gpu_count, setup_rank
from gpukit.bench.supervise import signals_reraised, stop

# a rank's error line starting with one of these is bad input found inside the rank: ValueError
_INPUT_ERRORS = ("UnsupportedOp: ", "ValueError: ")


def free_port() -> int:
    """A port the OS calls free now (bind to port 0, read it, release). Racy: prefer `master_store`."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def master_store(timeout_s: float):
    """A TCPStore server on an OS-chosen port (`.port`) that listens on 127.0.0.1 only, held by the
    caller. TCPStore left to itself listens on every interface, so the socket is bound here and
    handed over (`master_listen_fd`; the store owns and closes it)."""
    import torch.distributed as dist

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind(("127.0.0.1", 0))
        sock.listen(128)
        store = dist.TCPStore(
            "127.0.0.1",
            sock.getsockname()[1],
            world_size=None,
            is_master=True,
            wait_for_workers=False,
            timeout=timedelta(seconds=timeout_s),
            master_listen_fd=sock.fileno(),
        )
    except BaseException:
        sock.close()
        raise
    sock.detach()  # the store closes the descriptor when it goes
    return store


def _start_ranks(procs) -> None:
    """Start the ranks with SIGINT ignored (inherited through exec): Ctrl-C in a terminal signals the
    whole process group, and the launcher, not each rank, decides how they stop. They also start with
    TORCH_CPP_LOG_LEVEL=FATAL unless set: a failing rank reports one line through the queue, and c10d's
    own error log (C++ stack frames) would bury it (set TORCH_CPP_LOG_LEVEL=INFO to see it)."""
    main = threading.current_thread() is threading.main_thread()
    prev = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None
    set_log = "TORCH_CPP_LOG_LEVEL" not in os.environ
    if set_log:  # spawn copies os.environ when a process starts
        os.environ["TORCH_CPP_LOG_LEVEL"] = "FATAL"
    try:
        for p in procs:
            p.start()
    finally:
        if set_log:
            os.environ.pop("TORCH_CPP_LOG_LEVEL", None)
        if main and prev is not None:  # None: a handler not set from Python, which cannot be restored
            signal.signal(signal.SIGINT, prev)


def spawn(body, cfg: dict, n_ranks: int, timeout_s: float, startup_s: float | None = None):
    """Run body(cfg) on `n_ranks` spawned ranks (rank_main: store, group, set-up); rank 0's payload.

    Waits at most `timeout_s` plus `startup_s` (default 30 s + 5 s per rank: python and torch are
    imported in every rank), then raises TimeoutError. A rank's ValueError/UnsupportedOp becomes a
    ValueError here, a rank's timeout (gloo "Timed out") a TimeoutError, other failures a
    RuntimeError naming the rank (a rank that died first). In every case the ranks are terminated
    (then killed) and joined, and the store and the queue are closed; signals: module docstring.
    """
    import torch.multiprocessing as mp

    ctx = mp.get_context("spawn")
    # the server's own client connects to it at once; a tiny --timeout must not make that fail
    store = master_store(max(timeout_s, 30.0))
    q = ctx.Queue()
    log_dir, keep_logs = rank_log_dir()
    procs = [
        ctx.Process(
            target=rank_main,
            args=(r, n_ranks, store.port, cfg, q, body, os.path.join(log_dir, f"rank{r}.log")),
            daemon=True,
        )
        for r in range(n_ranks)
    ]
    deadline = time.monotonic() + timeout_s + (30 + 5 * n_ranks if startup_s is None else startup_s)
    payload, errors, done = None, [], set()
    with signals_reraised("benchmark ranks stopped"):
        try:
            _start_ranks(procs)
            while len(done) < n_ranks and not errors:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(
                        f"benchmark timed out after {timeout_s:g} s ({len(done)} of {n_ranks} "
                        "ranks finished; raise --timeout)"
                    )
                try:
                    status, rank, data = q.get(timeout=min(1.0, left))
                except _queue.Empty:
                    errors += _deaths(procs)
                    continue
                done.add(rank)
                if status == "error":
                    errors.append(f"rank {rank}: {data}")
                elif rank == 0:
                    payload = data
            if errors:
                for prefix in _INPUT_ERRORS:
                    if prefix in errors[0]:
                        raise ValueError(errors[0].split(prefix, 1)[1])
                time.sleep(0.2)  # a peer's death is what the others report as "connection closed": name it
                died = _deaths(procs)
                first = died[0] if died else errors[0]
                if "timed out" in first.lower() or "timeout" in first.lower():
                    raise TimeoutError(f"benchmark timed out: {first} (raise --timeout)")
                raise RuntimeError(f"benchmark worker failed: {first}")
            for p in procs:
                p.join(timeout=max(1.0, min(10.0, deadline - time.monotonic())))
            return payload
        finally:
            stop(procs, grace_s=5.0)
            q.close()
            q.join_thread()
            del store
            procs = q = None  # a signal re-delivered after this must find no queue left (leaked semaphores)
            if not keep_logs:
                shutil.rmtree(log_dir, ignore_errors=True)


def rank_log_dir() -> tuple[str, bool]:
    """(directory for the ranks' stderr logs, whether to keep it): GPUKIT_RANK_LOGS when set (created
    if missing, kept), else a new temporary directory that the launcher removes at the end."""
    named = os.environ.get("GPUKIT_RANK_LOGS")
    if named:
        os.makedirs(named, exist_ok=True)
        return named, True
    return tempfile.mkdtemp(prefix="gpukit-ranks-"), False


def redirect_stderr(path: str) -> None:
    """Point this process's file descriptor 2 (Python's sys.stderr and every C++ logger: gloo, c10d)
    at `path` (appended): a rank's native output must not leak around the launcher's one line."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        sys.stderr.flush()
        os.dup2(fd, 2)
    finally:
        os.close(fd)


def rank_main(rank: int, n_ranks: int, port: int, cfg: dict, q, body, log_path: str | None = None) -> None:
    """A spawned rank (the process `spawn` starts): die with the launcher, pin gloo to loopback, set the
    threads and the CUDA device (ranks.setup_rank), join the launcher's store (127.0.0.1:port) and the
    process group, run `body(cfg)`, report ("ok" | "error", rank, payload) on `q`, destroy the group
    and exit at once. With `log_path` the rank's stderr (fd 2) goes there first (redirect_stderr).

    cfg: backend, device, timeout_s and optionally threads. Only rank 0's payload travels. The exit
    skips the interpreter's teardown of torch (about a second per rank): the process group is already
    destroyed and the outcome is in the queue."""
    import torch.distributed as dist

    from gpukit.bench.supervise import die_with_parent

    die_with_parent()  # a rank must not outlive its launcher (even a SIGKILLed one)
    if log_path is not None:
        redirect_stderr(log_path)
    if cfg["backend"] == "gloo" and os.path.exists("/sys/class/net/lo"):
        os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")  # loopback run: say so, don't guess a NIC
    try:
        setup_rank(cfg, rank)
        timeout = timedelta(seconds=cfg["timeout_s"])
        store = dist.TCPStore("127.0.0.1", port, n_ranks, is_master=False, timeout=timeout)
        dist.init_process_group(cfg["backend"], store=store, rank=rank, world_size=n_ranks, timeout=timeout)
        payload = body(cfg)
        dist.barrier()
        q.put(("ok", rank, payload if rank == 0 else None))
    except BaseException as e:  # report, then exit; the parent kills the other ranks
        q.put(("error", rank, f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"))
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()
    q.close()
    q.join_thread()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def torchrun_rank(cfg: dict, body, report) -> None:
    """This process as one rank under torchrun (one node or many; SLURM's srun too): check this node's
    GPUs (ValueError before the rendezvous: not 'invalid device ordinal' in a rank), die with the
    torchrun agent, set the threads and the GPU of LOCAL_RANK (ranks.setup_rank), env:// rendezvous
    (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT; timeout cfg['timeout_s']), run `body(cfg)`, barrier,
    then rank 0 calls report(payload); the group is destroyed on every exit path.

    cfg: backend, device, timeout_s and optionally threads, as for `spawn`. GLOO_SOCKET_IFNAME is left
    to the caller's environment (a real cluster names its NIC; netlab sets it per namespace)."""
    import torch.distributed as dist

    from gpukit.bench.supervise import die_with_parent

    check_local_gpu_count(cfg["device"])
    die_with_parent()  # a rank must not outlive its torchrun agent (netlab: even a SIGKILLed owner)
    setup_rank(cfg, int(os.environ.get("LOCAL_RANK", 0)))
    try:
        dist.init_process_group(
            cfg["backend"], init_method="env://", timeout=timedelta(seconds=cfg["timeout_s"])
        )
        payload = body(cfg)
        dist.barrier()
        if dist.get_rank() == 0:
            report(payload)
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()


def _deaths(procs) -> list[str]:
    """'rank R died with exit code C' for each rank that exited non-zero without reporting."""
    out = []
    for r, p in enumerate(procs):
        if p.exitcode not in (None, 0):
            hint = (
                " (from a script? call it under `if __name__ == '__main__':`, spawn re-imports it)"
                if p.exitcode == 1
                else ""
            )
            out.append(f"rank {r} died with exit code {p.exitcode}{hint}")
    return out
