"""Real DDP (gpukit.bench.ddp): two ranks in seconds (bytes exact per hook, buckets as DDP makes them,
teardown, timeout), bad input, and (as root) DDP and the README's launch lines over netlab namespaces."""

import glob
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from gpukit.bench import netlab
from gpukit.bench.ddp import run_ddp
from gpukit.bench.ddp_sweep import ddp_scaling
from gpukit.memory import reference_spec
from gpukit.scaling import ddp_buckets, gpt_param_shapes, hook_bytes

TINY = dict(
    n_layers=1,
    hidden=32,
    n_heads=2,
    vocab=64,
    seq_len=16,
    micro_batch=2,
    steps=2,
    warmup=2,
    calibrate_link=False,
    timeout_s=120,
)
SPEC = reference_spec(n_layers=1, hidden=32, n_heads=2, vocab=64, seq=16)
REASON = netlab.check_available()
ROOT = Path(__file__).resolve().parents[1]


def _children():
    import psutil

    out = []
    for c in psutil.Process().children(recursive=True):
        try:
            if c.status() != "zombie" and "resource_tracker" not in " ".join(c.cmdline()):
                out.append(c)
        except psutil.NoSuchProcess:
            pass
    return out


def _leftover_temp():
    return glob.glob(os.path.join(tempfile.gettempdir(), "gk-ddp-*"))


@pytest.fixture
def private_tmp(tmp_path, monkeypatch):
    """Temp folders of this test only (other runs on the machine create gk-ddp-* too)."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


@pytest.mark.parametrize("hook", ["none", "fp16", "powersgd"])
def test_two_ranks_bytes_exact_per_hook(hook, private_tmp):
    p = run_ddp(2, hook=hook, bucket_mb=25.0, **TINY)
    b = ddp_buckets(gpt_param_shapes(SPEC), 25.0)[0]
    want = {"none": 4 * SPEC.n_params, "fp16": 2 * SPEC.n_params, "powersgd": hook_bytes(b, "powersgd", 1)}[
        hook
    ]
    assert p["n_params"] == SPEC.n_params
    assert set(p["bytes_per_step"]) == {want}
    assert p["world_size"] == 2 and len(p["step_s"]) == 2
    assert all(x > 0 for x in p["step_s"] + p["compute_s"])
    # nothing left behind: no rank, no temp folder
    assert not _children()
    assert _leftover_temp() == []


def test_buckets_are_the_ones_ddp_makes():
    p = run_ddp(2, hook="none", bucket_mb=0.02, **TINY)
    measured = sorted(e["bytes"] for e in p["timeline"]["events"])
    predicted = sorted(b.nbytes() for b in ddp_buckets(gpt_param_shapes(SPEC), 0.02))
    assert sum(measured) == sum(predicted) == 4 * SPEC.n_params
    assert len(measured) == len(predicted)
    # the timeline: every bucket starts after the forward and ends after it starts
    fwd = p["timeline"]["fwd_end"]
    for e in p["timeline"]["events"]:
        assert fwd <= e["start_s"] <= e["end_s"]


def test_accumulation_syncs_once_per_k():
    p = run_ddp(2, hook="none", grad_accum=3, **TINY)
    assert set(p["bytes_per_step"]) == {4 * SPEC.n_params}


def test_timeout_is_honoured_and_cleans_up():
    t = time.monotonic()
    with pytest.raises(TimeoutError):
        run_ddp(2, **{**TINY, "steps": 10**6, "timeout_s": 1}, startup_s=10)
    assert time.monotonic() - t < 30
    time.sleep(0.5)
    assert not _children()


def test_scaling_rows_and_prediction():
    r = ddp_scaling(
        2, hook="fp16", bucket_mb=25.0, **{k: v for k, v in TINY.items() if k != "calibrate_link"}
    )
    assert [row["ranks"] for row in r.rows] == [1, 2]
    for row in r.rows:
        for key in (
            "measured_step_s",
            "predicted_step_s",
            "compute_s",
            "exposed_comm_s",
            "comm_bytes_per_step",
            "tokens_per_s",
            "efficiency",
        ):
            assert key in row and math.isfinite(row[key])
        assert row["comm_bytes_per_step"] == row["predicted_bytes_per_step"] == 2 * SPEC.n_params
    assert r.rows[0]["efficiency"] == pytest.approx(1.0)
    assert r.summary["link_bandwidth_gbps"] > 0


@pytest.mark.parametrize(
    "kw, word",
    [
        (dict(hook="topk"), "hook"),
        (dict(bucket_mb=0), "bucket_mb"),
        (dict(grad_accum=0), "grad_accum"),
        (dict(hook="powersgd", bucket_mb=0.01), "bucket_mb"),
        (dict(hook="powersgd", powersgd_start_iter=1), "start_iter"),
        (dict(loader_workers=-1), "loader_workers"),
        (dict(hook="bf16"), "nccl"),
    ],
)
def test_bad_input_before_any_rank_starts(kw, word):
    t = time.monotonic()
    with pytest.raises(ValueError, match=word):
        run_ddp(2, **{**TINY, **kw})
    assert time.monotonic() - t < 2


def test_strong_scaling_needs_divisible_batch():
    with pytest.raises(ValueError, match="divide"):
        ddp_scaling(3, scaling="strong", micro_batch=1)


def test_cli_bench_ddp_bad_input(capsys):
    from gpukit.cli import main

    assert main(["bench", "ddp", "--ranks", "2", "--hook", "topk", "--device", "cpu"]) == 2
    assert "hook" in capsys.readouterr().err


def test_article_snippet_default_state_does_not_exist():
    """The article's `default_hooks.DefaultState()` (audit dp_hook_overlaps) is not in torch."""
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

    assert not hasattr(default_hooks, "DefaultState")
    assert hasattr(default_hooks, "fp16_compress_hook")


def test_profile_one_step_names_the_all_reduce():
    from gpukit.bench.ddp import profile_ddp_step

    prof = profile_ddp_step(
        2, **{k: v for k, v in TINY.items() if k not in ("steps", "warmup", "calibrate_link")}
    )
    names = " ".join(r["name"] for r in prof["top_ops"])
    assert "allreduce" in names.lower() or "all_reduce" in names.lower()
    assert prof["step_s"] > 0


def _netlab(test):
    return pytest.mark.slow(
        pytest.mark.netlab(pytest.mark.skipif(REASON is not None, reason=REASON or "")(test))
    )


@_netlab
def test_ddp_over_netlab_uses_the_lab_interface():
    r = ddp_scaling(
        2,
        netlab="1gbit",
        hook="none",
        bucket_mb=25.0,
        timeout_s=300,
        **{k: v for k, v in TINY.items() if k not in ("calibrate_link", "timeout_s")},
    )
    two = r.rows[1]
    assert two["comm_bytes_per_step"] == 4 * SPEC.n_params
    assert r.env["gloo_socket_ifname"] == netlab.IFNAME and r.env["master_addr"].startswith(netlab.SUBNET)
    assert not [ns for ns in netlab.list_namespaces() if ns.startswith(f"gk-{os.getpid()}-")]


@_netlab
def test_ddp_over_netlab_beyond_the_tbf_burst_waits_on_the_rate():
    """Notebook 05, section 7: a step whose gradients outgrow the token bucket waits on the emulated
    rate, so the efficiency drops and the prediction (every byte at the fitted rate) applies."""
    shape = dict(n_layers=1, hidden=64, n_heads=2, seq_len=64, micro_batch=4, steps=3, warmup=2)
    r = ddp_scaling(2, netlab="200mbit", hook="none", bucket_mb=25.0, timeout_s=300, **shape)
    two = r.rows[1]
    assert two["comm_bytes_per_step"] > netlab.tbf_burst_bytes(netlab.parse_rate("200mbit"))
    assert two["efficiency"] < 0.5 and two["predicted_efficiency"] < 0.5
    assert abs(two["error"]) < 0.5, two


@_netlab
def test_ddp_over_netlab_within_the_tbf_burst_is_predicted_with_the_bucket():
    """Notebook 05, section 7 in QUICK mode: the tiny model's gradients (479 kB) fit in tbf's 500 kB
    bucket at 1gbit, which refills during the compute, so the all-reduce does not wait on the rate.
    gpukit.scaling models the bucket (gpukit.comm.network.TokenBucket): its predicted exposed
    communication and the measured one both stay well under every byte at the rate."""
    shape = dict(n_layers=1, hidden=64, n_heads=2, seq_len=64, micro_batch=4, steps=3, warmup=2)
    r = ddp_scaling(2, netlab="1gbit", hook="none", bucket_mb=25.0, timeout_s=300, **shape)
    two, rate = r.rows[1], netlab.parse_rate("1gbit") / 8
    at_rate_s = two["comm_bytes_per_step"] / rate
    assert two["comm_bytes_per_step"] <= r.summary["tbf_burst_bytes"] == netlab.tbf_burst_bytes(8 * rate)
    assert two["predicted_exposed_comm_s"] < 0.5 * at_rate_s, two
    # Measured: below every byte at the rate, which a link without the bucket cannot beat (gloo's copies
    # over veth add to it). Not tighter: on 2 busy cores the two ranks' compute also slows (a CI-like run
    # with other work beside it measured 0.89 x the rate; quiet runs 0.1-0.55 x).
    assert two["exposed_comm_s"] < at_rate_s, two
    assert abs(two["error"]) < 0.5, two
    row = r.netlab_row()
    assert row["fits in burst"] and row["at the rate ms"] == pytest.approx(1e3 * at_rate_s)


def _readme_block(after: str) -> str:
    text = (ROOT / "README.md").read_text()
    i = text.index(after)
    return text[text.index("```bash", i) + 7 : text.index("```", text.index("```bash", i) + 7)]


def _shrink(cmd: str) -> str:
    """The README's line with only the load made small: 1 process per node, small sizes (CPU, 2 cores)."""
    cmd = re.sub(r"--nproc-per-node \d+", "--nproc-per-node 1", cmd)
    cmd = re.sub(r"--layers \d+ --hidden \d+ --heads \d+", "--layers 1 --hidden 32 --heads 2 --steps 2", cmd)
    return re.sub(r"--sizes \S+", "--sizes 1K,64K", cmd)


@_netlab
def test_readme_multinode_torchrun_and_slurm_lines_run_over_netlab(tmp_path):
    """The README's two-node torchrun line and SLURM script, run in two netlab namespaces as the two
    nodes; SLURM's variables set as SLURM sets them (SLURM_NNODES, SLURM_NODEID, SLURM_JOB_ID,
    SLURM_JOB_NODELIST) and `scontrol show hostnames` / `srun` stubbed (one task per node)."""
    text = (ROOT / "README.md").read_text()
    i = text.index("# two nodes (run on each")
    block = text[i : text.index("```", i)].split("# two nodes")[1]
    lines = [c.replace("\\\n", " ") for c in re.split(r"\n(?=torchrun)", block.split("\n", 1)[1])]
    lines = [" ".join(ln.split("\n# ")[0].split()) for ln in lines if ln.strip()]
    assert len(lines) == 2 and "gpukit.bench.ddp" in lines[1]
    slurm = _readme_block("With SLURM:")
    stub = tmp_path / "bin"
    stub.mkdir()
    (stub / "scontrol").write_text(f"#!/bin/sh\nprintf '%s\\n' {netlab.SUBNET}.1 {netlab.SUBNET}.2\n")
    (stub / "srun").write_text('#!/bin/sh\nexec "$@"\n')
    for f in stub.iterdir():
        f.chmod(0o755)
    py = Path(sys.executable).parent
    with netlab.NetLab(2, "1gbit") as lab:
        for kind, script in (
            ("torchrun", _shrink(lines[0])),
            ("torchrun", _shrink(lines[1])),
            ("slurm", _shrink(slurm)),
        ):
            cmds = []
            for i in range(2):
                env = (
                    f"export NODE_RANK={i} MASTER={lab.addr(0)}; "
                    if kind == "torchrun"
                    else f"export SLURM_NNODES=2 SLURM_NODEID={i} SLURM_JOB_ID=4242 SLURM_JOB_NODELIST=node[1-2]; "
                )
                cmds.append(["bash", "-c", f"cd {tmp_path} && export PATH={stub}:{py}:$PATH; {env}{script}"])
            res = lab.run(cmds, 240)
            assert all(r.returncode == 0 for r in res), [r.stderr[-500:] for r in res]
    assert (tmp_path / "allreduce_2nodes.json").exists()
    assert (tmp_path / "allreduce_4242.json").exists()
    assert json.loads((tmp_path / "ddp_2nodes.json").read_text())["bytes_per_step"][0] > 0


def test_shrink_keeps_the_rest_of_the_line():
    line = "torchrun --nnodes 2 --nproc-per-node 8 -m gpukit.bench.collectives --sizes 1M,1G --out x.json"
    assert (
        _shrink(line)
        == "torchrun --nnodes 2 --nproc-per-node 1 -m gpukit.bench.collectives --sizes 1K,64K --out x.json"
    )
    assert shutil.which("bash")
    assert subprocess.run(["bash", "-c", "true"]).returncode == 0


@pytest.mark.slow
def test_cli_bench_ddp_json_strong_scaling(capsys):
    from gpukit.cli import main

    argv = [
        "bench",
        "ddp",
        "--ranks",
        "2",
        "--layers",
        "1",
        "--hidden",
        "32",
        "--heads",
        "2",
        "--seq-len",
        "16",
        "--micro-batch",
        "2",
        "--steps",
        "2",
        "--warmup",
        "2",
        "--scaling",
        "strong",
        "--device",
        "cpu",
        "--json",
    ]
    assert main(argv) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["env"]["world_size"] == 2 and d["summary"]["scaling"] == "strong"
    keys = {
        "ranks",
        "measured_step_s",
        "predicted_step_s",
        "compute_s",
        "exposed_comm_s",
        "comm_bytes_per_step",
        "tokens_per_s",
        "efficiency",
    }
    assert [r["ranks"] for r in d["rows"]] == [1, 2] and all(keys <= set(r) for r in d["rows"])
    # strong scaling: the global batch (2 x 2 sequences) is split over the ranks
    assert [r["micro_batch"] for r in d["rows"]] == [4, 2]


def test_torchrun_single_node_worker(tmp_path):
    """`torchrun --standalone --nproc-per-node 2 -m gpukit.bench.ddp ...`: rank 0 writes the payload."""
    out = tmp_path / "ddp.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc-per-node",
        "2",
        "-m",
        "gpukit.bench.ddp",
        "--layers",
        "1",
        "--hidden",
        "32",
        "--heads",
        "2",
        "--vocab",
        "64",
        "--seq-len",
        "16",
        "--steps",
        "2",
        "--warmup",
        "2",
        "--hook",
        "fp16",
        "--device",
        "cpu",
        "--timeout",
        "60",
        "--out",
        str(out),
    ]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=180, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-800:]
    p = json.loads(out.read_text())
    assert p["world_size"] == 2 and p["env"]["launcher"] == "torchrun"
    assert set(p["bytes_per_step"]) == {2 * SPEC.n_params}
