"""The today's-models widget (gpukit.widgets.moe_view, notebook 10 sec. 8): the answer moves with its
controls, agrees with the calculators it wraps, and bad input shows one line in place of the plot."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpukit import inference
from gpukit import parallel as par
from gpukit.catalog import get_model
from gpukit.widgets.moe_view import moe_compute, moe_view

FIXTURES = Path(__file__).parent / "fixtures" / "hf_configs"


def test_the_answer_is_the_layout_search_and_the_serving_fit():
    a = moe_compute(model="mixtral-8x7b", gpu="h100-sxm", gpus=16, seq_len=4096)
    best = par.search(get_model("mixtral-8x7b"), "h100-sxm", 16, seq_len=4096, top_k=5).ranked[0].estimate
    assert a.best.config == best.config and a.best.tokens_per_s == best.tokens_per_s
    assert a.hours == pytest.approx(100e9 / best.tokens_per_s / 3600)
    tp, pp = inference.min_gpus_to_fit(get_model("mixtral-8x7b"), "h100-sxm", precision="bf16", context=4096)
    assert (a.serve_tp, a.serve_pp, a.serve_gpus) == (tp, pp, tp * pp)
    assert a.active_params < a.n_params / 3  # top-2 of 8 experts


def test_fp8_is_faster_and_serves_on_fewer_gpus():
    bf = moe_compute(model="mixtral-8x7b", gpus=16, precision="bf16-mixed")
    f8 = moe_compute(model="mixtral-8x7b", gpus=16, precision="fp8")
    assert f8.hours < bf.hours and f8.serve_gpus <= bf.serve_gpus


def test_too_few_gpus_says_nothing_fits():
    a = moe_compute(model="mixtral-8x7b", gpus=8)  # 46.7B x 16 bytes of state > 8 x 80 GB
    assert a.best is None and a.hours is None and "no layout fits" in a.summary()


def test_a_config_json_replaces_the_model():
    a = moe_compute(hf_config=str(FIXTURES / "mixtral-8x7b.json"), gpus=16)
    assert a.n_params == pytest.approx(get_model("mixtral-8x7b").n_params, rel=1e-6)


@pytest.mark.parametrize(
    "kw, field",
    [
        (dict(precision="fp4"), "precision"),
        (dict(gpu="a100-80gb", precision="fp8"), "fp8"),
        (dict(gpus=0), "gpus"),
        (dict(seq_len=10**9), "seq_len"),
        (dict(tokens_b=-1), "tokens_b"),
        (dict(model="no-such-model"), "model"),
    ],
)
def test_bad_input_is_one_line_in_place_of_the_plot(kw, field):
    with pytest.raises(ValueError, match=field) as e:
        moe_compute(**{"gpus": 16, **kw})
    assert "\n" not in str(e.value)
    if field in ("precision", "model"):
        return  # a dropdown offers only valid values
    v = moe_view()
    v.set(**{"gpus": 16, **kw})
    assert v.error and field in v.error and "\n" not in v.error
