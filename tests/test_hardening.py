"""Hardened inputs (issue 25, section 3): every bad value is one line naming the flag and exit 2, or a
correct answer; an empty or zero value is never silently replaced by a default; the API raises only
ValueError. Each case here once gave a traceback, a silent default or a line that did not name the flag."""

from __future__ import annotations

import pytest

from gpukit import errors, inference, memory, plan
from gpukit.catalog import get_model
from gpukit.cli import main

GPT2 = ("--model", "gpt2")
TRAIN = ("plan", "--workload", "pretrain", *GPT2, "--tokens", "1e9")


def run(capsys, *argv):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "Traceback" not in out
    return rc, out, err


def one_line_error(capsys, *argv) -> str:
    rc, out, err = run(capsys, *argv)
    assert rc == 2, (argv, out, err)
    assert err.endswith("\n") and err.count("\n") == 1, err
    return err


# ------------------------------------------------------------ empty values are errors, not defaults
@pytest.mark.parametrize(
    "argv,needle",
    [
        ((*TRAIN, "--profile", ""), "profile path is empty"),
        ((*TRAIN, "--prices", ""), "price file path is empty"),
        ((*TRAIN, "--gpu", ""), "--gpu"),
        (("scaling", *GPT2, "--tokens-per-gpu", "1000", "--profile", ""), "profile path is empty"),
        (("scaling", *GPT2, "--tokens-per-gpu", "1000", "--grad-dtype", ""), "grad_dtype"),
        (("scaling", "--params", "", "--tokens-per-gpu", "1000"), "params"),
        (("scaling", *GPT2, "--tokens-per-gpu", ""), "tokens-per-gpu"),
        (("scaling", *GPT2, "--global-batch-tokens", ""), "global-batch-tokens"),
        (
            ("parallel", "search", *GPT2, "--gpu", "h100-sxm", "--gpus", "8", "--gpus-per-node", "8")
            + ("--profile", ""),
            "profile path is empty",
        ),
        (
            ("cost", "train", *GPT2, "--tokens", "1e9", "--gpu", "h100-sxm", "--gpus", "8", "--profile", ""),
            "profile path is empty",
        ),
        (
            ("cost", "train", *GPT2, "--tokens", "1e9", "--gpu", "h100-sxm", "--gpus", "8", "--prices", ""),
            "price file path is empty",
        ),
        (
            ("cost", "buy-vs-rent", "--gpu", "h100-sxm", "--gpus", "8", "--purchase-usd", "1e5")
            + ("--prices", ""),
            "price file path is empty",
        ),
        (("roofline", "--gpu", "h100-sxm", "--dims", "64,64,64", "--dtype", ""), "dtype"),
        (
            ("train-time", *GPT2, "--gpu", "h100-sxm", "--tokens", "1e9", "--gpus", "8", "--dtype", ""),
            "dtype",
        ),
        (("roofline", "--model", "", "--gpu", "h100-sxm", "--seq-len", "128"), "--model"),
    ],
)
def test_empty_value_is_an_error(capsys, argv, needle):
    assert needle in one_line_error(capsys, *argv)


def test_zero_gpus_per_node_is_an_error_not_a_traceback(capsys):
    assert "--gpus-per-node" in one_line_error(capsys, *TRAIN, "--gpus-per-node", "0")
    with pytest.raises(ValueError, match="gpus_per_node"):
        plan.plan("pretrain", get_model("gpt2"), tokens=1e9, gpus_per_node=0)


def test_plan_custom_shape_zeros_are_errors(capsys):
    shape = ("plan", "--workload", "pretrain", "--layers", "2", "--hidden", "64", "--tokens", "1e9")
    assert "--heads" in one_line_error(capsys, *shape, "--heads", "0")
    assert "--vocab" in one_line_error(capsys, *shape, "--heads", "4", "--vocab", "0")


def test_unknown_inter_link_is_named_even_when_no_count_leaves_a_node(capsys):
    err = one_line_error(capsys, *TRAIN, "--gpus", "1,2", "--inter-link", "ibndr")
    assert "--inter-link" in err and "ib-ndr" in err
    with pytest.raises(ValueError, match="inter_link"):
        plan.plan("pretrain", get_model("gpt2"), tokens=1e9, counts=(1, 2), inter_link="ibndr")
    with pytest.raises(ValueError, match="micro_batch"):
        plan.plan("pretrain", get_model("gpt2"), tokens=1e9, micro_batch=0)


# ------------------------------------------------------------ messages name the flag
@pytest.mark.parametrize(
    "argv,flag",
    [
        (("serve", *GPT2, "--gpu", "h100-sxm", "--gpus", "16", "--link", "nvlnk4"), "--link:"),
        (("serve", *GPT2, "--gpu", "h100-sxm", "--gpus", "16", "--inter-link", "ibndr"), "--inter-link:"),
        (
            ("comm", "--op", "all_reduce", "--bytes", "1e9", "--ranks", "16", "--link", "nvlink4")
            + ("--ranks-per-node", "8", "--inter-link", "ibndr"),
            "--inter-link:",
        ),
        (("comm", "--op", "all_reduce", "--bytes", "1e9", "--ranks", "8", "--link", "nvlnk4"), "--link:"),
        (("cost", "train", "--model", "", "--tokens", "1e9", "--gpu", "h100-sxm", "--gpus", "8"), "--model"),
        (("serve", "--model", "gpt2x", "--gpu", "h100-sxm"), "--model"),
        (("serve", *GPT2, "--gpu", "h100-sxm", "--rate", "1", "--gpus", str(10**20)), "gpus"),
        (("serve", *GPT2, "--gpu", "h100-sxm", "--input-tokens", str(10**20)), "input_tokens"),
        (("memory", *GPT2, "--micro-batch", str(10**20)), "--micro-batch"),
        (("memory", *GPT2, "--dp", str(10**20)), "--dp"),
    ],
)
def test_message_names_the_flag(capsys, argv, flag):
    assert flag in one_line_error(capsys, *argv)


def test_serve_zero_price_is_a_zero_cost(capsys):
    rc, out, _ = run(capsys, "serve", *GPT2, "--gpu", "h100-sxm", "--price-per-gpu-hour", "0")
    assert rc == 0 and "cost: $0 per million" in out


def test_train_setup_counts_are_bounded():
    for field in ("dp", "micro_batch", "grad_accum", "tp", "pp"):
        with pytest.raises(ValueError, match=f"^{field} must be at most"):
            memory.TrainSetup(**{field: errors.MAX_COUNT + 1})
    assert memory.TrainSetup(dp=errors.MAX_COUNT).dp == errors.MAX_COUNT


def test_serve_api_names_the_field():
    with pytest.raises(ValueError, match="^gpus must be <= tp x n_layers"):
        inference.serve(get_model("gpt2"), "h100-sxm", gpus=10**6)
    with pytest.raises(ValueError, match="^input_tokens \\+ output_tokens"):
        inference.serve(get_model("gpt2"), "h100-sxm", input_tokens=5000)
    with pytest.raises(ValueError, match="^context must be <="):
        inference.serve(get_model("gpt2"), "h100-sxm", context=5000)


def test_named_field_prefixes_once():
    def bad(x):
        raise ValueError(f"unknown link {x!r}")

    with pytest.raises(ValueError, match="^--link: unknown link 'x'$"):
        errors.named_field("--link", bad, "x")
    with pytest.raises(ValueError, match="^--link: unknown link 'x'$"):
        errors.named_field("--link", errors.named_field, "--link", bad, "x")


# ------------------------------------------------------------ timeouts kept from outside the work
def test_watchdog_times_out_without_raising_into_the_work():
    import threading
    import time

    from gpukit.bench.timing import abandoned_work, run_with_watchdog

    seen = []
    release = threading.Event()

    def work():  # an alarm raised into the main thread would interrupt this; the watchdog never does
        try:
            release.wait(10)
            seen.append("finished")
        except BaseException as e:  # pragma: no cover - the failure this test guards against
            seen.append(type(e).__name__)
            raise

    t0 = time.monotonic()
    with pytest.raises(TimeoutError, match=r"^validate memory timed out after 0\.2 s \(raise --timeout\)$"):
        run_with_watchdog(work, 0.2, "validate memory")
    assert time.monotonic() - t0 < 5 and abandoned_work()
    release.set()
    for _ in range(100):
        if not abandoned_work():
            break
        time.sleep(0.05)
    assert seen == ["finished"] and not abandoned_work()
    assert run_with_watchdog(lambda: 42, 5.0) == 42 and run_with_watchdog(lambda: 7, None) == 7
    with pytest.raises(KeyError, match="boom"):  # the work's own error, as it raised it
        run_with_watchdog(lambda: {}["boom"], 5.0)


def test_validate_timeout_is_one_line_exit_2(capsys, monkeypatch):
    import time

    from gpukit.cli import validate

    monkeypatch.setattr(validate, "_measure", lambda args: time.sleep(3))
    err = one_line_error(capsys, "validate", "memory", "--device", "cpu", "--timeout", "0.1")
    assert err == "error: validate memory timed out after 0.1 s (raise --timeout)\n"


@pytest.mark.slow
@pytest.mark.parametrize("timeout_s", ["0.01", "0.2", "0.6", "1.5"])
def test_validate_short_timeouts_never_traceback(timeout_s):
    """Real processes: the timeout lands anywhere (import torch, numpy, the model build, a step): always
    one line and exit 2 (or a finished run, exit 0), never a traceback or an abort (issue 25)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": str(root), "TQDM_DISABLE": "1"}
    p = subprocess.run(
        [sys.executable, "-m", "gpukit", "validate", "memory", "--device", "cpu", "--timeout", timeout_s],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        cwd=root,
    )
    assert p.returncode in (0, 2), (p.returncode, p.stderr[-2000:])
    assert "Traceback" not in p.stderr and "terminate called" not in p.stderr, p.stderr[-2000:]
    if p.returncode == 2:
        assert p.stderr.count("\n") == 1 and "timed out" in p.stderr, p.stderr
