"""The same question through every command gets the same answer (issue 22, "Tests that hold it").

For one model, GPU, count and data-parallel layout, `memory`, `cost train`, `plan`, `scaling` and
`parallel estimate` read the same owners: the memory per GPU is gpukit.memory's (one setup resolver,
one convention per question), the gradient sync is gpukit.comm.grad_sync's over the one
ClusterNetwork, the step's tokens are seq_len x micro_batch x grad_accum (ModelSpec.default_seq_len
when not given), and cost train and plan price through the one loop, gpukit.cost.training_run.

Where two commands answer different questions the test names the difference and checks it in the
direction the models say:
- `parallel estimate` sizes memory in the Megatron convention (the papers' sum of parts, with which
  its published runs are reproduced); memory/cost/plan size "does it fit" in the PyTorch convention
  (the peak of an eager step). Both come from gpukit.memory.estimate_memory with the same layout.
- Time (issue 23): cost train and plan price every run with gpukit.parallel.estimate, the one step model
  (compute at the stated matmul efficiency plus elementwise kernels, the gradient sync of gpukit.comm.grad_sync
  with its overlap stated per term, the optimizer, offload), so their hours are `parallel estimate`'s with the
  same memory convention (convention="pytorch": fp32 parameters and gradients on the wire too). `gpukit scaling`
  prices through the same loop (gpukit.cost.dp_scaling), so its speed-ups are cost train's hours ratios;
  gpukit.scaling.scaling is the DDP bucket model of notebooks 04-05 (6N at an MFU, hooks, no optimizer); its
  gradient sync is the estimate's (gpukit.comm.grad_sync). predicted_efficiency (the audits', notebook 08's) is
  the step model's network_efficiency for a bare n_params (params_only_spec).
"""

from __future__ import annotations

import itertools
import json

import pytest

from gpukit import cost, memory, parallel, scaling
from gpukit.catalog import get_gpu, get_model
from gpukit.cli import main

MODELS = ("opt-1.3b", "llama-2-7b", "llama-3-8b")
GPUS = ("h100-sxm", "a100-80gb")
COUNTS = (8, 16, 64)
ZEROS = (0, 1, 3)
TOKENS = 1e11
PRICE = 2.5
CASES = list(itertools.product(MODELS, GPUS, COUNTS, ZEROS))


def _cli(capsys, *argv) -> dict:
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _cost_row(m, gpu, n, z, **kw):
    return cost.training_cost(m, TOKENS, gpu, n, zero_stage=z, price_per_gpu_hour=PRICE, **kw).rows[0]


@pytest.mark.parametrize("name, gpu, n, z", CASES)
def test_memory_cost_and_plan_size_the_same_gpu(name, gpu, n, z):
    """cost train's memory per GPU is gpukit.memory's for the layout it prices, at the model's one default
    sequence length. (The planner prices its candidates through the same loop: tests/test_plan_cost_parity.py
    fixes each candidate's layout and finds the same memory, hours, cost, efficiency and binding.)"""
    m = get_model(name)
    row = _cost_row(m, gpu, n, z)
    setup = cost.data_parallel_setup(m, n, zero_stage=z)
    assert setup.seq_len == m.default_seq_len()[0]  # the one default sequence length
    est = memory.estimate_memory(m, setup=setup, gpu=get_gpu(gpu))
    assert row.memory_per_gpu_bytes == est.total_bytes
    assert row.fits == bool(est.fits)


@pytest.mark.parametrize("name, gpu, n", list(itertools.product(MODELS, GPUS, COUNTS)))
def test_cost_and_scaling_give_one_efficiency(name, gpu, n):
    """Plain data parallel (DDP): cost train's hours and efficiency are gpukit.parallel.estimate's for the same
    run (the one step model, convention pytorch); gpukit.scaling's row and predicted_efficiency at the same
    tokens per GPU, MFU and overlap (none) are one number (the DDP bucket model over the same grad_sync)."""
    m = get_model(name)
    row = _cost_row(m, gpu, n, 0)
    s = m.default_seq_len()[0]
    e = parallel.estimate(
        m,
        parallel.ParallelConfig(dp=n),
        parallel.make_cluster(gpu),
        global_batch=n,
        seq_len=s,
        convention="pytorch",
    )
    assert row.hours == pytest.approx(TOKENS / e.tokens_per_s / 3600, rel=1e-9)
    assert row.efficiency == pytest.approx(e.share("compute") + e.share("elementwise"), rel=1e-9)
    # predicted_efficiency is the step model's too (test_predicted_efficiency_is_the_step_models), not
    # gpukit.scaling's lesson model any more (issue 23 sec. 1)


@pytest.mark.parametrize("name, gpu, n, z", [c for c in CASES if c[3] < 3])
def test_parallel_estimate_charges_the_same_sync_and_sizes_memory_from_the_same_owner(name, gpu, n, z):
    """parallel estimate (DP n x TP 1 x PP 1) charges the gradient sync cost train charges (one model), and
    its memory is gpukit.memory's for its layout in the layout's convention (pytorch for data parallelism
    alone), the memory cost train reports for the same run."""
    m = get_model(name)
    s = m.default_seq_len()[0]
    est = parallel.estimate(
        m,
        parallel.ParallelConfig(dp=n, tp=1, pp=1, zero_stage=z, micro_batch=1),
        parallel.make_cluster(gpu),
        global_batch=n,
        seq_len=s,
    )
    row0 = cost.training_cost(m, TOKENS, gpu, n, zero_stage=z, price_per_gpu_hour=PRICE)
    assert row0.rows[0].hours > 0
    layout_memory = est.memory
    # a data-parallel layout is judged by the PyTorch convention (parallel.layout_convention), as cost train
    assert layout_memory.setup.convention == "pytorch" == parallel.layout_convention(est.config)
    again = memory.estimate_memory(m, setup=layout_memory.setup, gpu=get_gpu(gpu))
    assert est.memory_per_gpu_bytes == again.total_bytes
    row = _cost_row(m, gpu, n, z)
    assert row.memory_per_gpu_bytes == est.memory_per_gpu_bytes, "one layout, one memory in both commands"


@pytest.mark.parametrize(
    "name, gpu, n, z",
    [("llama-2-7b", "h100-sxm", 16, 1), ("opt-1.3b", "a100-80gb", 8, 0), ("llama-3-8b", "h100-sxm", 64, 3)],
)
def test_the_cli_commands_agree(capsys, name, gpu, n, z):
    """Through the command line: `memory` and `cost train` (--json) give the same memory per GPU, and `cost train`
    and `parallel estimate --convention pytorch` the same hours for one run, with the sequence length left to the
    model's default."""
    mem = _cli(capsys, "memory", "--model", name, "--gpu", gpu, "--dp", str(n), "--zero", str(z))
    ct = _cli(
        capsys,
        "cost",
        "train",
        "--model",
        name,
        "--tokens",
        "100B",
        "--gpu",
        gpu,
        "--gpus",
        str(n),
        "--zero",
        str(z),
        "--price-per-gpu-hour",
        str(PRICE),
    )
    row = ct["rows"][0]
    assert mem["total_bytes"] == row["memory_per_gpu_bytes"]
    pe = _cli(
        capsys,
        "parallel",
        "estimate",
        "--model",
        name,
        "--gpu",
        gpu,
        "--gpus-per-node",
        "8",
        "--global-batch",
        str(n),
        "--dp",
        str(n),
        "--tp",
        "1",
        "--pp",
        "1",
        "--zero",
        str(z),
        "--micro-batch",
        "1",
        "--convention",
        "pytorch",
    )
    assert row["hours"] == pytest.approx(100e9 / pe["tokens_per_s"] / 3600, rel=1e-9)


@pytest.mark.parametrize(
    "name, inter, z",
    [
        ("llama-2-7b", None, 0),  # NVLink in the node, the GPU's InfiniBand between nodes
        ("opt-1.3b", None, 0),
        ("llama-2-7b", "eth-100g", 0),  # 100 GbE between nodes
        ("opt-1.3b", "eth-100g", 1),
    ],
)
def test_scaling_speedups_are_the_ones_cost_train_hours_imply(capsys, name, inter, z):
    """`gpukit scaling` answers with the step model `cost train` prices (issue 23 sec. 1): for the same model,
    GPU, counts, tokens per GPU per step, ZeRO stage and gradient dtype (fp32, the memory model's), its speed-up
    at n GPUs is hours(1) / hours(n) of `cost train`, and its efficiency that over n. (Before: MFU 0.4, bf16
    gradients and bucket copies charged only in scaling: 1.79x at 2 H100s against cost train's 1.99x.)"""
    counts = (1, 2, 8, 64)
    s = get_model(name).default_seq_len()[0]
    link = ["--inter-link", inter] if inter else []
    gpus = ",".join(map(str, counts))
    sc = _cli(capsys, "scaling", "--model", name, "--gpu", "h100-sxm", "--gpus", gpus,
              "--tokens-per-gpu", str(s), "--zero", str(z), *link)  # fmt: skip
    ct = _cli(capsys, "cost", "train", "--model", name, "--tokens", "100B", "--gpu", "h100-sxm", "--gpus", gpus,
              "--zero", str(z), "--price-per-gpu-hour", str(PRICE), *link)  # fmt: skip
    hours = {r["gpus"]: r["hours"] for r in ct["rows"]}
    assert [r["gpus"] for r in sc["rows"]] == list(counts)
    for r in sc["rows"]:
        n = r["gpus"]
        assert r["speedup"] == pytest.approx(hours[1] / hours[n], rel=1e-9)
        assert r["efficiency"] == pytest.approx(hours[1] / hours[n] / n, rel=1e-9)
    assert any("gradients 4 B per parameter" in a for a in sc["assumptions"])
    # and the library call is the same run: its step is parallel.estimate's (convention pytorch)
    res = cost.dp_scaling(name, gpu="h100-sxm", gpus=(64,), tokens_per_gpu=s, zero_stage=z, inter_link=inter)
    e = parallel.estimate(
        get_model(name),
        parallel.ParallelConfig(dp=64, zero_stage=z),
        parallel.make_cluster("h100-sxm", inter_link=inter),
        global_batch=64,
        seq_len=s,
        convention="pytorch",
    )
    assert res.rows[0].step_s == pytest.approx(e.step_time_s, rel=1e-12)


def test_a_lone_gpu_count_is_measured_against_one_gpu():
    """Audit (issue 23): one count given, the efficiency is still over one GPU's step, not 100 %."""
    lone = cost.dp_scaling(
        "llama-2-7b", gpu="h100-sxm", gpus=(4096,), tokens_per_gpu=4096, inter_link="eth-100g"
    )
    both = cost.dp_scaling(
        "llama-2-7b", gpu="h100-sxm", gpus=(1, 4096), tokens_per_gpu=4096, inter_link="eth-100g"
    )
    assert lone.rows[0].efficiency == pytest.approx(both.rows[-1].efficiency, rel=1e-12)
    assert lone.rows[0].efficiency < 0.5
    lesson = scaling.scaling("llama-2-7b", gpus=(64,), tokens_per_gpu=4096, inter_link="eth-100g")
    assert lesson.rows[0].efficiency < 1


@pytest.mark.parametrize(
    "n_params, gpu, n, z, link",
    [(7e9, "h100-sxm", 8, 0, None), (1.3e9, "a100-80gb", 12, 1, "eth-100g"), (13e9, "h100-sxm", 16, 3, None)],
)
def test_predicted_efficiency_is_the_step_models(n_params, gpu, n, z, link):
    """Issue 23 sec. 1: the audits' and notebook 08's efficiency (cost.predicted_efficiency) is the one step
    model's: training_run's network_efficiency for the same shape (params_only_spec) and run, and its sync is
    the estimate's; `cost train` of a bare n_params prices the same shape, so it reports the same efficiency."""
    eff = cost.predicted_efficiency(n_params, gpu, n, zero_stage=z, inter_link=link, tokens_per_gpu=2048)
    setup = cost.data_parallel_setup(None, n, zero_stage=z)
    run = cost.training_run(
        cost.params_only_spec(n_params, setup.seq_len), 1e9, gpu, setup, usd_per_gpu_hour=1.0, inter_link=link
    )
    assert eff.efficiency == pytest.approx(run.network_efficiency, rel=1e-12)
    assert eff.compute_s == pytest.approx(run.compute_s, rel=1e-12)
    totals = dict(run.estimate.comm_total_s)
    assert eff.comm_s == pytest.approx(totals["dp_comm"] + totals["zero3_comm"], rel=1e-12)
    bare = cost.training_run(n_params, 1e9, gpu, setup, usd_per_gpu_hour=1.0, inter_link=link)
    assert eff.efficiency == pytest.approx(bare.network_efficiency, rel=1e-12)
    assert cost.predicted_efficiency(n_params, gpu, 1).efficiency == pytest.approx(1.0)
