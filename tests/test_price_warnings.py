"""A node's price typed as a GPU-hour price gets the same one-line warning in every command that takes
a price (issue 23 sec. 5: cost train warned, plan and serve did not); a market-like price gets none."""

from __future__ import annotations

from gpukit.catalog import get_model
from gpukit.catalog import gpus as catalog_gpus
from gpukit.inference import serve
from gpukit.plan import plan


def test_plan_warns_of_a_node_price_given_per_gpu_hour():
    m = get_model("opt-1.3b")
    warned = plan("pretrain", m, tokens=26e9, gpus={"h100-sxm": 80.0}, counts=(8,))
    assert any(a.startswith("WARNING:") and "h100-sxm" in a for a in warned.assumptions)
    fine = plan("pretrain", m, tokens=26e9, gpus={"h100-sxm": 3.0}, counts=(8,))
    assert not any(a.startswith("WARNING:") for a in fine.assumptions)


def test_serve_warns_of_a_node_price_given_per_gpu_hour():
    m = get_model("llama-2-7b")
    warned = serve(m, "h100-sxm", price_per_gpu_hour=80.0)
    assert any(n.startswith("WARNING:") and "--price-per-gpu-hour" in n for n in warned.notes)
    assert not any(n.startswith("WARNING:") for n in serve(m, "h100-sxm", price_per_gpu_hour=3.0).notes)


def test_a_gpu_without_market_rows_gets_no_false_warning():
    m = get_model("llama-2-7b")
    for name in catalog_gpus():
        r = serve(m, name, price_per_gpu_hour=1.0) if name else None
        assert r is None or not any(n.startswith("WARNING:") for n in r.notes)
