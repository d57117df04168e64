"""One vocabulary (issue 7 section 3): every flag of every subcommand is in docs/CONTRACTS.md's
vocabulary table or in that command's allowlist below, and the old spellings still parse.

The table is the source of truth: the flags are read from it, not copied here.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from gpukit.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent

# Flags that belong to one command only (a new shared concept goes into CONTRACTS.md instead).
ALLOWED = {
    "": {"--version"},
    "memory": {
        "--sp",
        "--offload",
        "--finetune",
        "--lora-rank",
        "--lora-targets",
        "--weights-dtype",
        "--inference",
        "--batch",
        "--max-micro-batch",
        "--max-seq-len",
        "--min-gpus",
        "--max-gpus",
        "--convention",
        "--optimizer-impl",
        "--grad-dtype",
        "--grad-accum-buffer",
        "--zero3-prefetch-layers",
    },
    "train-time": {"--mfu", "--efficiency"},
    "flops": {"--no-causal", "--include-embeddings"},
    "roofline": {"--m", "--n", "--k", "--batch"},  # --batch: identical matmuls (torch.bmm's batch)
    "comm": {"--algorithm"},
    "gpus": {"--sources"},
    "models": {"--sources"},
    "links": {"--sources"},
    "interconnects": {"--sources"},
    "validate memory": {"--tied", "--grid", "--arch", "--random", "--seed"},
    "bench matmul": {"--square-only", "--peak-tflops", "--harness-check"},
    "bench memory": {"--size-mib"},
    "bench collectives": {"--backend", "--no-bare-check", "--fit"},
    "bench article": {"--calls", "--skew-ms"},
    "bench ddp": {
        "--hook",
        "--powersgd-rank",
        "--powersgd-start-iter",
        "--bucket-mb",
        "--loader-latency-ms",
        "--loader-workers",
        "--loader-shared",
        "--scaling",
        "--netlab",
    },
    "parallel search": {"--ports-per-node", "--global-batch", "--top"},
    "parallel estimate": {"--ports-per-node", "--global-batch", "--sp"},
    "parallel bubble": {"--microbatches"},
    "serve": {
        "--kv-dtype",
        "--batch",
        "--input-tokens",
        "--output-tokens",
        "--rate",
        "--price-per-gpu-hour",
        "--hbm-share",
        "--flops-share",
        "--reserve",
        "--non-gpu-ms",
        "--simulate-requests",
    },
    "cost train": {
        "--mfu",
        "--price-per-gpu-hour",
        "--price-per-node-hour",
        "--prices",
        "--spot",
        "--preemptions-per-day",
        "--checkpoint-minutes",
        "--restart-minutes",
        "--spot-price-per-gpu-hour",
    },
    "cost buy-vs-rent": {
        "--purchase-usd",
        "--network-usd",
        "--rent-per-gpu-hour",
        "--prices",
        "--power-kw",
        "--pue",
        "--usd-per-kwh",
        "--years",
        "--utilization",
        "--ops-usd-per-year",
    },
    "cost published": {"--mfu"},
    "plan": {
        "--global-batch",  # sequences per optimizer step, as parallel search/estimate take it
        "--workload",
        "--rate",
        "--input-tokens",
        "--output-tokens",
        "--deadline-hours",
        "--budget-usd",
        "--prices",
        "--loader-tokens-per-s",
        "--mfu",
    },
    "scaling": {
        "--ports-per-node",
        "--efficiency",
        "--tokens-per-gpu",
        "--global-batch-tokens",
        "--grad-dtype",
        "--hook",
        "--powersgd-rank",
        "--bucket-mb",
        "--overlap",
        "--mfu",
    },
    "netlab up": {"--nodes", "--rate", "--delay-ms"},
    "netlab down": {"--lab", "--stale"},
    "netlab bench": {"--nodes", "--rate", "--delay-ms"},
}

# old spelling -> (command, argv with the old spelling, argv with the new one): both must parse alike.
ALIASES = [
    ("memory", ["--model", "gpt2", "--seq", "512"], ["--model", "gpt2", "--seq-len", "512"]),
    (
        "memory",
        ["--n-layers", "2", "--hidden", "64", "--n-heads", "4"],
        ["--layers", "2", "--hidden", "64", "--heads", "4"],
    ),
    (
        "validate memory",
        ["--seq", "64", "--n-layers", "1", "--n-heads", "2"],
        ["--seq-len", "64", "--layers", "1", "--heads", "2"],
    ),
    (
        "train-time",
        ["--model", "gpt2", "--tokens", "1B", "--gpu", "a100-80gb", "--gpus", "8", "--seq", "512"],
        ["--model", "gpt2", "--tokens", "1B", "--gpu", "a100-80gb", "--gpus", "8", "--seq-len", "512"],
    ),
    (
        "flops",
        ["--params", "1B", "--seq", "512", "--n-layers", "2", "--hidden", "64"],
        ["--params", "1B", "--seq-len", "512", "--layers", "2", "--hidden", "64"],
    ),
    (
        "roofline",
        ["--gpu", "h100-sxm", "--model", "gpt2", "--seq", "512"],
        ["--gpu", "h100-sxm", "--model", "gpt2", "--seq-len", "512"],
    ),
    (
        "comm",
        [
            "--op",
            "all_reduce",
            "--bytes",
            "1GB",
            "--ranks",
            "16",
            "--link",
            "nvlink4",
            "--ranks-per-node",
            "8",
            "--inter-link",
            "ib-ndr",
        ],
        [
            "--op",
            "all_reduce",
            "--bytes",
            "1GB",
            "--gpus",
            "16",
            "--link",
            "nvlink4",
            "--gpus-per-node",
            "8",
            "--inter-link",
            "ib-ndr",
        ],
    ),
    ("bench matmul", ["--sizes", "64,128"], ["--dims", "64,128"]),
    ("bench harness", ["--size", "64"], ["--dims", "64"]),
    ("bench ddp", ["--n-layers", "1", "--n-heads", "2"], ["--layers", "1", "--heads", "2"]),
]


def vocabulary() -> set[str]:
    """Every --flag written in the vocabulary table of docs/CONTRACTS.md."""
    text = (ROOT / "docs" / "CONTRACTS.md").read_text()
    section = text.split("## The vocabulary", 1)[1]
    table = [line for line in section.splitlines() if line.startswith("|")]
    assert len(table) > 10, "the vocabulary table of docs/CONTRACTS.md is missing"
    return set(re.findall(r"`(--[a-z][a-z0-9-]*)", "\n".join(table)))


def walk(parser: argparse.ArgumentParser, path=()):
    """(command path, action) for every option of every (sub)parser."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from walk(sub, (*path, name))
        elif action.option_strings:
            yield " ".join(path), action


def test_vocabulary_table_has_the_core_names():
    v = vocabulary()
    for flag in (
        "--seq-len",
        "--seq",
        "--layers",
        "--heads",
        "--hidden",
        "--micro-batch",
        "--grad-accum",
        "--zero",
        "--gpus",
        "--gpus-per-node",
        "--ranks",
        "--sizes",
        "--dims",
        "--params",
        "--tokens",
        "--json",
    ):
        assert flag in v, flag


def test_every_flag_is_in_the_vocabulary_or_allowed():
    v = vocabulary() | {"-h", "--help"}
    stray = []
    for cmd, action in walk(build_parser()):
        for flag in action.option_strings:
            if flag not in v and flag not in ALLOWED.get(cmd, set()):
                stray.append(f"{cmd or 'gpukit'}: {flag}")
    assert not stray, (
        "flags outside docs/CONTRACTS.md's vocabulary (add them there or to ALLOWED): " + ", ".join(stray)
    )


def test_allowlist_has_no_dead_entries():
    """An allowlisted flag that no longer exists would hide a future drift: keep the list exact."""
    present: dict[str, set[str]] = {}
    for cmd, action in walk(build_parser()):
        present.setdefault(cmd, set()).update(action.option_strings)
    for cmd, flags in ALLOWED.items():
        assert flags <= present.get(cmd, set()), (cmd, flags - present.get(cmd, set()))


def test_old_spellings_only_as_aliases():
    """An old spelling never stands alone: it is an alias of the canonical flag (same action)."""
    canonical = {
        "--seq": "--seq-len",
        "--n-layers": "--layers",
        "--n-heads": "--heads",
        "--ranks-per-node": "--gpus-per-node",
    }
    for cmd, action in walk(build_parser()):
        flags = set(action.option_strings)
        for old, new in canonical.items():
            assert old not in flags or new in flags, f"{cmd}: {old} without {new}"
        if cmd == "comm":
            assert "--ranks" not in flags or "--gpus" in flags, "comm: --ranks is the old spelling of --gpus"


def _parse(cmd: str, argv: list[str]) -> dict:
    ns = build_parser().parse_args([*cmd.split(), *argv])
    return {k: v for k, v in vars(ns).items() if k != "func"}


@pytest.mark.parametrize(
    "cmd,old,new", ALIASES, ids=[f"{c}:{o[-2] if len(o) > 1 else o[0]}" for c, o, _ in ALIASES]
)
def test_old_spellings_still_parse(cmd, old, new):
    assert _parse(cmd, old) == _parse(cmd, new)


def test_comm_old_and_new_spellings_give_the_same_answer(capsys):
    import json

    from gpukit.cli import main

    base = [
        "comm",
        "--op",
        "all_reduce",
        "--bytes",
        "1GB",
        "--link",
        "nvlink4",
        "--inter-link",
        "ib-ndr",
        "--json",
    ]
    assert main([*base, "--ranks", "16", "--ranks-per-node", "8"]) == 0
    old = json.loads(capsys.readouterr().out)
    assert main([*base, "--gpus", "16", "--gpus-per-node", "8"]) == 0
    assert json.loads(capsys.readouterr().out) == old


def test_api_matrix_dimensions_are_dims_with_the_old_name_kept():
    from gpukit.bench.matmul import harness_check, matmul_bench

    kw = dict(llm_shapes=False, repeats=3, min_repeat_s=0.001)
    assert (
        [r["m"] for r in matmul_bench("cpu", "fp32", dims=(16,), **kw).rows]
        == [r["m"] for r in matmul_bench("cpu", "fp32", sizes=(16,), **kw).rows]
        == [16]
    )
    with pytest.raises(ValueError, match="not both"):
        matmul_bench("cpu", "fp32", dims=(16,), sizes=(32,), **kw)
    assert harness_check("cpu", "fp32", size=16, min_run_time_s=0.01, rounds=1)["size"] == 16
