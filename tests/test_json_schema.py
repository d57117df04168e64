"""The JSON contract of the command line (issue 25, section 2; docs/CONTRACTS.md, "JSON output").

Every subcommand has a schema, docs/schemas/<subcommand words joined by ->.json (JSON Schema draft
2020-12). Each subcommand below runs with several option sets: every run validates against its schema,
the option sets give the same keys (stable keys: what does not apply is null, never missing), and every
byte count (a key `bytes` or ending in `_bytes`) is an int. The subcommands are enumerated from the parser
(gpukit.cli.build_parser), so a new subcommand without a schema, or without a run here (or a stated
reason in NOT_RUN), fails.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
from helpers import run_cli

jsonschema = pytest.importorskip("jsonschema")

SCHEMAS = Path(__file__).resolve().parent.parent / "docs" / "schemas"

# subcommand -> option sets (each run with --json). Different options must give the same key set.
CASES = {
    "memory": [
        ["--model", "gpt2"],
        ["--params", "7B", "--zero", "3", "--dp", "8"],
        ["--model", "llama-2-7b", "--inference"],
        ["--model", "gpt2", "--gpu", "a100-80gb", "--pp", "2", "--max-micro-batch", "--min-gpus"],
        ["--model", "gpt2", "--convention", "megatron", "--gpu", "h100-sxm", "--max-seq-len"],
        ["--model", "llama-2-7b", "--finetune", "qlora", "--weights-dtype", "nf4", "--no-dropout"],
        ["--model", "gpt2", "--dropout", "--grad-dtype", "fp32", "--convention", "megatron", "--dp", "2"],
    ],
    "flops": [
        ["--model", "gpt2", "--seq-len", "1024"],
        ["--params", "7B", "--seq-len", "2048"],
        ["--model", "llama-2-7b", "--mode", "decode", "--context", "2048", "--seq-len", "1"],
        ["--model", "gpt2", "--include-embeddings", "--seq-len", "1024", "--recompute", "full"],
        ["--model", "llama-2-7b", "--seq-len", "8192"],
    ],
    "roofline": [
        ["--gpu", "a100-80gb", "--dims", "4096,4096,4096"],
        [
            "--gpu",
            "h100-sxm",
            "--model",
            "llama-2-7b",
            "--mode",
            "decode",
            "--context",
            "1024",
            "--seq-len",
            "1",
        ],
        ["--gpu", "a100-80gb", "--model", "gpt2", "--seq-len", "1024", "--micro-batch", "4"],
        ["--gpu", "h100-sxm", "--model", "llama-2-7b", "--seq-len", "8192"],
    ],
    "train-time": [
        ["--model", "gpt2", "--tokens", "1B", "--gpu", "a100-80gb", "--gpus", "8"],
        ["--params", "7B", "--tokens", "1T", "--gpu", "h100-sxm", "--gpus", "64", "--mfu", "0.5"],
        [
            "--model",
            "mistral-7b",
            "--tokens",
            "1T",
            "--gpu",
            "h100-sxm",
            "--gpus",
            "64",
            "--recompute",
            "full",
        ],
    ],
    "comm": [
        ["--op", "all_reduce", "--bytes", "1GB", "--gpus", "8", "--link", "nvlink4"],
        [
            "--op",
            "all_reduce",
            "--bytes",
            "1MB",
            "--gpus",
            "16",
            "--gpus-per-node",
            "8",
            "--link",
            "nvlink4",
            "--inter-link",
            "ib-hdr",
        ],
        ["--op", "all_reduce", "--bytes", "1MB", "--gpus", "1", "--link", "nvlink4"],
        ["--op", "send_recv", "--bytes", "1MB", "--gpus", "2", "--link", "pcie4"],
    ],
    "scaling": [
        ["--model", "gpt2", "--gpu", "a100-80gb", "--gpus", "1,2,8", "--tokens-per-gpu", "8192"],
        [
            "--params",
            "7B",
            "--gpu",
            "h100-sxm",
            "--gpus",
            "8,16",
            "--gpus-per-node",
            "8",
            "--hook",
            "powersgd",
            "--global-batch-tokens",
            "1M",
        ],
        [
            "--model",
            "gpt2",
            "--gpu",
            "a100-80gb",
            "--gpus",
            "8",
            "--overlap",
            "off",
            "--tokens-per-gpu",
            "4096",
        ],
    ],
    "parallel estimate": [
        [
            *("--model", "gpt2", "--gpu", "a100-80gb", "--gpus-per-node", "8"),
            *("--dp", "8", "--tp", "1", "--pp", "1", "--global-batch", "64", "--micro-batch", "2"),
        ],
        [
            *(
                "--model",
                "llama-2-70b",
                "--gpu",
                "h100-sxm",
                "--gpus-per-node",
                "8",
                "--dp",
                "2",
                "--tp",
                "8",
            ),
            *("--pp", "4", "--virtual-stages", "2", "--global-batch", "512", "--sp", "--recompute", "full"),
            *("--micro-batch", "1"),
        ],
    ],
    "parallel search": [
        [
            "--model",
            "gpt2",
            "--gpu",
            "a100-80gb",
            "--gpus",
            "8",
            "--gpus-per-node",
            "8",
            "--global-batch",
            "64",
        ],
        [
            *("--model", "llama-2-13b", "--gpu", "h100-sxm", "--gpus", "32", "--gpus-per-node", "8"),
            *("--global-batch", "256", "--top", "3"),
        ],
    ],
    "parallel bubble": [
        ["--pp", "8", "--microbatches", "32"],
        ["--pp", "8", "--microbatches", "32", "--virtual-stages", "4"],
    ],
    "serve": [
        ["--model", "llama-2-7b", "--gpu", "a100-80gb"],
        ["--model", "llama-2-7b", "--gpu", "a100-80gb", "--rate", "5"],
        [
            "--model",
            "mistral-7b",
            "--gpu",
            "l4",
            "--precision",
            "int4",
            "--kv-dtype",
            "fp8",
            "--context",
            "8192",
        ],
        [
            *("--model", "llama-2-70b", "--gpu", "h100-sxm", "--gpus", "8", "--batch", "16"),
            *("--rate", "2", "--price-per-gpu-hour", "3"),
        ],
    ],
    "cost train": [
        ["--model", "gpt2", "--tokens", "10B", "--gpu", "a100-80gb", "--gpus", "8"],
        ["--model", "llama-2-7b", "--tokens", "1T", "--gpu", "a100-80gb,h100-sxm", "--gpus", "8,64"],
        [
            *("--model", "gpt2", "--tokens", "10B", "--gpu", "a100-80gb", "--gpus", "8", "--spot"),
            *("--preemptions-per-day", "2", "--checkpoint-minutes", "5"),
        ],
    ],
    "cost buy-vs-rent": [
        ["--gpu", "h100-sxm", "--gpus", "8", "--purchase-usd", "300000"],
        [
            *("--gpu", "a100-80gb", "--gpus", "64", "--rent-per-gpu-hour", "2", "--utilization", "0.5"),
            *("--purchase-usd", "2M", "--years", "4"),
        ],
    ],
    "cost published": [[], ["--mfu", "0.5"]],
    "plan": [
        ["--workload", "pretrain", "--model", "gpt2", "--tokens", "10B"],
        ["--workload", "serve", "--model", "llama-2-7b", "--rate", "5"],
        ["--workload", "lora", "--model", "llama-2-7b", "--tokens", "100M", "--deadline-hours", "10"],
    ],
    "gpus": [[], ["h100-sxm"]],
    "models": [
        [],
        ["gpt2", "mistral-7b"],
        [
            "--hf-config",
            str(Path(__file__).resolve().parent / "fixtures" / "hf_configs" / "gpt-oss-20b.json"),
        ],
    ],
    "links": [[], ["nvlink4"]],
    "netlab status": [[]],
}

# torch runs, each well under 30 s on a CPU: tiny configurations (a --grid of `validate memory` takes
# minutes: its keys are in the schema by hand, null here)
TINY = (
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
    "--micro-batch",
    "1",
)
TORCH_CASES = {
    "validate memory": [[*TINY], ["--arch", "llama", "--attention", "sdpa", *TINY]],
    "bench matmul": [
        ["--device", "cpu", "--dims", "64", "--square-only", "--repeats", "2", "--dtype", "fp32"]
    ],
}

# subcommands with a schema that this file does not run, and why
NOT_RUN = {
    "bench memory": "a bandwidth sweep (minutes on a CPU)",
    "bench collectives": "spawns ranks",
    "bench harness": "the timing harness's own check (minutes)",
    "bench article": "the articles' benchmarks (minutes)",
    "bench ddp": "spawns DDP ranks",
    "bench all": "every benchmark",
    "calibrate": "measures this machine and writes a profile",
    "netlab up": "needs root (network namespaces)",
    "netlab down": "needs root (network namespaces)",
    "netlab bench": "needs root (network namespaces)",
}


def subcommands() -> list[str]:
    """Every leaf subcommand of `gpukit` (words joined by a space), from the parser."""
    from gpukit.cli import build_parser

    def leaves(p, path):
        subs = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs:
            yield " ".join(path)
            return
        for a in subs:
            seen = set()
            for name, sp in a.choices.items():
                if id(sp) not in seen:  # aliases point at the same parser
                    seen.add(id(sp))
                    yield from leaves(sp, (*path, name))

    return list(leaves(build_parser(), ()))


def schema_path(cmd: str) -> Path:
    return SCHEMAS / f"{cmd.replace(' ', '-')}.json"


def load_schema(cmd: str) -> dict:
    schema = json.loads(schema_path(cmd).read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return schema


def bytes_not_int(v, key=None, where="$") -> list[str]:
    """Paths of byte counts (a key `bytes` or `*_bytes`, or a number in a map under such a key) that
    are not ints (null allowed: a value without a finite meaning)."""
    from gpukit.results import is_bytes_key

    bad = []
    if isinstance(v, dict):
        for k, x in v.items():
            bad += bytes_not_int(x, key if is_bytes_key(key) and not is_bytes_key(k) else k, f"{where}.{k}")
    elif isinstance(v, list):
        for i, x in enumerate(v):
            bad += bytes_not_int(x, key, f"{where}[{i}]")
    elif is_bytes_key(key) and not (v is None or (isinstance(v, int) and not isinstance(v, bool))):
        bad.append(f"{where}={v!r}")
    return bad


def object_keys(payload, schema) -> dict[str, frozenset]:
    """{path of an object whose keys the schema fixes (`required`): its key set}, list items as [],
    leaving out the maps (terms, phases: keys named by the formula) and null objects."""
    out: dict[str, set] = {}

    def walk(v, s, where):
        if isinstance(v, dict) and s.get("required"):
            out.setdefault(where, set()).update(v)
            for k, x in v.items():
                walk(x, s.get("properties", {}).get(k, {}), f"{where}.{k}")
        elif isinstance(v, list):
            for x in v:
                walk(x, s.get("items", {}), where + "[]")

    walk(payload, schema, "$")
    return {k: frozenset(v) for k, v in out.items()}


def test_every_subcommand_has_a_schema_and_a_run_or_a_reason():
    cmds = subcommands()
    missing = [c for c in cmds if not schema_path(c).exists()]
    assert not missing, f"subcommands without docs/schemas/<name>.json: {missing}"
    untested = [c for c in cmds if c not in CASES and c not in TORCH_CASES and c not in NOT_RUN]
    assert not untested, f"subcommands neither run by tests/test_json_schema.py nor in NOT_RUN: {untested}"
    stale = sorted({p.stem for p in SCHEMAS.glob("*.json")} - {c.replace(" ", "-") for c in cmds})
    assert not stale, f"schemas of no subcommand: {stale}"
    for c in cmds:
        load_schema(c)  # a valid draft 2020-12 schema


def check_runs(capsys, cmd, option_sets):
    schema = load_schema(cmd)
    validator = jsonschema.Draft202012Validator(schema)
    seen = []
    for argv in option_sets:
        rc, out, err = run_cli(capsys, *cmd.split(), *argv, "--json")
        assert rc == 0, (cmd, argv, err)
        payload = json.loads(out)
        errors = [
            f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(payload)
        ]
        assert not errors, (cmd, argv, errors[:5])
        assert not bytes_not_int(payload), (cmd, argv, bytes_not_int(payload)[:5])
        seen.append((argv, object_keys(payload, schema)))
    # the same keys whatever the options: every object found in two runs has the same keys in both
    for i, (argv_a, a) in enumerate(seen):
        for argv_b, b in seen[i + 1 :]:
            for where in a.keys() & b.keys():
                assert a[where] == b[where], (cmd, where, argv_a, argv_b, sorted(a[where] ^ b[where]))


@pytest.mark.parametrize("cmd", sorted(CASES))
def test_json_is_stable_and_matches_its_schema(cmd, capsys):
    check_runs(capsys, cmd, CASES[cmd])


@pytest.mark.parametrize("cmd", sorted(TORCH_CASES))
def test_torch_commands_json_matches_its_schema(cmd, capsys):
    pytest.importorskip("torch")
    check_runs(capsys, cmd, TORCH_CASES[cmd])


def test_bytes_check_and_stable_keys_can_fail():
    """The checks above catch what they are for: a float byte count, a missing key."""
    from gpukit.results import stable_keys, whole_bytes

    assert bytes_not_int({"a": {"total_bytes": 1.5}}) == ["$.a.total_bytes=1.5"]
    assert bytes_not_int({"comm_per_gpu_bytes": {"tp": 2.0}}) == ["$.comm_per_gpu_bytes.tp=2.0"]
    assert bytes_not_int(whole_bytes({"comm_per_gpu_bytes": {"tp": 2.4}, "x_bytes": [1.6, None]})) == []
    assert whole_bytes({"bytes": 2.5e9, "time_s": 1.5, "n_bytes": float("inf")}) == {
        "bytes": 2500000000,
        "time_s": 1.5,
        "n_bytes": None,
    }
    assert stable_keys({"a": 1}, ("a", "b")) == {"a": 1, "b": None}
    with pytest.raises(ValueError, match="not in the subcommand's key list"):
        stable_keys({"a": 1, "c": 2}, ("a", "b"))
    schema = load_schema("memory")
    v = jsonschema.Draft202012Validator(schema)
    rc_payload = {k: None for k in schema["required"]}
    del rc_payload["total_bytes"]
    assert any("total_bytes" in e.message for e in v.iter_errors(rc_payload))
