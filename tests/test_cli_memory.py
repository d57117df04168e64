"""`gpukit memory` through gpukit.cli.main: JSON keys, text output, one-line errors with exit code 2."""

from __future__ import annotations

import json

import pytest

from gpukit.cli import main
from gpukit.cli.memory import parse_count

KEYS = (
    "params_bytes",
    "grads_bytes",
    "optimizer_bytes",
    "activations_bytes",
    "logits_bytes",
    "kv_cache_bytes",
    "overhead_bytes",
    "total_bytes",
    "n_params",
)


def run(capsys, *argv):
    code = main(["memory", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys, *argv):
    code, out, err = run(capsys, *argv, "--json")
    assert code == 0, err
    return json.loads(out)


def test_params_only_json(capsys):
    d = run_json(capsys, "--params", "7B", "--zero", "3", "--dp", "8", "--convention", "megatron")
    for k in KEYS:
        assert isinstance(d[k], int), k
    # issue 25: stable keys; without --gpu there is no GPU to fit on: fits and gpu_memory_bytes are null
    assert d["fits"] is None and d["gpu_memory_bytes"] is None
    assert d["n_params"] == 7 * 10**9 and d["activations_bytes"] == 0 and d["logits_bytes"] == 0
    assert d["params_bytes"] + d["grads_bytes"] + d["optimizer_bytes"] == 16 * 7 * 10**9 // 8
    assert d["total_bytes"] == sum(d[k] for k in KEYS[:7])
    # the default (pytorch) convention: fp32 params and grads under autocast, AdamW's states, and the
    # foreach update's sqrt(v) (4 bytes per state element, sharded like the states), all at the step
    d = run_json(capsys, "--params", "7B", "--zero", "3", "--dp", "8")
    assert d["params_bytes"] + d["grads_bytes"] + d["optimizer_bytes"] == (4 + 4 + 8 + 4) * 7 * 10**9 // 8
    assert d["total_bytes"] == sum(d[k] for k in KEYS[:7])


def test_dims_json_matches_the_api(capsys):
    from gpukit.memory import TrainSetup, estimate_memory
    from gpukit.specs import ModelSpec

    d = run_json(
        capsys,
        "--layers",
        "24",
        "--hidden",
        "2048",
        "--heads",
        "16",
        "--seq",
        "1024",
        "--micro-batch",
        "4",
        "--recompute",
        "selective",
        "--tp",
        "2",
        "--sp",
    )
    model = ModelSpec("custom", 24, 2048, 16)
    r = estimate_memory(
        model, setup=TrainSetup(seq_len=1024, micro_batch=4, recompute="selective", tp=2, sp=True)
    )
    assert d["activations_bytes"] == r.activations_bytes > 0 and d["total_bytes"] == r.total_bytes


def test_gpu_adds_fits_and_overhead(capsys):
    d = run_json(capsys, "--model", "gpt2", "--gpu", "rtx-4090", "--micro-batch", "4")
    assert d["fits"] is True and d["gpu_memory_bytes"] > d["total_bytes"] and d["overhead_bytes"] > 0


def test_text_output_has_table_and_verdict(capsys):
    code, out, err = run(capsys, "--model", "llama-2-7b", "--gpu", "a100-80gb")
    assert code == 0 and err == ""
    assert "GiB" in out and "optimizer" in out and "does NOT fit" in out


def test_inference_and_qlora(capsys):
    d = run_json(
        capsys,
        "--model",
        "llama-2-70b",
        "--inference",
        "--weights-dtype",
        "nf4",
        "--seq",
        "4096",
        "--batch",
        "8",
        "--gpu",
        "h100-sxm",
    )
    assert (
        d["grads_bytes"] == d["optimizer_bytes"] == 0
        and d["kv_cache_bytes"] == 2 * 80 * 8 * 128 * 2 * 4096 * 8
    )
    assert d["fits"] is True
    q = run_json(capsys, "--model", "llama-2-7b", "--finetune", "qlora", "--recompute", "full")
    assert q["trainable_params"] < q["n_params"] / 50


def test_question_flags(capsys):
    d = run_json(
        capsys,
        "--model",
        "llama-2-7b",
        "--finetune",
        "lora",
        "--gpu",
        "h100-sxm",
        "--max-micro-batch",
        "--max-seq-len",
        "--seq",
        "2048",
    )
    assert d["max_micro_batch"] >= 1 and d["max_seq_len"] >= 2048
    m = run_json(capsys, "--model", "llama-2-7b", "--gpu", "h100-sxm", "--min-gpus", "--max-gpus", "64")
    assert m["min_gpus"]["best"]["zero_stage"] >= 1 and m["min_gpus"]["best"]["world_size"] >= 2
    code, out, _ = run(capsys, "--model", "llama-2-7b", "--gpu", "h100-sxm", "--min-gpus", "--max-gpus", "64")
    assert code == 0 and "fewest GPUs" in out


@pytest.mark.parametrize(
    "text,n",
    [
        ("7e9", 7 * 10**9),
        ("7B", 7 * 10**9),
        ("125M", 125 * 10**6),
        ("1.5T", 1.5e12),
        ("350k", 350_000),
        ("7_000", 7000),
    ],
)
def test_parse_count(text, n):
    assert parse_count(text) == n


@pytest.mark.parametrize(
    "argv,flag",
    [
        (["--model", "no-such-model"], "--model"),
        (["--model", "gpt2", "--gpu", "no-such-gpu"], "--gpu"),
        (["--params", "abc"], "--params"),
        (["--params", "0"], "--params"),
        (["--params", "-5"], "--params"),
        (["--model", "gpt2", "--layers", "12"], "--layers"),
        (["--model", "gpt2", "--params", "7B"], "--params"),
        (["--layers", "12", "--hidden", "768"], "--heads"),
        (["--layers", "12", "--hidden", "768", "--heads", "7"], "--heads"),
        (["--layers", "0", "--hidden", "768", "--heads", "12"], "--layers"),
        (["--model", "llama-2-7b", "--tp", "5"], "--tp"),
        (["--model", "gpt2", "--micro-batch", "0"], "--micro-batch"),
        (["--model", "gpt2", "--seq", "-1"], "--seq"),
        (["--model", "gpt2", "--zero", "4"], "--zero"),
        (["--model", "gpt2", "--precision", "fp4"], "--precision"),
        (["--model", "llama-2-7b", "--finetune", "qlora", "--precision", "fp32"], "--finetune"),
        (["--model", "gpt2", "--offload", "optimizer"], "--offload"),
        (["--model", "gpt2", "--max-micro-batch"], "--max-micro-batch"),
        (["--params", "7B", "--gpu", "h100-sxm", "--max-seq-len"], "--max-seq-len"),
        (["--params", "7B", "--finetune", "lora"], "--finetune"),
        ([], "--model"),
        # flags that changed nothing (docs/CONTRACTS.md: an error or a stated note, never ignored)
        (["--model", "llama-2-7b", "--lora-rank", "64"], "--lora-rank"),
        (["--model", "llama-2-7b", "--lora-targets", "qv"], "--lora-targets"),
        (["--model", "llama-2-7b", "--inference", "--sp", "--tp", "2"], "--sp"),
        (["--model", "llama-2-7b", "--inference", "--dp", "4"], "--dp"),
        (["--model", "llama-2-7b", "--inference", "--optimizer-impl", "fused"], "--optimizer-impl"),
        (["--model", "llama-2-7b", "--inference", "--grad-dtype", "fp32"], "--grad-dtype"),
        (["--model", "llama-2-7b", "--inference", "--pp", "2", "--virtual-stages", "2"], "--virtual-stages"),
        (["--model", "llama-2-7b", "--zero3-prefetch-layers", "1"], "--zero3-prefetch-layers"),
        (
            ["--model", "llama-2-7b", "--convention", "megatron", "--optimizer-impl", "fused"],
            "--optimizer-impl",
        ),
        (["--model", "llama-2-7b", "--finetune", "lora", "--optimizer-impl", "fused"], "--optimizer-impl"),
        (["--model", "llama-2-7b", "--max-gpus", "8"], "--max-gpus"),
        # a bare count has no layer to gather ahead: the prefetch changed nothing
        (
            ["--params", "7B", "--zero", "3", "--dp", "8", "--zero3-prefetch-layers", "2"],
            "--zero3-prefetch-layers",
        ),
        # gradients in a dtype the precision never makes (fp16 grads of fp32 training: 2 B/param counted)
        (["--model", "llama-2-7b", "--precision", "fp32", "--grad-dtype", "fp16"], "--grad-dtype"),
        (["--model", "llama-2-7b", "--grad-dtype", "bf16"], "--grad-dtype"),
    ],
)
def test_bad_input_exits_2_with_one_line(capsys, argv, flag):
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert "Traceback" not in err and err.strip().count("\n") == 0
    assert flag in err, err


def test_flags_that_matter_still_run(capsys):
    """The checks above refuse only flags that change nothing: with their own mode they run."""
    lora = run_json(capsys, "--model", "llama-2-7b", "--finetune", "lora", "--lora-rank", "64")
    assert (
        lora["trainable_params"]
        > run_json(capsys, "--model", "llama-2-7b", "--finetune", "lora")["trainable_params"]
    )
    z3 = ("--model", "llama-2-7b", "--zero", "3", "--dp", "8")
    assert (
        run_json(capsys, *z3, "--zero3-prefetch-layers", "1")["params_bytes"]
        > run_json(capsys, *z3)["params_bytes"]
    )
    plan = run_json(capsys, "--model", "llama-2-7b", "--gpu", "h100-sxm", "--min-gpus", "--max-gpus", "8")
    assert plan["min_gpus"]["best"]["world_size"] <= 8
    assert (
        run_json(capsys, "--model", "llama-2-7b", "--convention", "megatron", "--grad-dtype", "bf16")[
            "grads_bytes"
        ]
        > 0
    )


def test_inference_names_the_prefill_assumption(capsys):
    """Serving's activations are the prefill of the whole batch at once (gpukit.memory.parts): mistral-7b,
    8 x 32768 tokens on an H100 puts 30 GiB there, which the output did not explain."""
    d = run_json(capsys, "--model", "mistral-7b", "--inference", "--batch", "8", "--seq-len", "32768")
    assert d["activations_bytes"] > 29 * 2**30
    assert any("prefill working set for all 8 x 32768 tokens" in n and "upper bound" in n for n in d["notes"])


def test_inference_kv_cache_stops_at_the_sliding_window(capsys):
    """mistral-7b keeps 4096 tokens per sequence in its rolling buffer (Jiang et al. 2023 sec. 2): 8 x 32768
    tokens charged 8 x 32768 x 128 KiB = 32 GiB of KV cache, 8x what the cache holds; the note says why."""
    d = run_json(capsys, "--model", "mistral-7b", "--inference", "--batch", "8", "--seq-len", "32768")
    assert d["kv_cache_bytes"] == 8 * 4096 * 2 * 32 * 8 * 128 * 2  # 4 GiB
    assert sum("sliding window of 4096 tokens" in n for n in d["notes"]) == 1
    d = run_json(capsys, "--model", "llama-2-7b", "--inference", "--batch", "8", "--seq-len", "4096")
    assert not any("sliding window" in n for n in d["notes"])


def test_custom_shape_follows_its_layout_and_names_its_defaults(capsys):
    """A custom --mlp swiglu shape is the Llama layout, which trains without dropout (Touvron et al. 2023):
    its masks were counted (eager attention: the a s^2 b mask and dropout output too) with no word; the
    vocab (GPT-2's 50257) and ffn_hidden picked for it were not said either."""
    from gpukit.memory import TrainSetup, estimate_memory
    from gpukit.specs import ModelSpec

    dims = (
        "--layers",
        "4",
        "--hidden",
        "1024",
        "--heads",
        "16",
        "--seq-len",
        "1024",
        "--attention",
        "eager",
        "--convention",
        "megatron",
    )
    d = run_json(capsys, *dims, "--mlp", "swiglu")
    spec = ModelSpec("custom", 4, 1024, 16, mlp="swiglu", norm="rmsnorm", position="rope", bias=False)
    setup = TrainSetup(seq_len=1024, attention="eager", convention="megatron", dropout=False)
    assert d["activations_bytes"] == estimate_memory(spec, setup=setup).activations_bytes
    assert any(
        "dropout masks not counted (Llama layout" in n and "vocab 50257" in n and "ffn_hidden 2816" in n
        for n in d["notes"]
    )
    gpt = run_json(capsys, *dims)  # the GPT layout keeps Korthikanti's convention: masks counted
    assert any("dropout masks counted (GPT layout" in n for n in gpt["notes"])
    given = run_json(
        capsys, *dims, "--mlp", "swiglu", "--dropout", "--vocab", "32000", "--ffn-hidden", "2816"
    )
    assert given["activations_bytes"] > d["activations_bytes"] and not any(
        "custom shape" in n for n in given.get("notes", [])
    )


def test_params_with_zero3_says_the_gathered_layer_is_missing(capsys):
    """ZeRO-3 gathers a layer's full weights (gpukit.memory.parts); a bare count has no layer size."""
    d = run_json(capsys, "--params", "7B", "--zero", "3", "--dp", "8")
    assert any("nor ZeRO-3's gathered layer" in n for n in d["notes"])
    assert not any(
        "gathered" in n for n in run_json(capsys, "--params", "7B", "--zero", "2", "--dp", "8")["notes"]
    )


def test_selective_recompute_with_flash_says_it_saves_little(capsys):
    """Selective recompute drops the attention scores (Korthikanti et al. 2022), which flash attention (the
    default) never stores: llama-2-7b, micro-batch 4, megatron: activations 37.66 -> 37.62 GiB, unexplained."""
    args = ("--model", "llama-2-7b", "--micro-batch", "4", "--convention", "megatron")
    none, sel = run_json(capsys, *args), run_json(capsys, *args, "--recompute", "selective")
    assert sel["activations_bytes"] > 0.99 * none["activations_bytes"]
    assert any("saves next to nothing" in n for n in sel["notes"])
    eager = run_json(capsys, *args, "--recompute", "selective", "--attention", "eager")
    assert not any("saves next to nothing" in n for n in eager["notes"])


def test_json_says_what_the_text_header_says(capsys):
    """The text names the model, the convention, the phase at the peak, the pipeline stage and the setup
    computed (seq_len picked by default, ...); the JSON had none of them."""
    code, out, _ = run(capsys, "--model", "llama-2-7b", "--pp", "2", "--gpu", "h100-sxm")
    d = run_json(capsys, "--model", "llama-2-7b", "--pp", "2", "--gpu", "h100-sxm")
    assert d["model"] == "llama-2-7b" and d["gpu"] == "h100-sxm" and d["convention"] == "pytorch"
    assert f"phase {d['peak_phase']}" in out and f"(stage: {d['stage']})" in out
    # the defaults picked; seq_len is the model's pretraining length now (ModelSpec.default_seq_len: llama-2-7b's
    # train_seq_len 4096, as train-time, cost, plan and parallel use), no longer memory's own 2048
    assert d["train_setup"]["seq_len"] == 4096 and d["train_setup"]["grad_accum"] == 2
    assert max(d["phase_peaks"].values()) == pytest.approx(d["total_bytes"] - d["overhead_bytes"], abs=8)
