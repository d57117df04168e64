"""The memory policy lives in gpukit.memory.resolve_setup (issue 22 section 2): the CLI, the widget and a
notebook calling the API get the same setup and the same notes; the model flags build the same block under
every subcommand."""

from __future__ import annotations

import json

import pytest

from gpukit import memory as mem
from gpukit.catalog import get_gpu, get_model
from gpukit.cli import main


def _json(capsys, *argv):
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_defaults_are_picked_and_said():
    r = mem.resolve_setup("llama-3-8b", gpu="t4", pp=4)
    s = r.setup
    assert s.seq_len == get_model("llama-3-8b").train_seq_len == 8192  # the pretraining length, not 2048
    assert s.grad_accum == 4 and s.precision == "fp16-mixed"  # 1F1B with pp in flight; no bf16 on a T4
    joined = " | ".join(r.notes)
    assert "seq_len not given: 8192 tokens" in joined and "grad_accum not given with pp 4" in joined
    assert "precision not given: fp16-mixed" in joined and "trains without dropout" in joined
    given = mem.resolve_setup(
        "llama-3-8b", gpu="h100-sxm", seq_len=1024, grad_accum=1, precision="bf16-mixed", dropout=False
    )
    assert given.notes == () and given.setup.seq_len == 1024 and given.setup.grad_accum == 1


def test_names_spell_the_inputs_as_the_caller_does():
    flags = {"seq_len": "--seq-len", "micro_batch": "--micro-batch", "inference": "--inference"}
    r = mem.resolve_setup("gpt2", names=flags)
    assert r.notes[0].startswith("--seq-len not given: 1024 tokens")
    with pytest.raises(ValueError, match="^--micro-batch applies to training, not --inference"):
        mem.resolve_setup("gpt2", names=flags, inference=True, micro_batch=4)
    with pytest.raises(ValueError, match="^batch applies to inference"):
        mem.resolve_setup("gpt2", batch=4)
    with pytest.raises(ValueError, match="not a TrainSetup field"):
        mem.resolve_setup("gpt2", seq=4)


def test_memory_plans_at_the_pretraining_length_as_the_other_commands(capsys):
    """`gpukit memory --model llama-3-8b` planned at 2048 tokens while train-time, cost, plan and parallel
    used its pretraining length 8192; now all use ModelSpec.default_seq_len, and the text says so."""
    assert main(["memory", "--model", "llama-3-8b"]) == 0
    out = capsys.readouterr().out
    assert "seq 8192 x micro-batch 1" in out
    assert "note: --seq-len not given: 8192 tokens" in out and "train-time, cost, plan and parallel" in out
    d = _json(
        capsys, "train-time", "--model", "llama-3-8b", "--tokens", "1B", "--gpu", "h100-sxm", "--gpus", "8"
    )
    assert d["seq_len"] == 8192


def test_a_bare_count_says_it_is_a_lower_bound():
    r = mem.resolve_setup(None, n_params=7 * 10**9, zero_stage=3, dp=8)
    assert any("nor ZeRO-3's gathered layer" in n for n in r.notes)


def test_cli_and_widget_print_the_policys_notes(capsys):
    from gpukit.cli.memory import FLAG_OF
    from gpukit.widgets import memory_view as mv

    d = _json(capsys, "memory", "--model", "llama-2-7b", "--gpu", "v100-32gb", "--pp", "2")
    r = mem.resolve_setup("llama-2-7b", gpu="v100-32gb", pp=2, names=FLAG_OF)
    assert d["notes"] == list(r.notes) and d["train_setup"]["seq_len"] == 4096
    bd = mem.estimate_memory("llama-2-7b", setup=r.setup, gpu=get_gpu("v100-32gb"))
    assert d["total_bytes"] == bd.total_bytes
    shown = mv.memory_shown(model="llama-2-7b", gpu="v100-32gb", precision=None, seq_len=None, pp=2)
    assert shown.total_bytes == bd.total_bytes and len(shown.notes) == len(r.notes)
    assert any(n.startswith("grad_accum not given with pp 2") for n in shown.notes)  # the widget's spelling


CUSTOM = ["--layers", "4", "--hidden", "512", "--heads", "8"]


@pytest.mark.parametrize(
    "block",
    [
        [],
        ["--mlp", "swiglu"],
        ["--mlp", "swiglu", "--norm", "rmsnorm", "--position", "rope"],
        ["--norm", "rmsnorm"],
        ["--kv-heads", "2", "--vocab", "32000"],
    ],
)
def test_the_same_flags_build_the_same_block_under_every_subcommand(block):
    """memory, parallel and plan once built GPT, GPT and Llama blocks from the same flags; serve, train-time
    and cost train took no custom shape at all."""
    from gpukit.cli import build_parser
    from gpukit.cli import parallel as cli_parallel
    from gpukit.cli import plan as cli_plan
    from gpukit.cli.model_args import model_from_args

    parser = build_parser()
    argvs = {
        "memory": ["memory", *CUSTOM, *block],
        "parallel search": [
            "parallel",
            "search",
            *CUSTOM,
            *block,
            "--gpu",
            "a100-80gb",
            "--gpus",
            "8",
            "--gpus-per-node",
            "8",
        ],
        "parallel estimate": [
            "parallel",
            "estimate",
            *CUSTOM,
            *block,
            "--gpu",
            "a100-80gb",
            "--gpus-per-node",
            "8",
            "--dp",
            "8",
            "--tp",
            "1",
            "--pp",
            "1",
            "--micro-batch",
            "1",
            "--global-batch",
            "8",
        ],
        "plan": ["plan", "--workload", "pretrain", *CUSTOM, *block, "--tokens", "1B"],
        # these read the flags with the shared builder itself (gpukit.cli.model_args.model_from_args)
        "serve": ["serve", *CUSTOM, *block, "--gpu", "h100-sxm"],
        "train-time": ["train-time", *CUSTOM, *block, "--tokens", "1B", "--gpu", "h100-sxm", "--gpus", "8"],
        "cost train": [
            "cost",
            "train",
            *CUSTOM,
            *block,
            "--tokens",
            "1B",
            "--gpu",
            "h100-sxm",
            "--gpus",
            "8",
        ],
    }
    specs = {}
    for name, argv in argvs.items():
        args = parser.parse_args(argv)
        specs[name] = (
            cli_plan.as_model_spec(args)
            if name == "plan"
            else cli_parallel.as_model_spec(args)
            if name.startswith("parallel")
            else model_from_args(args).model
        )
    first = specs["memory"]
    assert all(s == first for s in specs.values()), specs
    llama = "--mlp" in block
    assert (first.mlp, first.norm == "rmsnorm" or "--norm" in block, first.bias, first.dropout) == (
        "swiglu" if llama else "gelu",
        llama or "--norm" in block,
        not llama,
        not llama,
    )
    assert first.position == ("rope" if llama else "learned")


def test_custom_shape_memory_numbers_agree_with_parallel(capsys):
    """The layout's memory of a custom shape under `parallel estimate` is the one `memory` gives with the
    same setup (the layout's convention, pytorch for data parallelism alone: memory's default): same block,
    same dropout recipe."""
    block = ["--layers", "4", "--hidden", "512", "--heads", "8", "--mlp", "swiglu"]
    p = _json(
        capsys,
        "parallel",
        "estimate",
        *block,
        "--gpu",
        "a100-80gb",
        "--gpus-per-node",
        "8",
        "--dp",
        "1",
        "--tp",
        "1",
        "--pp",
        "1",
        "--micro-batch",
        "1",
        "--global-batch",
        "1",
        "--seq-len",
        "1024",
    )
    m = _json(capsys, "memory", *block, "--seq-len", "1024", "--gpu", "a100-80gb")
    assert p["memory_per_gpu_bytes"] == m["total_bytes"] and m["activations_bytes"] > 0
