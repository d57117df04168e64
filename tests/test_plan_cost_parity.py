"""One training-run price loop (issue 22 sec. 2): gpukit.cost.training_run prices a layout for `gpukit cost train`
and for the planner's candidates, so for the same model, GPU, count and layout the two give the same memory per GPU,
hours, cost, efficiency and binding. Before, plan took seq_len x micro_batch tokens per GPU per step and cost train
8,192, and the two disagreed by about 30% on the same data-parallel run.

The planner picks the layout and cost train prices the one it is given: these tests fix the layout (the planner's
ZeRO stage, and cost train told the recompute and offload the planner chose) so that both price the same run."""

from __future__ import annotations

import itertools
import json

import pytest

from gpukit import cost
from gpukit.catalog import get_model
from gpukit.cli import main
from gpukit.plan import plan, planner_grad_accum, train_plans

MODELS = ("opt-1.3b", "llama-2-7b", "llama-3-8b")
GPUS = ("h100-sxm", "a100-80gb")
COUNTS = (1, 8, 16, 64)
ZEROS = (0, 1, 3)
TOKENS = 1e11
PRICE = 2.5


def _layout_of(tricks) -> dict:
    """cost train's recompute and offload for the layout a plan's tricks name (gpukit.plan.train's words)."""
    recompute = (
        "full" if "full recompute" in tricks else "selective" if "selective recompute" in tricks else "none"
    )
    offload = (
        "all"
        if "ZeRO-3 + offload all" in tricks
        else "optimizer"
        if "optimizer offload" in tricks
        else "none"
    )
    grad_accum = next((int(t.split()[1]) for t in tricks if t.startswith("grad_accum ")), 1)
    return dict(recompute=recompute, offload=offload, grad_accum=grad_accum)


def _zero_of(tricks, n: int) -> int:
    """The ZeRO stage a plan's tricks name; optimizer offload runs on ZeRO-1 on one GPU, ZeRO-3 on more
    (gpukit.plan.train._train_setups), offload all on ZeRO-3."""
    named = [int(t[5]) for t in tricks if t.startswith("ZeRO-") and t[5].isdigit() and "offload" not in t]
    if named:
        return named[0]
    if "ZeRO-3 + offload all" in tricks:
        return 3
    return (1 if n == 1 else 3) if "optimizer offload" in tricks else 0


def _same(p, row, what: str) -> None:
    assert p.memory_per_gpu_bytes == row.memory_per_gpu_bytes, what
    assert p.hours == pytest.approx(row.hours, rel=1e-12), what
    assert p.cost_usd == pytest.approx(row.cost_usd, rel=1e-12), what
    assert p.efficiency == pytest.approx(row.efficiency, rel=1e-12), what
    assert p.binding == row.binding, what


@pytest.mark.parametrize("name", MODELS)
def test_planner_candidates_and_cost_train_price_the_same_run(name):
    """Over models x GPUs x counts x ZeRO 0/1/3: the planner's choice at that ZeRO stage, and cost train told
    the same layout, give the same memory per GPU, hours, cost, efficiency and binding."""
    m = get_model(name)
    seen = set()
    for gpu, n, z in itertools.product(GPUS, COUNTS, ZEROS):
        (p,) = train_plans(
            m,
            "pretrain",
            TOKENS,
            [gpu],
            [n],
            {gpu: PRICE},
            None,
            None,
            m.train_seq_len,
            1,
            8,
            None,
            None,
            None,
            None,
            zero_stages=(z,),
        )
        what = f"{name} on {n} x {gpu}, ZeRO-{z}: plan {p.layout!r}"
        if p.binding == "does not fit":  # no recompute makes ZeRO-z fit: cost train says so at each of them
            for rc in ("none", "selective", "full"):
                t = cost.training_cost(
                    m, TOKENS, gpu, [n], zero_stage=z, recompute=rc, price_per_gpu_hour=PRICE,
                    grad_accum=planner_grad_accum(n, m.train_seq_len, 1, TOKENS),
                )  # fmt: skip
                assert t.rows[0].fits is False, f"{what}; cost train fits with {rc} recompute"
            seen.add("does not fit")
            continue
        layout = _layout_of(p.tricks)
        row = cost.training_cost(m, TOKENS, gpu, [n], zero_stage=z, price_per_gpu_hour=PRICE, **layout).rows[
            0
        ]
        _same(p, row, what)
        seen.update({f"ZeRO-{z}", layout["recompute"], layout["offload"], "1 GPU" if n == 1 else "DP"})
    assert {"ZeRO-1", "ZeRO-3", "1 GPU", "DP"} <= seen, seen


def test_the_grid_prices_every_kind_of_layout():
    """The grid above reaches plain DDP, ZeRO-1 and ZeRO-3, recompute, optimizer offload and layouts that fit no
    GPU: the equality is checked where the loop's branches differ, not only on the easy case."""
    kinds = set()
    for name, gpu, n, z in itertools.product(("llama-2-7b", "llama-3-8b"), GPUS, (1, 8), ZEROS):
        m = get_model(name)
        (p,) = train_plans(
            m,
            "pretrain",
            TOKENS,
            [gpu],
            [n],
            {gpu: PRICE},
            None,
            None,
            m.train_seq_len,
            1,
            8,
            None,
            None,
            None,
            None,
            zero_stages=(z,),
        )
        kinds.add(p.binding if p.binding == "does not fit" else (z, *_layout_of(p.tricks).values()))
    assert "does not fit" in kinds
    assert any(k[2] == "optimizer" for k in kinds if k != "does not fit")
    assert {k[0] for k in kinds if k != "does not fit"} >= {1, 3}


@pytest.mark.parametrize("name, gpu", [("opt-1.3b", "h100-sxm"), ("llama-3-8b", "a100-80gb")])
def test_plan_without_the_3d_search_matches_cost_train(name, gpu):
    """plan() itself (its own choice of layout, refine=False) against cost train at that layout, every count."""
    m = get_model(name)
    r = plan("pretrain", m, tokens=TOKENS, gpus={gpu: PRICE}, counts=COUNTS, refine=False)
    for p in r.plans:
        if p.binding == "does not fit":
            continue
        row = cost.training_cost(
            m,
            TOKENS,
            gpu,
            [p.gpus],
            zero_stage=_zero_of(p.tricks, p.gpus),
            price_per_gpu_hour=PRICE,
            **_layout_of(p.tricks),
        ).rows[0]
        _same(p, row, f"{name} on {p.gpus} x {gpu}: plan {p.layout!r}")


def test_tokens_per_gpu_per_step_is_the_layouts():
    """Both take seq_len x micro_batch x grad_accum tokens per GPU per optimizer step; the ~30% gap was plan's
    seq_len x micro_batch against cost train's fixed 8,192."""
    m = get_model("llama-2-7b")
    t = cost.training_cost(m, TOKENS, "h100-sxm", [16], zero_stage=1, price_per_gpu_hour=PRICE)
    assert t.rows[0].tokens_per_gpu == m.train_seq_len * 1 * 1
    two = cost.training_cost(
        m, TOKENS, "h100-sxm", [16], zero_stage=1, price_per_gpu_hour=PRICE, micro_batch=2, grad_accum=4
    )
    assert two.rows[0].tokens_per_gpu == m.train_seq_len * 2 * 4
    assert two.rows[0].efficiency > t.rows[0].efficiency  # more compute per gradient all-reduce
    (p,) = plan(
        "pretrain", m, tokens=TOKENS, gpus={"h100-sxm": PRICE}, counts=(16,), micro_batch=2, refine=False
    ).plans
    assert p.settings["grad_accum"] == _layout_of(p.tricks)["grad_accum"]  # printed settings = priced layout
    row = cost.training_cost(
        m,
        TOKENS,
        "h100-sxm",
        [16],
        price_per_gpu_hour=PRICE,
        micro_batch=2,
        zero_stage=_zero_of(p.tricks, 16),
        **_layout_of(p.tricks),
    ).rows[0]
    _same(p, row, f"micro_batch 2: plan {p.layout!r}")


@pytest.mark.parametrize(
    "name, gpu, n, searched",
    [
        # every count of one node or whole nodes is a layout of gpukit.parallel's search (issue 23), one GPU
        # too when the model fits it; 12 and 20 GPUs on nodes of 8 keep the data-parallel plan
        ("opt-1.3b", "h100-sxm", 1, True),
        ("opt-1.3b", "a100-80gb", 1, True),
        ("llama-2-7b", "h100-sxm", 12, False),
        ("opt-1.3b", "a100-80gb", 20, False),
        ("llama-2-7b", "a100-80gb", 12, False),
        ("llama-2-7b", "h100-sxm", 8, True),
        ("llama-3-8b", "a100-80gb", 16, True),
    ],
)
def test_the_two_commands_json(name, gpu, n, searched, capsys):
    """`gpukit plan --json` and `gpukit cost train --json` at the layout the planner chose (its grad_accum too).
    A plan of gpukit.parallel's layout search is reproduced by `gpukit parallel estimate` instead (its printed
    `reproduce` command, tests/test_planner_search.py)."""
    assert (
        main(
            [
                "plan",
                "--workload",
                "pretrain",
                "--model",
                name,
                "--tokens",
                "100B",
                "--gpu",
                f"{gpu}:{PRICE}",
                "--gpus",
                str(n),
                "--json",
            ]
        )
        == 0
    )
    (p,) = json.loads(capsys.readouterr().out)["plans"]
    layout = _layout_of(p["tricks"])
    z = _zero_of(p["tricks"], n)
    args = [
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
        "--recompute",
        layout["recompute"],
        "--offload",
        layout["offload"],
        "--grad-accum",
        str(layout["grad_accum"]),
        "--price-per-gpu-hour",
        str(PRICE),
        "--json",
    ]
    assert bool(p["reproduce"]) == searched, p["layout"]
    if searched:
        rule = (
            "pytorch" if p["settings"]["tp"] == p["settings"]["pp"] == 1 else "megatron"
        )  # layout_convention
        assert p["reproduce"].startswith("gpukit parallel estimate") and p["memory_convention"] == rule
        return
    assert main(args) == 0
    (row,) = json.loads(capsys.readouterr().out)["rows"]
    assert p["memory_per_gpu_bytes"] == row["memory_per_gpu_bytes"] and p["binding"] == row["binding"]
    for key in ("hours", "cost_usd", "efficiency"):
        assert p[key] == pytest.approx(row[key], rel=1e-12), key


@pytest.mark.parametrize("workload", ["lora", "qlora"])
def test_adapters_are_priced_by_the_same_loop(workload):
    """LoRA/QLoRA plans (frozen base, cheaper backward, no data-parallel gradient traffic) and cost train told
    finetune=workload at the planner's recompute: the same memory, hours, cost and efficiency."""
    for name, gpu, n in itertools.product(("llama-2-7b", "llama-3-8b"), GPUS, (1, 8)):
        m = get_model(name)
        (p,) = train_plans(
            m,
            workload,
            1e9,
            [gpu],
            [n],
            {gpu: PRICE},
            None,
            None,
            m.train_seq_len,
            1,
            8,
            None,
            None,
            None,
            None,
        )
        assert p.binding != "does not fit", (name, gpu, n)
        row = cost.training_cost(
            m, 1e9, gpu, [n], finetune=workload, price_per_gpu_hour=PRICE, **_layout_of(p.tricks)
        ).rows[0]
        _same(p, row, f"{workload} {name} on {n} x {gpu}: plan {p.layout!r}")
        assert row.efficiency > 0.99  # only the adapters' gradients cross the network, only they are updated
