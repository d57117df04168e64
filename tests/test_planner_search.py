"""Issue 23 sec. 2 and 5: the planner searches what a real team would try (every GPU count the
global batch allows, the layout search at every count and type), states the global batch (the
critical batch), passes --micro-batch and --global-batch to every plan, prints every setting of a plan
so that `gpukit parallel estimate` reproduces it, decides "fits" by the convention it names, and serves
at every TP within the allowed counts."""

from __future__ import annotations

import json
import shlex

import pytest

from gpukit import inference, memory, parallel
from gpukit.catalog import get_gpu, get_model
from gpukit.cli import main
from gpukit.parallel import ParallelConfig, layout_train_setup, make_cluster, team_layouts
from gpukit.plan import plan
from gpukit.scaling import PUBLISHED_BATCH, critical_batch
from gpukit.specs import ModelSpec


def test_70b_on_2t_tokens_finds_a_plan_within_720_hours():
    # issue 23: "no plan meets every constraint (nearest 1,117 h on 1024 H100)" while a layout of
    # thousands of GPUs meets 720 h; counts no longer stop at 1024
    r = plan("pretrain", "llama-2-70b", tokens=2e12, deadline_hours=720)
    assert r.best is not None, r.recommendation
    assert r.best.hours <= 720
    assert max(p.gpus for p in r.plans) > 1024
    assert r.global_batch * r.seq_len <= r.critical_batch_tokens  # within the critical batch


def test_micro_batch_reaches_every_plan():
    r = plan("pretrain", "llama-2-7b", tokens=50e9, micro_batch=2, gpus=["h100-sxm", "a100-80gb"])
    fitting = [p for p in r.plans if p.binding != "does not fit"]
    assert len(fitting) > 3
    assert all(p.settings["micro_batch"] == 2 for p in fitting)
    assert any(p.settings["tp"] > 1 or p.settings["pp"] > 1 for p in fitting) or all(
        p.settings["micro_batch"] == 2 for p in fitting
    )
    assert not any("micro_batch 1 per GPU" in a for a in r.assumptions)


def test_global_batch_reaches_every_plan_and_is_stated():
    r = plan("pretrain", "llama-2-7b", tokens=50e9, global_batch=256, gpus=["h100-sxm"])
    assert r.global_batch == 256
    fitting = [p for p in r.plans if p.binding != "does not fit"]
    assert fitting
    for p in fitting:
        s = p.settings
        assert s["global_batch"] == 256
        assert s["dp"] * s["micro_batch"] * s["grad_accum"] == 256
    assert any("global batch 256 sequences" in a for a in r.assumptions)
    # counts beyond what 256 sequences allow are skipped with that reason, not "nothing fits"
    r2 = plan("pretrain", "llama-2-7b", tokens=50e9, global_batch=256, gpus=["h100-sxm"], counts=(4096,))
    assert "Nothing fits" not in r2.recommendation
    assert "global batch" in r2.recommendation


def test_global_batch_beyond_the_critical_batch_is_flagged():
    cb = critical_batch("llama-2-7b", 1e12)
    r = plan(
        "pretrain", "llama-2-7b", tokens=1e12, global_batch=4 * cb.sequences, gpus=["h100-sxm"], counts=(64,)
    )
    assert any(a.startswith("WARNING") and "critical batch" in a for a in r.assumptions)
    ok = plan("pretrain", "llama-2-7b", tokens=1e12, gpus=["h100-sxm"], counts=(64,))
    assert not any("critical batch" in a and a.startswith("WARNING") for a in ok.assumptions)


def test_critical_batch_published_and_fitted():
    assert critical_batch("llama-2-70b", 2e12).tokens == PUBLISHED_BATCH["llama-2-70b"][0]
    assert "published" in critical_batch("opt-13b", 1e11).source
    # the DeepSeek LLM fit grows with compute and lands among the published batches (0.5M-64M tokens)
    m = ModelSpec(name="x", n_layers=32, hidden=4096, n_heads=32, max_seq=4096, mlp="swiglu")
    small, big = critical_batch(m, 1e10), critical_batch(m, 1e13)
    assert small.tokens < big.tokens
    assert 2**19 <= small.tokens and big.tokens <= 64 * 2**20
    with pytest.raises(ValueError, match="tokens"):
        critical_batch(m, 0)


REQUESTS = [
    ("llama-2-7b", 100e9, None, ["a100-40gb"], None),
    ("llama-2-7b", 1e12, 168, None, None),
    ("llama-2-13b", 260e9, 168, ["h100-sxm"], None),
    ("llama-2-70b", 2e12, 720, None, None),
    ("llama-2-70b", 1e11, None, ["h100-sxm"], (64,)),
    ("opt-1.3b", 26e9, 24, ["h100-sxm"], None),
    ("opt-30b", 600e9, 336, ["a100-80gb"], None),
    ("gpt2-xl", 20e9, 48, ["a100-40gb"], None),
    ("mistral-7b", 200e9, 240, ["h100-sxm"], None),
    ("llama-3-8b", 1e12, 500, ["h100-sxm", "a100-80gb"], None),
]


def _shown(r):
    return r.best or next(p for p in r.plans if p.binding != "does not fit")


@pytest.mark.parametrize("name,tokens,deadline,gpus,counts", REQUESTS)
def test_every_recommended_plan_fits_by_the_convention_it_names(name, tokens, deadline, gpus, counts):
    r = plan("pretrain", name, tokens=tokens, deadline_hours=deadline, gpus=gpus, counts=counts)
    p = _shown(r)
    s = p.settings
    model, gpu = get_model(name), get_gpu(p.gpu)
    if p.reproduce:  # a layout of the search: its memory is the layout estimate's (layout_convention)
        c = ParallelConfig(
            s["dp"],
            s["tp"],
            s["pp"],
            s["virtual_stages"],
            s["zero_stage"],
            s["micro_batch"],
            s["recompute"],
            s["sp"],
            ep=s["ep"],
            cp=s["cp"],
        )
        setup = layout_train_setup(c, s["seq_len"], s["grad_accum"], "flash", model.dropout)
    else:
        setup = memory.TrainSetup(
            convention=p.memory_convention,
            dp=s["dp"],
            zero_stage=s["zero_stage"],
            recompute=s["recompute"],
            seq_len=s["seq_len"],
            micro_batch=s["micro_batch"],
            offload=s["offload"],
            dropout=model.dropout,
        )
    assert setup.convention == p.memory_convention
    m = memory.estimate_memory(model, setup=setup, gpu=gpu)
    assert m.fits, (p.layout, m.total_bytes / 2**30)
    assert m.total_bytes == p.memory_per_gpu_bytes


@pytest.mark.parametrize(
    "name,tokens,deadline,gpus,counts", [REQUESTS[0], REQUESTS[3], REQUESTS[4], REQUESTS[8]]
)
def test_parallel_estimate_with_the_printed_settings_gives_the_plan(
    capsys, name, tokens, deadline, gpus, counts
):
    r = plan("pretrain", name, tokens=tokens, deadline_hours=deadline, gpus=gpus, counts=counts)
    p = _shown(r)
    layout_rule = "pytorch" if p.settings["tp"] == p.settings["pp"] == 1 else "megatron"  # layout_convention
    assert p.memory_convention == layout_rule and p.reproduce.startswith("gpukit parallel estimate ")
    text = r.to_text()
    assert f"reproduce: {p.reproduce}" in text
    for key in ("dp", "tp", "pp", "virtual_stages", "micro_batch", "grad_accum", "zero_stage", "recompute"):
        assert f"{key} {p.settings[key]}" in text
    assert f"sp {p.settings['sp']}" in text
    argv = shlex.split(p.reproduce)[1:] + ["--json"]
    assert main(argv) == 0
    est = json.loads(capsys.readouterr().out)
    assert est["memory_per_gpu_bytes"] == p.memory_per_gpu_bytes
    assert tokens / est["tokens_per_s"] / 3600 == pytest.approx(p.hours, rel=1e-9)


def test_team_search_is_close_to_the_full_search():
    # the planner screens the (tp, pp) splits; against searching every split in full, within 5%
    counts = (8, 16, 32, 64, 128)
    for gpu in ("h100-sxm", "a100-40gb"):
        fast = team_layouts("llama-2-13b", gpu, counts, global_batch=512)
        full = team_layouts("llama-2-13b", gpu, counts, global_batch=512, screen=None)
        for a, b in zip(fast, full, strict=True):
            assert (a.best is None) == (b.best is None)
            if a.best is not None:
                assert a.best.estimate.tokens_per_s >= 0.95 * b.best.estimate.tokens_per_s
    # and the full team search is the exhaustive parallel.search restricted to its families: never faster
    ex = parallel.search("llama-2-13b", "h100-sxm", 64, global_batch=512, top_k=1)
    assert full[3].best.estimate.tokens_per_s <= ex.best.estimate.tokens_per_s * (1 + 1e-9)


def test_serve_tries_every_tp_and_precision():
    # issue 23: "3 x int4 at $9/h where fp8 TP2 on 2 GPUs serves it at ~$6/h"
    model = get_model("llama-2-70b")
    r = plan("serve", model, rate=5, gpus=["h100-sxm"])
    best = r.best
    g = get_gpu("h100-sxm")
    brute = []
    for prec in ("bf16", "fp8", "int8", "int4"):
        for tp in (1, 2, 4, 8):
            try:
                s = inference.serve(
                    model, g, gpus=tp, tp=tp, precision=prec, input_tokens=512, output_tokens=256
                )
            except ValueError:
                continue
            if s.fits and s.capacity_req_per_s > 0:
                brute.append(inference.replicas_for_rate(5, s.capacity_req_per_s) * tp)
    assert best.gpus == min(brute)
    assert best.cost_usd == pytest.approx(min(brute) * best.usd_per_gpu_hour)


def test_serve_honours_the_allowed_counts():
    r = plan("serve", "llama-2-70b", rate=5, gpus=["h100-sxm", "a100-80gb"], counts=(4,))
    assert all(p.gpus == 4 for p in r.plans if p.feasible)
    assert r.best is not None and r.best.gpus == 4
    r8 = plan("serve", "llama-2-70b", rate=5, gpus=["h100-sxm"], counts=(3,))
    # 3 GPUs hold no whole set of TP-2 replicas; a TP-1 replica must fit (int4 on 80 GB does)
    assert all(p.gpus in (3,) for p in r8.plans if p.feasible)


def test_plan_cli_global_batch_and_micro_batch(capsys):
    rc = main(
        [
            "plan",
            "--workload",
            "pretrain",
            "--model",
            "llama-2-7b",
            "--tokens",
            "5e10",
            "--gpu",
            "h100-sxm",
            "--gpus",
            "16,32",
            "--global-batch",
            "512",
            "--micro-batch",
            "2",
            "--json",
        ]
    )
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["global_batch"] == 512
    assert {p["settings"]["micro_batch"] for p in out["plans"] if p["settings"]} == {2}
    rc = main(["plan", "--workload", "serve", "--model", "llama-2-7b", "--rate", "1", "--global-batch", "8"])
    assert rc == 2
    assert "--global-batch" in capsys.readouterr().err


def test_make_cluster_efficiency_passthrough():
    # --mfu reaches the layout plans as the matmul efficiency of the estimate
    a = plan("pretrain", "llama-2-7b", tokens=5e10, gpus=["h100-sxm"], counts=(8,), mfu=0.35)
    b = plan("pretrain", "llama-2-7b", tokens=5e10, gpus=["h100-sxm"], counts=(8,), mfu=0.7)
    assert a.plans[0].hours > b.plans[0].hours
    assert make_cluster("h100-sxm", 8, matmul_efficiency=0.35).matmul_efficiency == 0.35


# ---- issue 24: FP8 training in the planner (the FP8 recipe of gpukit.memory and gpukit.parallel.estimate)
def test_fp8_plans_are_the_fp8_layout_estimates_and_reproduce(capsys):
    kw = dict(tokens=1e12, gpus=["h100-sxm", "a100-80gb"], counts=[64, 128])
    bf = plan("pretrain", "llama-3-8b", **kw)
    f8 = plan("pretrain", "llama-3-8b", precision="fp8", **kw)
    assert {p.gpu for p in f8.plans} == {"h100-sxm"}  # the A100 has no fp8 tensor cores: left out, said
    assert any("precision fp8: left out a100-80gb" in s for s in f8.skipped)
    by = {(p.gpu, p.gpus): p for p in bf.plans}
    for p in f8.plans:
        assert p.settings["precision"] == "fp8" and "FP8 recipe" in p.tricks
        assert p.hours < by[(p.gpu, p.gpus)].hours  # fp8 GEMMs at the fp8 peak x its cataloged share
        assert p.reproduce.endswith("--precision fp8")
    p = f8.plans[0]
    assert main(shlex.split(p.reproduce)[1:] + ["--json"]) == 0
    est = json.loads(capsys.readouterr().out)
    assert est["memory_per_gpu_bytes"] == p.memory_per_gpu_bytes
    assert 1e12 / est["tokens_per_s"] / 3600 == pytest.approx(p.hours, rel=1e-9)


@pytest.mark.parametrize(
    "argv,msg",
    [
        (["--workload", "lora", "--tokens", "1e9"], "precision fp8 applies to full training"),
        (["--workload", "pretrain", "--tokens", "1e9", "--gpu", "a100-80gb"], "fp8 tensor cores"),
        (["--workload", "serve", "--rate", "1"], "--precision applies to training workloads"),
    ],
)
def test_fp8_plan_bad_requests_are_one_line_errors(capsys, argv, msg):
    assert main(["plan", "--model", "llama-3-8b", "--precision", "fp8", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert msg in err and "\n" not in err and "Traceback" not in err
