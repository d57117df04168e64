"""gpukit.bench.collectives: sizes, busbw factors, 2-rank gloo runs (spawn and torchrun), cleanup."""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from helpers import live_children, tcp_listeners
from hypothesis import given
from hypothesis import strategies as st

from gpukit import comm
from gpukit.bench import collectives as col
from gpukit.cli import main

ROOT = Path(__file__).resolve().parent.parent
ROW_KEYS = ("op", "size_bytes", "count", "dtype", "time_us", "algbw_gbps", "busbw_gbps")  # docs/CONTRACTS.md


_children = live_children


def _assert_rows(res, op, n=2):
    assert res.rows, "no rows"
    for r in res.rows:
        for k in ROW_KEYS:
            assert k in r
        assert r["op"] == op and r["time_us"] > 0 and r["algbw_gbps"] > 0
        assert r["algbw_gbps"] == pytest.approx(r["size_bytes"] / (r["time_us"] * 1e-6) / 1e9)
        assert r["busbw_gbps"] == pytest.approx(r["algbw_gbps"] * comm.busbw_factor(op, n))
    assert res.env["world_size"] == n and res.env["backend"] == "gloo" and res.env["label"] == "CPU"


# ---------------------------------------------------------------- pure helpers


@pytest.mark.parametrize(
    "text, n",
    [
        ("1K", 1024),
        ("64K", 65536),
        ("16M", 16 * 2**20),
        ("1G", 2**30),
        ("4096", 4096),
        ("1KiB", 1024),
        ("1MB", 10**6),
        ("2.5K", 2560),
    ],
)
def test_parse_size(text, n):
    assert col.parse_size(text) == n


@pytest.mark.parametrize("bad", ["0", "-1", "1X", "K", "", "1iB", 0, 1.5])
def test_parse_size_rejects(bad):
    with pytest.raises(ValueError, match="sizes must be positive byte counts"):
        col.parse_size(bad)


def test_parse_sizes_sorted_unique():
    assert col.parse_sizes("1M,1K,1024") == [1024, 2**20]


@given(st.sampled_from(col.OPS), st.integers(1, 2**30), st.integers(1, 64), st.sampled_from([2, 4]))
def test_size_and_count_whole_elements(op, size, n, elem):
    used, count = col.size_and_count(op, size, n, elem)
    unit = elem * (n if op in col.SPLIT_OPS else 1)
    assert used % unit == 0 and used >= unit and (used <= size or used == unit)
    assert count * unit == used


@given(st.sampled_from(col.OPS), st.integers(1, 512), st.floats(0, 1e3))
def test_busbw_uses_the_comm_factor_table(op, n, algbw):
    assert col.busbw_gbps(op, algbw, n) == pytest.approx(algbw * comm.busbw_factor(op, n))


def test_busbw_factors_nccl_tests():
    # nccl-tests doc/PERFORMANCE.md: all_reduce 2(n-1)/n; gather/scatter/alltoall (n-1)/n; others 1
    assert comm.busbw_factor("all_reduce", 8) == pytest.approx(1.75)
    assert (
        comm.busbw_factor("all_gather", 8) == comm.busbw_factor("reduce_scatter", 8) == pytest.approx(0.875)
    )
    assert comm.busbw_factor("all_to_all", 4) == pytest.approx(0.75)
    assert comm.busbw_factor("broadcast", 8) == comm.busbw_factor("send_recv", 2) == 1.0


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"op": "allreduce"}, "op must be one of"),
        ({"backend": "mpi"}, "backend must be one of"),
        ({"dtype": "fp64"}, "dtype must be one of"),
        ({"backend": "nccl"}, "backend nccl needs --device cuda"),
        ({"op": "send_recv", "n_ranks": 1}, "n_ranks must be >= 2"),
        ({"n_ranks": 1}, "n_ranks must be >= 2"),
        ({"n_ranks": 0}, "n_ranks must be"),
        ({"sizes": "1X"}, "sizes must be positive"),
    ],
)
def test_run_collectives_validates_before_spawning(kwargs, match):
    args = {"op": "all_reduce", "n_ranks": 2, "sizes": "1K", "device": "cpu", **kwargs}
    with pytest.raises(ValueError, match=match):
        col.run_collectives(args.pop("op"), args.pop("n_ranks"), args.pop("sizes"), **args)


@pytest.mark.parametrize("launch", ["collectives", "article", "ddp", "fsdp"])
def test_more_cuda_ranks_than_gpus_is_refused_before_spawning(launch, monkeypatch):
    """Each spawned CUDA rank takes GPU number `rank`: 2 ranks on a one-GPU machine must be a clear
    ValueError before any rank starts, not rank 1 dying with 'invalid device ordinal' (CPU: the
    CUDA queries are faked)."""
    import torch

    from gpukit.bench import launch as launcher
    from gpukit.bench.article import article_latency_snippet
    from gpukit.bench.ddp import run_ddp
    from gpukit.bench.fsdp import run_fsdp

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)

    def spawned(*a, **k):
        raise AssertionError("ranks were spawned")

    monkeypatch.setattr(launcher, "spawn", spawned)  # every launcher spawns through gpukit.bench.launch
    run = {
        "collectives": lambda: col.run_collectives("all_reduce", 2, "1K", device="cuda"),
        "article": lambda: article_latency_snippet(2, device="cuda"),
        "ddp": lambda: run_ddp(2, device="cuda"),
        "fsdp": lambda: run_fsdp(2, device="cuda"),
    }[launch]
    with pytest.raises(ValueError, match="n_ranks must be <= the 1 CUDA devices here, got 2"):
        run()


@pytest.mark.parametrize("entry", ["collectives", "ddp"])
def test_torchrun_ranks_beyond_the_gpus_are_refused_before_the_rendezvous(entry, monkeypatch, capsys):
    """Under torchrun a CUDA rank takes GPU LOCAL_RANK: --nproc-per-node 2 on a one-GPU machine must be
    one line and exit 2 in each rank, not a traceback with 'invalid device ordinal' from set_device
    (CPU: the CUDA queries are faked)."""
    import torch
    import torch.distributed as dist

    from gpukit.bench import ddp, supervise

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(supervise, "die_with_parent", lambda: None)  # not in the test process

    def joined(*a, **k):
        raise AssertionError("the rank went on to the rendezvous")

    monkeypatch.setattr(dist, "init_process_group", joined)
    monkeypatch.setattr(torch.cuda, "set_device", joined)
    for k, v in {"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2"}.items():
        monkeypatch.setenv(k, v)
    main_of = {"collectives": col.main, "ddp": ddp.main}[entry]
    assert main_of(["--device", "cuda"]) == 2
    assert capsys.readouterr().err.strip() == (
        "error: torchrun --nproc-per-node must be <= the 1 CUDA devices here, got 2"
    )


def test_ddp_over_netlab_runs_its_ranks_on_the_cpu(monkeypatch):
    """netlab runs one rank per namespace, each with LOCAL_RANK 0: on a CUDA machine every rank would take
    GPU 0 (and NCCL would bypass the emulated link). The torchrun command says --device cpu (it said
    nothing, and the worker's default 'auto' picked CUDA); device cuda is refused before anything starts."""
    import torch

    from gpukit.bench import ddp, ddp_sweep, netlab

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    argv = []

    class Stop(Exception):
        pass

    class FakeLab:
        def __init__(self, n, rate):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def torchrun_argv(self, i, module, args):
            argv.append(args)
            return ["true"]

        def run(self, cmds, timeout_s):
            raise Stop

    monkeypatch.setattr(netlab, "NetLab", FakeLab)
    for device in ("auto", "cpu"):
        argv.clear()
        with pytest.raises(Stop):
            ddp.run_ddp_netlab(2, "1gbit", device=device, hook="none")
        assert len(argv) == 2 and all(a[a.index("--device") + 1] == "cpu" for a in argv), argv
    with pytest.raises(ValueError, match="device must be cpu with netlab .*got 'cuda'"):
        ddp.run_ddp_netlab(2, "1gbit", device="cuda")

    def unavailable():
        raise AssertionError("the lab was checked: the device must be refused first")

    monkeypatch.setattr(netlab, "require_available", unavailable)
    with pytest.raises(ValueError, match="device must be cpu with netlab"):
        ddp_sweep.ddp_scaling(2, netlab="1gbit", device="cuda")
    seen = []

    def fake_run(n, rate, **kw):
        seen.append(kw["device"])
        raise Stop

    monkeypatch.setattr(netlab, "require_available", lambda: None)
    monkeypatch.setattr(ddp_sweep, "run_ddp_netlab", fake_run)
    with pytest.raises(Stop):
        ddp_sweep.ddp_scaling(2, netlab="1gbit", device="auto")
    assert seen == ["cpu"]


def _synthetic_rows(alpha_s=200e-6, bw_gbps=1.0, n=2, op="all_reduce"):
    ca, cb = comm.coefficients(op, n)
    return [
        {
            "op": op,
            "world_size": n,
            "size_bytes": s,
            "time_us": (ca * alpha_s + cb * s / (bw_gbps * 1e9)) * 1e6,
        }
        for s in (2**k for k in range(10, 25, 2))
    ]


@pytest.mark.parametrize("holdout", ["alternate", "largest"])
def test_fit_and_holdout_recovers_a_known_link(holdout):
    f = col.fit_and_holdout(_synthetic_rows(), holdout=holdout)
    assert f["alpha_us"] == pytest.approx(200, rel=1e-6) and f["beta_gbps"] == pytest.approx(1.0, rel=1e-6)
    assert f["holdout_error_max"] < 1e-6 and f["within_25pct"]


def test_fit_and_holdout_reports_a_bad_prediction():
    rows = _synthetic_rows()
    rows[3]["time_us"] *= 2  # a held-out size (alternate: odd indices but the last) measured twice as slow
    f = col.fit_and_holdout(rows)
    assert f["holdout_error_max"] == pytest.approx(0.5) and not f["within_25pct"]
    with pytest.raises(ValueError, match="at least 4 sizes"):
        col.fit_and_holdout(rows[:3])
    with pytest.raises(ValueError, match="holdout must be one of"):
        col.fit_and_holdout(rows, holdout="random")


# ---------------------------------------------------------------- real 2-rank runs


@pytest.mark.slow  # spawns ranks
def test_two_concurrent_spawn_runs_work_and_clean_up(tmp_path):
    """all_reduce and all_gather at the same time: separate stores, no port clash, no child left."""
    out, errors = {}, []

    def run(op):
        try:
            out[op] = col.run_collectives(
                op, 2, "4K,256K", repeats=3, timeout_s=60, out=str(tmp_path / f"{op}.json")
            )
        except Exception as e:  # noqa: BLE001 - surfaced by the assert below
            errors.append(f"{op}: {e!r}")

    threads = [threading.Thread(target=run, args=(op,)) for op in ("all_reduce", "all_gather")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=150)
    assert not errors, errors
    _assert_rows(out["all_reduce"], "all_reduce")
    _assert_rows(out["all_gather"], "all_gather")
    ag = out["all_gather"].rows[0]
    assert ag["count"] * 2 * 4 == ag["size_bytes"]  # count: per-rank elements, as nccl-tests prints
    for res in out.values():
        for r in res.rows:
            assert r["bare_busbw_gbps"] > 0 and r["harness_ratio"] == pytest.approx(
                r["busbw_gbps"] / r["bare_busbw_gbps"]
            )
        assert res.summary["harness_ratio_median"] > 0
    saved = json.loads((tmp_path / "all_reduce.json").read_text())
    assert saved["env"]["world_size"] == 2 and len(saved["rows"]) == 2
    assert multiprocessing.active_children() == [] and _children() == []


@pytest.mark.slow  # spawns ranks
def test_send_recv_runs():
    res = col.run_collectives("send_recv", 2, "64K", repeats=2, timeout_s=60, bare_check=False)
    _assert_rows(res, "send_recv")
    assert res.rows[0]["impl"] == "isend(rank+1)/irecv(rank-1)" and _children() == []


@pytest.mark.slow  # spawns ranks
def test_timeout_kills_the_ranks():
    # rank 1 sleeps 120 s before its first all_reduce: rank 0 waits, the launcher must give up
    from gpukit.bench.article import article_body
    from gpukit.bench.launch import spawn

    cfg = {
        "n_calls": 1,
        "skew_s": 120.0,
        "backend": "gloo",
        "device": "cpu",
        "threads": 1,
        "timeout_s": 300,
        "op": "all_reduce",
    }
    with pytest.raises(TimeoutError, match="timed out"):
        spawn(article_body, cfg, 2, timeout_s=1, startup_s=6)
    assert multiprocessing.active_children() == [] and _children() == []


@pytest.mark.slow  # spawns ranks
def test_article_snippet_against_the_honest_method():
    a = col.article_latency_snippet(2, n_calls=5, timeout_s=60)
    assert len(a["article_calls_us"]) == 2 and all(len(c) == 5 for c in a["article_calls_us"])
    assert a["article_mean_us"] == pytest.approx(sum(a["article_calls_us"][0]) / 5)
    assert a["median_us"] > 0 and a["p10_us"] <= a["median_us"] <= a["p90_us"]
    assert a["overstatement"] == pytest.approx(a["article_mean_us"] / a["median_us"])
    assert len(a["what_it_gets_wrong"]) == 4 and a["env"]["world_size"] == 2


@pytest.mark.slow  # spawns ranks
def test_torchrun_writes_the_contract_json(tmp_path):
    """The netlab contract: torchrun, env:// rendezvous, rank 0 writes {"env", "rows"} (reduce_scatter:
    the op whose input is the whole buffer and output one chunk)."""
    out = tmp_path / "tr.json"
    env = {**os.environ, "TQDM_DISABLE": "1"}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc-per-node",
            "2",
            "-m",
            "gpukit.bench.collectives",
            "--op",
            "reduce_scatter",
            "--sizes",
            "1K,64K",
            "--repeats",
            "3",
            "--device",
            "cpu",
            "--out",
            str(out),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = json.loads(out.read_text())
    assert data["env"]["launcher"] == "torchrun" and data["env"]["world_size"] == 2
    assert [r["size_bytes"] for r in data["rows"]] == [1024, 65536]
    for r in data["rows"]:
        assert all(k in r for k in ROW_KEYS) and r["op"] == "reduce_scatter"
        assert r["busbw_gbps"] == pytest.approx(r["algbw_gbps"] * 0.5) and r["count"] * 8 == r["size_bytes"]
    assert "size(B)" in proc.stdout and "busbw(GB/s)" in proc.stdout


def test_cli_collectives_bad_op_exits_2(capsys):
    assert main(["bench", "collectives", "--op", "allreduce", "--device", "cpu"]) == 2
    assert "op must be one of" in capsys.readouterr().err


@pytest.mark.slow  # spawns ranks
def test_ddp_with_fp16_compress_hook_on_gloo():
    from gpukit.bench.ddp import run_ddp, summarize

    p = run_ddp(
        2,
        hook="fp16_compress",
        steps=3,
        warmup=1,
        micro_batch=2,
        seq_len=32,
        n_layers=1,
        hidden=64,
        n_heads=2,
        timeout_s=120,
        calibrate_link=False,
    )
    s = summarize(p, 2 * 2 * 32)
    assert s["measured_step_s"] > 0 and s["compute_s"] > 0 and s["exposed_comm_s"] >= 0
    assert s["comm_bytes_per_step"] == 2 * p["n_params"]  # fp16: 2 bytes per parameter on the wire
    assert p["n_params"] > 0 and p["env"]["world_size"] == 2 and p["env"]["backend"] == "gloo"
    assert multiprocessing.active_children() == [] and _children() == []
    with pytest.raises(ValueError, match="bf16 needs the nccl backend"):
        run_ddp(2, hook="bf16_compress")


def test_launcher_stores_hold_distinct_ports():
    from gpukit.bench.launch import free_port, master_store

    a, b = master_store(5), master_store(5)
    assert a.port != b.port and a.port > 0 and b.port > 0
    assert 0 < free_port() < 65536
    del a, b


def _listening_addresses(port: int) -> set[str]:
    """Local addresses (hex, as /proc/net/tcp{,6} write them) that listen on `port`."""
    return {addr for addr, p, _ in tcp_listeners() if p == port}


@pytest.mark.skipif(not os.path.exists("/proc/net/tcp"), reason="needs Linux /proc/net/tcp")
def test_launcher_store_listens_on_loopback_only():
    from gpukit.bench.launch import master_store

    store = master_store(5)
    try:
        assert _listening_addresses(store.port) == {"0100007F"}  # 127.0.0.1, nothing on 0.0.0.0 or ::
        store.set("k", "v")
        assert store.get("k") == b"v"
    finally:
        del store
