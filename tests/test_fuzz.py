"""Fuzzing (hypothesis) of every CLI subcommand and public calculator: any input gives a result or a
one-line error, never a traceback, NaN, negative bytes or a hang.

CLI (gpukit.cli.main in-process, capsys): exit 0 or 2; exit 2 = exactly one stderr line, no
traceback; exit 0 with --json = strict JSON (no NaN/Infinity) whose *_bytes values are non-negative
ints. API: a result whose numbers are finite (bytes: non-negative ints) or a ValueError.
Every example runs under a SIGALRM guard, so a hang fails instead of blocking the suite.
Commands that would start real work are fuzzed up to that point: matmul/memory timers return a fixed
time, the rank launcher, the reference-model builder and netlab's namespace calls raise _Reached
("the input was accepted"). Sizes that reach an allocation are kept tiny. A few subprocess runs of
`python -m gpukit` check the real entry point.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from gpukit import catalog, comm, compute, memory, units
from gpukit import memory as memory_eager
from gpukit.cli import main
from gpukit.specs import ModelSpec

ROOT = Path(__file__).resolve().parent.parent
HANG_S = 20  # per example; the slowest valid example (bench all on 2 busy cores) takes about 1 s


QUICK = os.environ.get("GPUKIT_TEST_QUICK") == "1"  # `make test-quick`: a tenth of the examples


def fuzz(n: int) -> settings:
    """n examples (a tenth, at least 3, under `make test-quick`), no per-example deadline (the SIGALRM
    guard is the hang check), reproducible."""
    return settings(
        max_examples=max(3, n // 10) if QUICK else n,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        derandomize=True,
        database=None,
    )


HUGE = 10**400  # beyond float range
GPUS, MODELS, LINKS = sorted(catalog.gpus()), sorted(catalog.models()), sorted(catalog.interconnects())


class _Reached(Exception):
    """Raised by the stubs: the input was valid and the command got to where real work starts."""


class _Hang(Exception):
    pass


@contextlib.contextmanager
def no_hang(seconds: float = HANG_S):
    """Fail (raise _Hang) instead of blocking when the body runs longer than `seconds`."""

    def on_alarm(signum, frame):
        raise _Hang(f"example ran over {seconds} s")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


# ---------------------------------------------------------------- files the fuzzer points flags at
_TMP = Path(tempfile.mkdtemp(prefix="gpukit-fuzz-"))
atexit.register(shutil.rmtree, _TMP, True)
_GOOD_PROFILE = {
    "version": 1,
    "device": {"name": "fuzz"},
    "matmul_tflops": {"bf16": 1.0, "fp32": 0.5},
    "memory_bandwidth_gbps": {"triad": 10.0},
    "links": {"nvlink4": {"alpha_us": 2.0, "beta_gbps": 100.0}},
    "env": {},
}
(_TMP / "good.json").write_text(json.dumps(_GOOD_PROFILE))
(_TMP / "broken.json").write_text('{"version": 1,\n  "device": {,\n}')
(_TMP / "nokey.json").write_text(json.dumps({k: v for k, v in _GOOD_PROFILE.items() if k != "links"}))
(_TMP / "latin1.json").write_bytes(b'{"version": 1, "device": {"name": "caf\xe9"}}')
(_TMP / "a_file").write_text("x")


# ---------------------------------------------------------------- value strategies
JUNK = st.one_of(
    st.sampled_from(
        [
            "",
            " ",
            "abc",
            "1e400",
            "-1",
            "nan",
            "inf",
            "-inf",
            "7B",
            "0x10",
            "1_000",
            "1,2",
            "--json",
            "\u00bd",
            "1e-400",
            "None",
            "0.5",
            "1K",
            "1GiB",
            "1e9",
        ]
    ),
    st.text(max_size=6),
)
INTS = st.one_of(
    st.integers(-3, 70), st.sampled_from([0, -1, 2**31, 2**63, 10**18, 10**30, HUGE]), st.integers()
)
FLOATS = st.one_of(st.floats(), st.sampled_from([0.0, -0.0, 1e-320, 1e-9, 0.4, 1.0, 1e308, 1e300]))


class V:
    """A flag's values: `good` ones (to reach the computations) and `bad` ones (to reach the checks)."""

    def __init__(self, good, bad=None):
        self.good = good
        self.bad = st.one_of(INTS.map(str), FLOATS.map(str), JUNK) if bad is None else bad


def biased(valid, invalid=None) -> V:
    return V(valid, invalid)


def ints(lo=1, hi=64):
    return biased(st.integers(lo, hi).map(str))


def floats(lo, hi):
    return biased(st.floats(lo, hi).map(repr))


def enum(choices):
    return biased(st.sampled_from([str(c) for c in choices]))


def names(known):
    return biased(st.one_of(st.sampled_from(known), st.sampled_from(known).map(str.upper)))


COUNT = biased(
    st.one_of(
        st.sampled_from(["7B", "125M", "1.5T", "350k", "7_000", "1e9", "2T", "300B"]),
        st.integers(1, 10**15).map(str),
    )
)
FLAG = object()
PROFILE = V(
    st.just(str(_TMP / "good.json")),
    st.sampled_from(
        [str(_TMP / n) for n in ("broken.json", "nokey.json", "latin1.json", "missing.json", "")]
        + [str(_TMP)]
    ),
)
OUT = V(
    st.sampled_from([str(_TMP / "out.json"), str(_TMP / "out.csv"), str(_TMP / "sub" / "o.json")]),
    st.sampled_from([str(_TMP / "a_file" / "x.json"), str(_TMP)]),
)


def value(draw, v, p_bad: float):
    if not isinstance(v, V):
        return draw(v)
    return draw(v.bad if draw(st.integers(0, 99)) < 100 * p_bad else v.good)


@st.composite
def argv_for(draw, prefix, spec, required=()):
    """prefix + a random subset of `spec`'s flags (FLAG: a bare switch), `required` ones usually in,
    '--flag value' or '--flag=value'. Each example draws how wild it is: all values good (the
    computations), one in ten bad (the checks), or chaos (half bad, a stray token)."""
    p_bad = draw(st.sampled_from([0.0, 0.0, 0.1, 0.5]))
    keys = draw(st.lists(st.sampled_from(sorted(spec)), unique=True, max_size=len(spec)))
    keys += [k for k in required if k not in keys and (p_bad == 0 or draw(st.integers(0, 9)) > 0)]
    argv = list(prefix)
    for k in draw(st.permutations(keys)):
        if spec[k] is FLAG:
            argv.append(k)
        elif draw(st.booleans()):
            argv += [k, value(draw, spec[k], p_bad)]
        else:
            argv.append(f"{k}={value(draw, spec[k], p_bad)}")
    if p_bad >= 0.5 and draw(st.booleans()):
        argv.insert(draw(st.integers(0, len(argv))), draw(JUNK))
    return argv


# ---------------------------------------------------------------- the CLI checks
def _reject_constant(name):
    raise AssertionError(f"JSON output holds {name}")


def _check_json(obj, path="$", whole=True):
    """Floats finite; *_bytes non-negative, and ints unless `whole` is False (the comm API takes
    fractional sizes such as np.logspace; the CLI gives it whole bytes)."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            if isinstance(k, str) and k.endswith("_bytes") and v is not None:
                kinds = (int,) if whole else (int, float)
                assert isinstance(v, kinds) and not isinstance(v, bool) and v >= 0, f"{path}.{k} = {v!r}"
            _check_json(v, f"{path}.{k}", whole)
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            _check_json(v, f"{path}[{i}]", whole)
    elif isinstance(obj, float):
        assert math.isfinite(obj), f"{path} = {obj!r}"


OUTCOMES: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)


def run_cli(argv, capsys) -> tuple[int | str, str, str]:
    """(exit code or 'reached', stdout, stderr) of gpukit.cli.main(argv), checked as the module says."""
    capsys.readouterr()
    cmd = " ".join(a for a in argv[:2] if not a.startswith("-"))
    try:
        with no_hang():
            rc = main(list(argv))
    except _Reached:
        OUTCOMES[cmd]["reached"] += 1
        return "reached", "", ""
    out, err = capsys.readouterr()
    OUTCOMES[cmd][rc] += 1
    assert rc in (0, 2), (argv, rc, err)
    assert "Traceback" not in err and "Traceback" not in out, (argv, err)
    if rc == 2:
        assert err.endswith("\n") and err.count("\n") == 1 and err.strip(), (argv, err)
    elif "--json" in argv and out.strip():
        _check_json(json.loads(out, parse_constant=_reject_constant))
    return rc, out, err


@pytest.fixture(scope="module", autouse=True)
def stubs():
    """Fixed timings instead of real timing loops; _Reached where ranks, models or namespaces would start."""
    import torch
    import torch.utils.benchmark

    from gpukit.bench import calibrate, launch, matmul, membw, models, netlab
    from gpukit.bench.timing import summarize

    def fake_time_op(fn, **kw):  # matmul: the operands were really built; the op is not run (2048^3)
        return summarize([1e-3, 1.1e-3, 0.9e-3], iters=1)

    def run_once_time_op(fn, **kw):  # memory bandwidth: one copy/triad, so its triad check has a result
        fn()
        return fake_time_op(fn)

    class FakeTimer:
        def __init__(self, *a, **kw):
            pass

        def blocked_autorange(self, min_run_time=0.2):
            return SimpleNamespace(median=1e-3, times=[1e-3, 1.1e-3])

    def reached(*a, **kw):
        raise _Reached

    threads = torch.get_num_threads()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(matmul, "time_op", fake_time_op)
        mp.setattr(membw, "time_op", run_once_time_op)
        mp.setattr(torch.utils.benchmark, "Timer", FakeTimer)
        mp.setattr(launch, "spawn", reached)  # every launcher (collectives, article, ddp, fsdp) spawns here
        mp.setattr(models, "build_reference_model", reached)
        mp.setattr(models, "build_model", reached)
        real_plan = calibrate._plan
        mp.setattr(
            calibrate,
            "_plan",
            lambda device, quick: {**real_plan(device, quick), "sizes": (16, 32), "size_mib": 0.25},
        )  # tiny, as everywhere here
        mp.setattr(netlab.namespaces, "_probe_namespaces", lambda: None)
        mp.setattr(netlab.NetLab, "up", reached)
        mp.setattr(netlab, "down_labs", reached)
        mp.setenv("TQDM_DISABLE", "1")
        yield
    torch.set_num_threads(threads)  # `validate --threads` sets it for the process


# ---------------------------------------------------------------- CLI: calculators
DIMS = {
    "--layers": ints(1, 48),
    "--hidden": biased(st.sampled_from(["64", "128", "256", "768", "4096"])),
    "--heads": biased(st.sampled_from(["1", "2", "4", "8", "12", "32"])),
    "--kv-heads": ints(1, 8),
    "--ffn-hidden": ints(1, 20000),
    "--vocab": ints(1, 100000),
    "--mlp": enum(("gelu", "swiglu")),
}
MEMORY = {
    **DIMS,
    "--model": names(MODELS),
    "--params": COUNT,
    "--precision": enum(memory.PRECISIONS),
    "--optimizer": enum(memory.OPTIMIZERS),
    "--zero": enum((0, 1, 2, 3)),
    "--dp": ints(1, 64),
    "--tp": ints(1, 8),
    "--pp": ints(1, 8),
    "--sp": FLAG,
    "--seq": ints(1, 8192),
    "--micro-batch": ints(1, 64),
    "--grad-accum": ints(1, 16),
    "--recompute": enum(memory.RECOMPUTE),
    "--attention": enum(memory.ATTENTION),
    "--no-dropout": FLAG,
    "--offload": enum(memory.OFFLOAD),
    "--finetune": enum(memory.FINETUNE),
    "--lora-rank": ints(1, 64),
    "--lora-targets": enum(("qv", "attention", "all")),
    "--weights-dtype": enum(memory.WEIGHT_DTYPES),
    "--inference": FLAG,
    "--batch": ints(1, 64),
    "--gpu": names(GPUS),
    "--max-micro-batch": FLAG,
    "--max-seq-len": FLAG,
    "--min-gpus": FLAG,
    "--max-gpus": biased(st.sampled_from(["1", "8", "1024", str(10**30)])),
    "--json": FLAG,
}


@st.composite
def memory_argv(draw):
    how = draw(st.sampled_from(["model", "params", "dims", "any"]))
    spec = dict(MEMORY)
    required = {
        "model": ("--model",),
        "params": ("--params",),
        "dims": ("--layers", "--hidden", "--heads"),
        "any": (),
    }[how]
    if how != "any":  # one way to give the model, so most examples get past that check
        for k in (
            {"--model", "--params", *DIMS}
            - set(required)
            - {"--kv-heads", "--ffn-hidden", "--vocab", "--mlp"}
        ):
            spec.pop(k)
    return draw(argv_for(["memory"], spec, required + ("--json",)))


@fuzz(150)
@given(argv=memory_argv())
def test_cli_memory(argv, capsys):
    rc, out, _ = run_cli(argv, capsys)
    if rc == 0 and "--json" in argv:
        d = json.loads(out)
        parts = sum(d[f"{c}_bytes"] for c in memory.MemoryBreakdown.COMPONENTS)
        assert d["total_bytes"] == parts


MODEL_OR_PARAMS = {"--model": names(MODELS), "--params": COUNT}
TRAIN_TIME = {
    **MODEL_OR_PARAMS,
    "--tokens": COUNT,
    "--gpu": names(GPUS),
    "--gpus": ints(1, 4096),
    "--mfu": floats(0.01, 1.0),
    "--profile": PROFILE,
    "--efficiency": floats(0.01, 1.0),
    "--recompute": enum(compute.RECOMPUTE),
    "--dtype": enum(units.BYTES_PER_DTYPE),
    "--seq-len": ints(1, 8192),
    "--json": FLAG,
}
FLOPS = {
    **MODEL_OR_PARAMS,
    "--seq-len": ints(1, 8192),
    "--mode": enum(compute.MODES),
    "--context": ints(1, 10**6),
    "--recompute": enum(compute.RECOMPUTE),
    "--no-causal": FLAG,
    "--include-embeddings": FLAG,
    "--n-layers": ints(1, 128),
    "--hidden": ints(1, 16384),
    "--json": FLAG,
}
ROOFLINE = {
    "--gpu": names(GPUS),
    "--dtype": enum(units.BYTES_PER_DTYPE),
    "--m": ints(1, 10**6),
    "--n": ints(1, 10**6),
    "--k": ints(1, 10**6),
    "--batch": ints(1, 64),
    "--model": names(MODELS),
    "--seq-len": ints(1, 10**5),
    "--micro-batch": ints(1, 64),
    "--mode": enum(("prefill", "decode")),
    "--context": ints(1, 10**5),
    "--json": FLAG,
}
COMM = {
    "--op": enum(comm.OPS),
    "--bytes": biased(
        st.sampled_from(["0", "1", "4096", "1e9", "1GB", "256MiB", "1.5KiB", "1.5", "1e308", "16M"])
    ),
    "--ranks": ints(1, 4096),
    "--link": names(LINKS),
    "--ranks-per-node": ints(1, 16),
    "--inter-link": names(LINKS),
    "--algorithm": enum(comm.ALGORITHMS),
    "--profile": PROFILE,
    "--json": FLAG,
}


@fuzz(100)
@given(
    argv=st.one_of(
        st.sampled_from(["--model", "--params"]).flatmap(
            lambda mp: argv_for(
                ["train-time"],
                {k: v for k, v in TRAIN_TIME.items() if k not in MODEL_OR_PARAMS or k == mp},
                (mp, "--tokens", "--gpu", "--gpus", "--json"),
            )
        ),
        argv_for(["train-time"], TRAIN_TIME),
    )
)
def test_cli_train_time(argv, capsys):
    run_cli(argv, capsys)


@fuzz(80)
@given(
    argv=st.one_of(
        st.sampled_from(["--model", "--params"]).flatmap(
            lambda mp: argv_for(
                ["flops"],
                {k: v for k, v in FLOPS.items() if k not in MODEL_OR_PARAMS or k == mp},
                (mp, "--seq-len", "--json"),
            )
        ),
        argv_for(["flops"], FLOPS),
    )
)
def test_cli_flops(argv, capsys):
    run_cli(argv, capsys)


@fuzz(80)
@given(
    argv=st.one_of(
        argv_for(
            ["roofline"],
            {k: v for k, v in ROOFLINE.items() if k not in ("--model", "--seq-len")},
            ("--gpu", "--m", "--n", "--k", "--json"),
        ),
        argv_for(["roofline"], ROOFLINE, ("--gpu", "--model", "--seq-len", "--json")),
    )
)
def test_cli_roofline(argv, capsys):
    run_cli(argv, capsys)


@fuzz(80)
@given(argv=argv_for(["comm"], COMM, ("--op", "--bytes", "--ranks", "--link", "--json")))
def test_cli_comm(argv, capsys):
    run_cli(argv, capsys)


@fuzz(40)
@given(
    cmd=st.sampled_from(["gpus", "models", "links", "interconnects"]),
    rows=st.lists(st.one_of(st.sampled_from(GPUS + MODELS + LINKS), JUNK), max_size=3),
    sources=st.booleans(),
    as_json=st.booleans(),
)
def test_cli_catalogs(cmd, rows, sources, as_json, capsys):
    argv = [cmd, *rows] + ["--sources"] * sources + ["--json"] * as_json
    rc, out, err = run_cli(argv, capsys)
    if rc == 0 and as_json:
        assert isinstance(json.loads(out), list)


# ---------------------------------------------------------------- CLI: commands that run things
DEVICE = biased(
    st.sampled_from(["cpu", "auto"]), st.one_of(st.sampled_from(["cuda", "tpu", "CPU", "gpu:0"]), JUNK)
)
TIMEOUT = biased(st.sampled_from(["30", "120", "1e6"]), st.one_of(FLOATS.map(repr), JUNK))
COMMON = {"--device": DEVICE, "--out": OUT, "--timeout": TIMEOUT, "--json": FLAG}
SMALL = biased(st.sampled_from(["1", "2", "8", "16", "32", "48"]))  # sizes that reach an allocation stay tiny
SIZES_CSV = biased(
    st.lists(st.integers(1, 48), min_size=1, max_size=3).map(lambda xs: ",".join(map(str, xs))),
    st.one_of(st.sampled_from(["0", "-8", "abc", ",", "", "8,,16", "1e3", "16,x"]), JUNK),
)
BENCH = {
    "matmul": {
        **COMMON,
        "--dtype": enum(("fp32", "bf16", "fp16", "tf32", "fp8")),
        "--sizes": SIZES_CSV,
        "--square-only": FLAG,
        "--gpu": names(GPUS),
        "--peak-tflops": floats(0.001, 1000.0),
        "--threads": ints(1, 2),
        "--repeats": ints(1, 5),
        "--harness-check": FLAG,
    },
    "memory": {
        **COMMON,
        "--size-mib": biased(
            st.floats(0.001, 0.25).map(repr),
            st.one_of(st.sampled_from(["0", "-1", "nan", "inf", "1e300", str(2.0**60)]), JUNK),
        ),
        "--threads": ints(1, 2),
        "--gpu": names(GPUS),
    },
    "collectives": {
        "--op": enum(comm.OPS),
        "--sizes": biased(
            st.sampled_from(["1K", "4K,64K", "1K,1M,16M", "4096"]),
            st.one_of(st.sampled_from(["0", "1e999", "-1K", "1Ki", "iB", ","]), JUNK),
        ),
        "--iters": ints(1, 100),
        "--warmup": ints(0, 5),
        "--repeats": ints(1, 20),
        "--dtype": enum(("fp32", "bf16", "fp16", "int8")),
        "--backend": enum(("auto", "gloo", "nccl")),
        "--device": DEVICE,
        "--threads": ints(1, 4),
        "--timeout": TIMEOUT,
        "--ranks": ints(1, 8),
        "--no-bare-check": FLAG,
        "--out": OUT,
        "--fit": FLAG,
        "--json": FLAG,
    },
    "harness": {
        **COMMON,
        "--dtype": enum(("fp32", "bf16", "fp16", "fp8")),
        "--size": SMALL,
        "--threads": ints(1, 2),
    },
    "article": {**COMMON, "--ranks": ints(1, 8), "--calls": ints(1, 50), "--skew-ms": floats(0.0, 100.0)},
    "ddp": {
        **COMMON,
        "--ranks": ints(1, 4),
        "--hook": enum(("none", "fp16_compress", "bf16_compress")),
        "--steps": ints(1, 10),
        "--warmup": ints(0, 3),
        "--micro-batch": ints(1, 8),
        "--seq-len": ints(1, 128),
        "--n-layers": ints(1, 4),
        "--hidden": biased(st.sampled_from(["32", "64", "128"])),
        "--n-heads": biased(st.sampled_from(["1", "2", "4", "3"])),
    },
}


@fuzz(220)
@given(
    argv=st.sampled_from(sorted(BENCH)).flatmap(
        lambda b: argv_for(["bench", b], BENCH[b], ("--device", "--json"))
    )
)
def test_cli_bench(argv, capsys):
    rc, out, _ = run_cli(argv, capsys)
    if rc == 0 and "--json" in argv and argv[1] in ("matmul", "memory"):
        assert all(r["time_us"] > 0 for r in json.loads(out)["rows"])


@fuzz(6)
@given(argv=argv_for(["bench", "all"], {**COMMON, "--quick": FLAG}, ("--device",)))
def test_cli_bench_all(argv, capsys):
    run_cli(argv, capsys)


VALIDATE = {
    "--layers": ints(1, 3),
    "--hidden": biased(st.sampled_from(["32", "64", "128"])),
    "--heads": biased(st.sampled_from(["1", "2", "4", "3"])),
    "--vocab": ints(1, 512),
    "--seq": ints(1, 256),
    "--micro-batch": ints(1, 4),
    "--recompute": enum(("none", "full", "selective")),
    "--precision": enum(("fp32", "bf16-mixed", "bf16")),
    "--optimizer": enum(("adamw", "sgd-momentum", "sgd")),
    "--device": biased(st.just("cpu"), st.sampled_from(["cuda", "tpu", ""])),
    "--tied": FLAG,
    "--steps": ints(1, 3),
    "--threads": ints(1, 2),
    "--grid": FLAG,
    "--json": FLAG,
}


@fuzz(60)
@given(argv=argv_for(["validate", "memory"], VALIDATE))
def test_cli_validate(argv, capsys):
    run_cli(argv, capsys)


CALIBRATE = {
    "--quick": FLAG,
    "--out": OUT,
    "--device": DEVICE,
    "--threads": ints(1, 2),
    "--timeout": TIMEOUT,
    "--json": FLAG,
}


@fuzz(4)
@given(argv=argv_for(["calibrate"], CALIBRATE, ("--device",)))
def test_cli_calibrate(argv, capsys):
    run_cli(argv, capsys)


RATE = biased(
    st.sampled_from(["1gbit", "200mbit", "500kbit", "10gbit"]),
    st.one_of(st.sampled_from(["1gbps", "0bit", "100gbit", "fast", "1e400gbit"]), JUNK),
)
NETLAB = {
    "up": {"--nodes": ints(2, 8), "--rate": RATE, "--delay-ms": floats(0.0, 10.0), "--json": FLAG},
    "down": {"--lab": JUNK, "--stale": FLAG, "--json": FLAG},
    "status": {"--json": FLAG},
    "bench": {
        "--nodes": ints(2, 8),
        "--rate": RATE,
        "--op": enum(comm.OPS),
        "--sizes": biased(
            st.sampled_from(["1K", "1K,1M", "64M"]), st.one_of(st.sampled_from(["", "0", ","]), JUNK)
        ),
        "--repeats": ints(1, 5),
        "--warmup": ints(0, 2),
        "--delay-ms": floats(0.0, 10.0),
        "--timeout": TIMEOUT,
        "--json": FLAG,
    },
}


@fuzz(100)
@given(argv=st.sampled_from(sorted(NETLAB)).flatmap(lambda a: argv_for(["netlab", a], NETLAB[a])))
def test_cli_netlab(argv, capsys):
    """Validation only: creating (up, bench) or removing (down) namespaces is stubbed out."""
    run_cli(argv, capsys)


TOKENS = st.one_of(
    st.sampled_from(
        [
            "memory",
            "gpus",
            "models",
            "links",
            "validate",
            "train-time",
            "flops",
            "roofline",
            "comm",
            "bench",
            "netlab",
            "matmul",
            "--json",
            "--help",
            "-h",
            "--version",
            "--gpu",
            "h100-sxm",
            "--model",
            "gpt2",
            "--params",
            "7B",
        ]
    ),
    JUNK,
)


@fuzz(80)
@given(argv=st.lists(TOKENS, max_size=5))
def test_cli_random_tokens(argv, capsys):
    """Any token soup: exit 0 or 2 (argparse's own --help/--version exit through SystemExit(0))."""
    try:
        run_cli(argv, capsys)
    except SystemExit as e:  # --help / --version print and exit 0, as argparse does
        assert e.code == 0 and any(t in argv for t in ("--help", "-h", "--version")), argv


# ---------------------------------------------------------------- the real entry point
@pytest.mark.parametrize(
    "argv",
    [
        ["memory", "--params", "1e400"],
        ["memory", "--layers", "2", "--hidden", "64", "--heads", "4", "--micro-batch", str(HUGE)],
        ["roofline", "--gpu", "h100-sxm", "--m", str(HUGE), "--n", "1", "--k", "1"],
        ["train-time", "--params", "1e300", "--tokens", "1e300", "--gpu", "h100-sxm", "--gpus", "1"],
        ["comm", "--op", "all_reduce", "--bytes", "1.5", "--ranks", "2", "--link", "nvlink4"],
        ["bench", "memory", "--device", "cpu", "--size-mib", "nan"],
        ["bench", "collectives", "--device", "cpu", "--repeats", "0"],
        ["validate", "memory", "--threads", "0"],
        ["netlab", "bench", "--sizes", ""],
        ["nonsense"],
    ],
)
def test_entry_point_exits_2_in_one_line(argv):
    """`python -m gpukit`: exit 2, one stderr line, no traceback (nothing here starts real work)."""
    env = {**os.environ, "TQDM_DISABLE": "1"}
    p = subprocess.run(
        [sys.executable, "-m", "gpukit", *argv],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 2, (argv, p.returncode, p.stderr)
    assert p.stderr.count("\n") == 1 and "Traceback" not in p.stderr, p.stderr
    assert p.stderr.startswith(("error: ", "gpukit")), p.stderr


# ---------------------------------------------------------------- the calculators (API)
ANY_NUM = st.one_of(INTS, FLOATS)
DIM = st.one_of(st.integers(1, 64), st.integers(1, 64), ANY_NUM, JUNK)
ENUM = st.one_of(st.text(max_size=8), st.sampled_from(["", "none", "FULL", "bf16", "adam", "flash"]))


def _bytes_ok(obj, whole=True) -> None:
    """Every *_bytes key of to_json_dict(): a non-negative int (a number if not `whole`); floats finite."""
    d = obj.to_json_dict() if hasattr(obj, "to_json_dict") else obj
    _check_json(json.loads(json.dumps(d, default=str), parse_constant=_reject_constant), whole=whole)


@st.composite
def model_specs(draw):
    """ModelSpec keyword arguments: mostly consistent shapes, sometimes anything."""
    heads = draw(st.one_of(st.sampled_from([1, 2, 4, 8, 12]), DIM))
    head_dim = draw(st.sampled_from([8, 16, 64, 128]))
    hidden = heads * head_dim if isinstance(heads, int) and draw(st.integers(0, 4)) else draw(DIM)
    kw = dict(
        name=draw(st.text(max_size=5)),
        n_layers=draw(st.one_of(st.integers(1, 96), DIM)),
        hidden=hidden,
        n_heads=heads,
        vocab=draw(st.one_of(st.integers(1, 10**5), DIM)),
        max_seq=draw(st.one_of(st.integers(1, 8192), DIM)),
    )
    for k, v in (
        ("n_kv_heads", st.one_of(st.sampled_from([1, 2, 4]), DIM)),
        ("ffn_hidden", DIM),
        ("mlp", st.one_of(st.sampled_from(["gelu", "swiglu"]), ENUM)),
        ("norm", st.one_of(st.sampled_from(["layernorm", "rmsnorm"]), ENUM)),
        ("position", st.one_of(st.sampled_from(["learned", "rope"]), ENUM)),
        ("arch", st.one_of(st.sampled_from(["decoder", "encoder"]), ENUM)),
        ("tied_embeddings", st.booleans()),
        ("bias", st.booleans()),
        ("head_dim", DIM),
    ):
        if draw(st.integers(0, 3)) == 0:
            kw[k] = draw(v)
    return kw


@fuzz(150)
@given(kw=model_specs())
def test_api_model_spec(kw):
    with no_hang():
        try:
            m = ModelSpec(**kw)
        except ValueError:
            return
    for f in ("n_layers", "hidden", "n_heads", "n_kv_heads", "ffn_hidden", "vocab", "max_seq", "head_dim"):
        v = getattr(m, f)
        assert isinstance(v, int) and not isinstance(v, bool) and v >= 1, (f, v)
    assert isinstance(m.n_params, int) and m.n_params > 0


@st.composite
def train_setups(draw):
    kw = {}
    for k, v in (
        ("precision", memory.PRECISIONS),
        ("optimizer", memory.OPTIMIZERS),
        ("recompute", memory.RECOMPUTE),
        ("attention", memory.ATTENTION),
        ("offload", memory.OFFLOAD),
        ("finetune", memory.FINETUNE),
        ("lora_targets", ("qv", "attention", "all")),
        ("weights_dtype", memory.WEIGHT_DTYPES),
    ):
        if draw(st.booleans()):
            kw[k] = draw(st.one_of(st.sampled_from(v), st.sampled_from(v), ENUM))
    for k, v in (
        ("zero_stage", st.integers(0, 3)),
        ("dp", st.integers(1, 64)),
        ("tp", st.sampled_from([1, 2, 4, 8])),
        ("pp", st.integers(1, 8)),
        ("seq_len", st.integers(1, 8192)),
        ("micro_batch", st.integers(1, 32)),
        ("grad_accum", st.integers(1, 16)),
        ("lora_rank", st.integers(1, 64)),
        ("batch", st.integers(1, 64)),
    ):
        if draw(st.booleans()):
            kw[k] = draw(st.one_of(v, v, v, ANY_NUM, JUNK))
    for k in ("sp", "dropout", "inference"):
        if draw(st.booleans()):
            kw[k] = draw(st.one_of(st.booleans(), st.booleans(), st.sampled_from([0, 1, "yes", None])))
    return kw


def _spec_or_none(kw):
    try:
        return ModelSpec(**kw)
    except ValueError:
        return None


@fuzz(200)
@given(
    mkw=model_specs(),
    skw=train_setups(),
    n_params=st.one_of(st.none(), st.integers(1, 10**13), ANY_NUM),
    gpu=st.one_of(st.none(), st.sampled_from(GPUS)),
    ask=st.sampled_from(["", "micro_batch", "seq_len", "min_gpus"]),
)
def test_api_memory(mkw, skw, n_params, gpu, ask):
    model = None if n_params is not None else _spec_or_none(mkw)
    assume(model is not None or n_params is not None)
    g = catalog.get_gpu(gpu) if gpu else None
    with no_hang():
        try:
            setup = memory.TrainSetup(**skw)
            r = memory.estimate_memory(model, n_params=n_params, setup=setup, gpu=g)
            answer = None
            if g is not None and ask == "micro_batch":
                answer = memory.max_micro_batch(model, setup, g, n_params=n_params)
            elif g is not None and ask == "seq_len":
                answer = memory.max_seq_len(model, setup, g)
            elif g is not None and ask == "min_gpus":
                answer = memory.min_gpus(model, setup, g, n_params=n_params, max_gpus=256)
        except ValueError:
            return
    _bytes_ok(r)
    parts = [getattr(r, f"{c}_bytes") for c in memory.MemoryBreakdown.COMPONENTS]
    assert r.total_bytes == sum(parts) and r.cpu_bytes >= 0
    assert r.fits is None if g is None else r.fits == (r.total_bytes <= r.gpu_memory_bytes)
    if isinstance(answer, int):
        assert answer >= 0
    elif answer is not None:
        assert all(o.total_bytes <= g.memory_bytes for o in answer.options)


@fuzz(150)
@given(
    mkw=model_specs(),
    n_params=st.one_of(st.none(), st.floats(1, 1e15), ANY_NUM),
    seq_len=st.one_of(st.integers(1, 8192), DIM),
    mode=st.one_of(st.sampled_from(compute.MODES), ENUM),
    recompute=st.one_of(st.sampled_from(compute.RECOMPUTE), ENUM),
    context=st.one_of(st.none(), DIM),
    layers_hidden=st.one_of(st.none(), st.tuples(DIM, DIM)),
    causal=st.booleans(),
    emb=st.booleans(),
)
def test_api_flops_per_token(mkw, n_params, seq_len, mode, recompute, context, layers_hidden, causal, emb):
    model = None if n_params is not None else _spec_or_none(mkw)
    lh = (
        {}
        if layers_hidden is None or model is not None
        else dict(zip(("n_layers", "hidden"), layers_hidden, strict=True))
    )
    with no_hang():
        try:
            f = compute.flops_per_token(
                model,
                n_params=n_params,
                seq_len=seq_len,
                causal=causal,
                include_embeddings=emb,
                recompute=recompute,
                mode=mode,
                context=context,
                **lh,
            )
        except ValueError:
            return
    assert math.isfinite(f.hardware_flops) and f.hardware_flops >= f.model_flops > 0
    assert all(math.isfinite(v) and v >= 0 for _, v in f.breakdown)
    _bytes_ok(f)


@fuzz(120)
@given(
    mkw=model_specs(),
    n_params=st.one_of(st.none(), st.floats(1, 1e15), ANY_NUM),
    tokens=st.one_of(st.floats(1, 1e13), ANY_NUM),
    gpu=st.sampled_from(GPUS),
    n_gpus=st.one_of(st.integers(1, 10**4), DIM),
    mfu=st.one_of(st.none(), st.floats(0.01, 1), ANY_NUM),
    use_profile=st.booleans(),
    efficiency=st.one_of(st.none(), st.floats(0.01, 1), ANY_NUM),
    dtype=st.one_of(st.sampled_from(["bf16", "fp16", "fp32"]), ENUM),
    recompute=st.one_of(st.sampled_from(compute.RECOMPUTE), ENUM),
    seq_len=st.one_of(st.none(), DIM),
)
def test_api_time_to_train(
    mkw, n_params, tokens, gpu, n_gpus, mfu, use_profile, efficiency, dtype, recompute, seq_len
):
    from gpukit.profile import profile_from_dict

    model = n_params if n_params is not None else _spec_or_none(mkw)
    assume(model is not None)
    prof = profile_from_dict(_GOOD_PROFILE) if use_profile else None
    with no_hang():
        try:
            t = compute.time_to_train(
                model,
                tokens,
                catalog.get_gpu(gpu),
                n_gpus,
                mfu=mfu,
                profile=prof,
                efficiency=efficiency,
                recompute=recompute,
                dtype=dtype,
                seq_len=seq_len,
            )
            d = t.to_json_dict()
        except ValueError:
            return
    assert t.seconds > 0 and math.isfinite(t.seconds) and 0 < t.utilization <= 1
    assert all(
        v is not None for k, v in d.items() if k in ("seconds", "days", "gpu_hours", "mfu", "hfu", "flops")
    )
    _bytes_ok(d)


@fuzz(150)
@given(
    mnk=st.tuples(DIM, DIM, DIM),
    batch=st.one_of(st.integers(1, 64), DIM),
    dtype=st.one_of(st.sampled_from(list(units.BYTES_PER_DTYPE)), ENUM),
    gpu=st.sampled_from(GPUS),
    peak=st.one_of(st.none(), ANY_NUM),
    bw=st.one_of(st.none(), ANY_NUM),
    mkw=model_specs(),
    seq_len=st.one_of(st.integers(1, 4096), DIM),
    mode=st.one_of(st.sampled_from(["prefill", "decode"]), ENUM),
    context=st.one_of(st.none(), DIM),
)
def test_api_roofline(mnk, batch, dtype, gpu, peak, bw, mkw, seq_len, mode, context):
    g = catalog.get_gpu(gpu)
    with no_hang():
        try:
            r = compute.roofline_matmul(*mnk, dtype, g, batch=batch, peak_tflops=peak, bandwidth_gbps=bw)
            assert r.bound in ("compute", "memory") and 0 < r.attainable_tflops <= r.peak_tflops
            assert all(
                math.isfinite(x) and x > 0 for x in (r.flops, r.bytes, r.time_s, r.intensity_flop_per_byte)
            )
            _bytes_ok(r)
        except ValueError:
            pass
        model = _spec_or_none(mkw)
        if model is None:
            return
        try:
            lr = compute.roofline_layer(model, seq_len, batch, dtype, g, mode=mode, context=context)
        except ValueError:
            return
    assert 0 <= lr.memory_bound_time_share <= 1 and math.isfinite(lr.attainable_tflops) and lr.time_s > 0
    _bytes_ok(lr)


LINK = st.one_of(
    st.sampled_from(LINKS).map(catalog.get_interconnect),
    st.tuples(ANY_NUM, ANY_NUM),
    st.tuples(st.floats(0, 1e-3), st.floats(0.1, 1000)),
    JUNK,
)


@fuzz(200)
@given(
    op=st.one_of(st.sampled_from(comm.OPS), ENUM),
    size=st.one_of(st.integers(0, 2**40), ANY_NUM),
    n=st.one_of(st.integers(1, 4096), DIM),
    link=LINK,
    inter=LINK,
    k=st.one_of(st.integers(1, 16), DIM),
    alg=st.one_of(st.sampled_from(comm.ALGORITHMS), ENUM),
)
def test_api_collectives(op, size, n, link, inter, k, alg):
    with no_hang():
        for fn in (
            lambda: comm.collective_time(op, size, n, link, alg),
            lambda: comm.hierarchical_all_reduce(size, n, k, link, inter, alg),
        ):
            try:
                c = fn()
            except ValueError:
                continue
            assert math.isfinite(c.time_s) and c.time_s >= 0 and c.latency_s >= 0 and c.bandwidth_s >= 0
            assert c.algbw_gbps >= 0 and c.busbw_gbps >= 0  # inf only for a 0-time (1-rank) collective
            _bytes_ok(c, whole=isinstance(size, int) or float(size).is_integer())


@fuzz(150)
@given(
    points=st.lists(
        st.tuples(st.one_of(st.integers(0, 2**30), ANY_NUM), st.one_of(st.floats(1e-7, 10), ANY_NUM)),
        max_size=8,
    ),
    op=st.one_of(st.sampled_from(comm.OPS), ENUM),
    n=st.one_of(st.integers(1, 64), DIM),
    alg=st.one_of(st.sampled_from(comm.ALGORITHMS), ENUM),
)
def test_api_fit_alpha_beta(points, op, n, alg):
    with no_hang():
        try:
            f = comm.fit_alpha_beta([p[0] for p in points], [p[1] for p in points], op, n, alg)
        except ValueError:
            return
    assert f.alpha_us >= 0 and f.beta_gbps > 0 and math.isfinite(f.beta_gbps) and math.isfinite(f.r2)
    assert math.isfinite(f.max_rel_error) and f.max_rel_error >= 0
    _bytes_ok(f)


@fuzz(60)
@given(
    mkw=model_specs(),
    seq=st.one_of(st.integers(1, 256), DIM),
    mb=st.one_of(st.integers(1, 8), DIM),
    rec=st.one_of(st.sampled_from(["none", "full"]), ENUM),
    prec=st.one_of(st.sampled_from(["fp32", "bf16-mixed"]), ENUM),
    opt=st.one_of(st.sampled_from(["adamw", "sgd-momentum", "sgd"]), ENUM),
    dev=st.one_of(st.sampled_from(["cpu", "cuda"]), ENUM),
    ref=st.booleans(),
)
def test_api_predict_training_memory(mkw, seq, mb, rec, prec, opt, dev, ref):
    if ref:  # the reference layout, so most examples get past the layout check
        mkw = {k: mkw[k] for k in ("name", "n_layers", "hidden", "n_heads", "vocab", "max_seq") if k in mkw}
        mkw = {
            **mkw,
            "mlp": "gelu",
            "norm": "layernorm",
            "position": "learned",
            "arch": "decoder",
            "bias": True,
        }
    spec = _spec_or_none(mkw)
    assume(spec is not None)
    with no_hang():
        try:
            p = memory_eager.predict_training_memory(
                spec,
                memory_eager.EagerSetup(
                    seq_len=seq, micro_batch=mb, recompute=rec, precision=prec, optimizer=opt, device=dev
                ),
            )
        except ValueError:
            return
    for k in (
        "params_bytes",
        "grads_bytes",
        "optimizer_bytes",
        "activations_bytes",
        "peak_bytes",
        "step1_peak_bytes",
    ):
        v = getattr(p, k)
        assert isinstance(v, int) and v >= 0, (k, v)
    assert p.peak_bytes >= max(p.step1_peak_bytes, p.params_bytes)


@fuzz(150)
@given(x=st.one_of(ANY_NUM, JUNK), name=st.one_of(st.sampled_from(list(units.BYTES_PER_DTYPE)), ENUM))
def test_api_units(x, name):
    try:
        assert units.dtype_bytes(name) > 0
    except ValueError:
        pass
    for fn in (
        units.fmt_bytes,
        units.fmt_count,
        units.fmt_seconds,
        units.fmt_number,
        lambda v: units.fmt_bytes(v, binary=False),
    ):
        s = fn(x)  # no finite value to show: 'n/a'
        assert isinstance(s, str) and not re.search(r"\bnan\b|\binf\b", s, re.IGNORECASE), (x, s)
    for fn in (units.bytes_to_gib, units.bytes_to_gb, units.gib_to_bytes, units.gb_to_bytes):
        try:
            v = fn(x)
        except ValueError:
            continue
        assert math.isfinite(v)


FUZZED_BY = {
    "memory": "test_cli_memory",
    "train-time": "test_cli_train_time",
    "flops": "test_cli_flops",
    "roofline": "test_cli_roofline",
    "comm": "test_cli_comm",
    "bench matmul": "test_cli_bench",
    "bench memory": "test_cli_bench",
    "bench collectives": "test_cli_bench",
    "bench harness": "test_cli_bench",
    "bench article": "test_cli_bench",
    "bench ddp": "test_cli_bench",
    "validate memory": "test_cli_validate",
    "netlab up": "test_cli_netlab",
    "netlab bench": "test_cli_netlab",
    "netlab down": "test_cli_netlab",
}


def test_zz_fuzzing_reached_both_paths(capsys):
    """The strategies are not all rejected by argparse: every command fuzzed above was accepted (exit 0,
    or its real work reached) and rejected (exit 2) at least once. Independent of test order: a fuzz
    test that has not run in this session (run alone, -k, another order) is run here first (the
    examples are derandomized, so they are the same ones)."""
    if QUICK:
        pytest.skip(
            "make test-quick runs a tenth of the fuzz examples: too few to reach every command both "
            "ways (make test checks it)"
        )
    for fn in sorted({FUZZED_BY[c] for c in FUZZED_BY if c not in OUTCOMES}):
        globals()[fn](capsys=capsys)
    for c in FUZZED_BY:
        o = OUTCOMES[c]
        assert o[2] and (o[0] or o["reached"]), (c, dict(o))


# ---------------------------------------------------------------- API: every public function of every face
# Every function in a family face's __all__ (issue 25, section 3), called with arguments drawn from its
# signature: ints (0, negative, huge), floats (nan, inf, 0), strings ("", unknown names), catalog rows
# and unknown catalog names. It raises only a one-line ValueError, or returns a result whose numbers
# are all finite (dataclasses, tuples, lists and dicts walked).
FAMILIES = ("compute", "comm", "memory", "scaling", "parallel", "inference", "cost", "plan")
# functions whose inputs are not values a caller types (callables, DataFrames' rows, another function's
# intermediate results), each with the reason; everything else in a face is fuzzed.
API_SKIP = {
    "comm.bucket_schedule": "takes the all-reduce time as a callable (scaling.step_prediction's part)",
    "scaling.step_prediction": "takes the all-reduce time as a callable (fuzzed through scaling.scaling)",
    "inference.simulate": "takes decode/prefill times as callables (fuzzed through inference.serve)",
    "inference.layouts_frame": "formats tp_vs_replicas rows as a DataFrame",
    "parallel.validation_frame": "formats validate_published rows as a DataFrame",
    "plan.train_plans": "plan()'s part: its inputs are what plan() resolved and checked",
    "plan.refine_with_parallel": "plan()'s part: its inputs are plans plan() built",
    "plan.cell": "a table cell formatter (any value -> text)",
    "memory.pytorch_step_parts": "takes estimate_memory's own parts dict",
    "parallel.micro_batch_times": "estimate's part: takes the TrainSetup estimate built and checked (fuzzed "
    "through parallel.estimate)",
    "parallel.pipeline_breakdown": "takes micro_batch_times' result (fuzzed through parallel.estimate)",
    "comm.bucket_ready_times": "takes ddp_buckets' buckets (fuzzed through scaling.scaling)",
    "scaling.predict_measured_ddp": "takes measured (alpha_s, GB/s) pairs of a bench sweep (tests/test_scaling_bench.py)",
}
# Open findings of this fuzzer, each with its reason: the test is xfail(strict), so it fails the day the
# function is fixed (and the entry must go).
API_OPEN = {}
# slow even with valid inputs (a search, a simulation, a sweep): fewer examples
API_SLOW = {
    "plan.plan",
    "plan.frameworks_grid",
    "parallel.search",
    "parallel.validate_published",
    "parallel.enumerate_layouts",
    "inference.serve",
    "inference.load_sweep",
    "inference.validate_published",
    "inference.predict_published",
    "inference.implied_share",
    "inference.tp_ordering",
    "inference.tp_vs_replicas",
    "inference.min_gpus_to_fit",
    "cost.training_cost",
    "cost.article_table",
    "memory.min_gpus",
    "memory.max_seq_len",
    "memory.max_micro_batch",
    "memory.trick_stack",
    "scaling.scaling",
    "scaling.predict_measured_ddp",
    "comm.collective_curves",
}


def _api_functions():
    import importlib
    import inspect

    out = []
    for fam in FAMILIES:
        face = importlib.import_module(f"gpukit.{fam}")
        for name in face.__all__:
            obj = getattr(face, name)
            if inspect.isfunction(obj) and f"{fam}.{name}" not in API_SKIP:
                out.append(f"{fam}.{name}")
    return out


def _samples():
    """Valid objects of the kinds the API takes (built once)."""
    from gpukit import cost, inference, parallel, scaling

    gpt2, llama = catalog.get_model("gpt2"), catalog.get_model("llama-2-7b")
    shapes = comm.gpt_param_shapes(gpt2)
    net = comm.cluster_network("nvlink4", "ib-ndr")
    return SimpleNamespace(
        models=[gpt2, llama, memory.reference_spec()],
        gpus=[catalog.get_gpu(g) for g in ("h100-sxm", "a100-80gb", "t4")],
        links=[catalog.get_interconnect(n) for n in ("nvlink4", "ib-ndr", "pcie4")],
        setups=[
            memory.TrainSetup(),
            memory.TrainSetup(zero_stage=3, dp=8, seq_len=512),
            memory.TrainSetup(tp=2, pp=2, micro_batch=2),
            memory.TrainSetup(finetune="lora"),
        ],
        eager=[memory.EagerSetup(seq_len=32, micro_batch=2), memory.EagerSetup()],
        nets=[net, comm.cluster_network("pcie4", "eth-100g", ports_per_node=1)],
        clusters=[parallel.make_cluster("h100-sxm"), parallel.make_cluster("a100-80gb", 4)],
        configs=[parallel.ParallelConfig(dp=2, tp=2, pp=2), parallel.ParallelConfig()],
        assumptions=[inference.Assumptions()],
        shapes=shapes,
        buckets=comm.ddp_buckets(shapes),
        token_buckets=[comm.TokenBucket(rate_bytes_per_s=1.25e8, burst_bytes=1 << 20)],
        published_rows=inference.published_serving()[:2],
        scaling=scaling,
        cost=cost,
    )


_API = None


def _api():
    global _API
    if _API is None:
        _API = _samples()
    return _API


BAD_NAMES = st.sampled_from(["", " ", "nope", "H100", "gpt-2", "none"])
SANE_INT = st.integers(1, 64)
SANE_FLOAT = st.one_of(st.floats(0.01, 1.0), st.floats(1.0, 1e4))
WILD_INT = st.sampled_from([0, -1, -(10**6), 2**31, 2**63, 10**18, 10**30, HUGE])
WILD_FLOAT = st.sampled_from(
    [0.0, -0.0, -1.0, math.nan, math.inf, -math.inf, 1e-320, 1e300, 1e308, float(2**63)]
)


def _param_strategy(fn_name: str, p, s) -> st.SearchStrategy:
    """Values for parameter `p` of `fn_name`: mostly sane (to reach the arithmetic), some wild."""
    import inspect

    ann = str(p.annotation) if p.annotation is not inspect.Parameter.empty else ""
    has_default = p.default is not inspect.Parameter.empty
    name = p.name
    optional = "None" in ann or (has_default and p.default is None)
    none = [st.none()] if optional else []

    def mix(sane, wild):
        base = [sane, sane, sane, wild]
        if has_default:
            base.append(st.just(p.default))
        return st.one_of(*base, *none)

    if "ModelSpec" in ann or (not ann and name in ("model", "spec")) or name == "spec":
        return mix(st.sampled_from(s.models), st.one_of(BAD_NAMES, st.sampled_from(MODELS)))
    if name in ("gpu",) and "int" not in ann:
        rows = [] if ann.startswith("str") else s.gpus  # a parameter typed str takes names only
        return mix(st.sampled_from(rows + ["h100-sxm", "a100-40gb"]), BAD_NAMES)
    if name in ("link", "inter", "intra", "inter_link", "intra_link", "pp_link", "link_1", "profile_link"):
        rows = [] if ann.startswith("str") else s.links  # a parameter typed str takes names only
        return mix(st.sampled_from(rows + ["nvlink4", "ib-ndr"]), BAD_NAMES)
    if "TrainSetup" in ann or (name == "setup" and "EagerSetup" not in ann):
        return mix(st.sampled_from(s.setups), st.sampled_from(s.setups))
    if "EagerSetup" in ann:
        return mix(st.sampled_from(s.eager), st.sampled_from(s.eager))
    if "ClusterNetwork" in ann or name in ("net", "network"):
        return mix(st.sampled_from(s.nets), st.sampled_from(s.nets))
    if "Cluster" in ann or name == "cluster":
        return mix(st.sampled_from(s.clusters), st.sampled_from(s.clusters))
    if "ParallelConfig" in ann or name == "config":
        return mix(st.sampled_from(s.configs), st.sampled_from(s.configs))
    if "Assumptions" in ann or name == "a":
        return st.sampled_from(s.assumptions)
    if name in ("param_shapes", "shapes"):
        return st.just(s.shapes)
    if name == "buckets":
        return st.just(s.buckets)
    if "TokenBucket" in ann or name == "token_bucket":
        return st.sampled_from(s.token_buckets)
    if name == "bucket" or "Bucket" in ann:
        return st.sampled_from(s.buckets)
    if name == "shape":
        return st.one_of(st.tuples(SANE_INT, SANE_INT), st.tuples(WILD_INT), st.just(()))
    if name == "identity":
        return st.sampled_from([{}, {"vendor": "GenuineIntel", "flags": ["avx2", "fma"], "model_name": "x"}])
    if name == "flags":
        return st.sampled_from([(), ("avx2", "fma"), ("avx512f",)])
    if name == "row":
        return st.sampled_from(s.published_rows)
    if name in (
        "profile",
        "prices",
        "identity",
        "flags",
        "cases",
        "runs",
        "rows",
        "kernel_s",
        "token_bucket",
    ):
        return st.just(p.default) if has_default else st.none()
    if name in ("sizes_bytes", "times_s", "seq_lens", "sizes", "loads", "points", "ranks", "gpus", "counts"):
        item = st.one_of(SANE_INT, SANE_FLOAT, WILD_INT, WILD_FLOAT)
        seq = st.lists(item, max_size=5)
        if name == "points":
            seq = st.lists(st.tuples(item, item), max_size=5)
            return mix(seq, seq)
        if name in ("gpus",) and "int" in ann and "Sequence" not in ann:
            return mix(SANE_INT, WILD_INT)
        return mix(seq, st.lists(item, max_size=5))
    if "bool" in ann and "int" not in ann:
        return st.one_of(st.booleans(), *none)
    if (
        ann.startswith("int")
        or ann == "int | None"
        or isinstance(p.default, int)
        and not isinstance(p.default, bool)
    ):
        return mix(SANE_INT, st.one_of(WILD_INT, WILD_FLOAT))
    if "float" in ann or isinstance(p.default, float):
        return mix(SANE_FLOAT, st.one_of(WILD_FLOAT, WILD_INT))
    if "str" in ann or isinstance(p.default, str):
        return mix(st.just(p.default) if isinstance(p.default, str) else BAD_NAMES, BAD_NAMES)
    if "dict" in ann:
        return st.just(p.default) if has_default else st.just({})
    if has_default:
        return st.just(p.default)
    return st.one_of(SANE_INT, SANE_FLOAT, BAD_NAMES)


def _finite_walk(obj, path="result", depth=0):
    """Every float in a result (dataclass fields, tuples, lists, dict values) is finite."""
    import dataclasses

    if depth > 8:
        return
    if isinstance(obj, float):
        assert math.isfinite(obj), f"{path} = {obj!r}"
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for f in dataclasses.fields(obj):
            _finite_walk(getattr(obj, f.name), f"{path}.{f.name}", depth + 1)
    elif isinstance(obj, dict):
        for k, v in obj.items():
            _finite_walk(v, f"{path}[{k!r}]", depth + 1)
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj[:200]):
            _finite_walk(v, f"{path}[{i}]", depth + 1)


API_FUNCTIONS = _api_functions()


@pytest.mark.parametrize(
    "qualname",
    [
        pytest.param(q, marks=pytest.mark.xfail(reason=API_OPEN[q], strict=not QUICK)) if q in API_OPEN else q
        for q in API_FUNCTIONS
    ],
)
def test_api_every_public_function(qualname):
    """Hypothesis over each public function's signature (module section above)."""
    import importlib
    import inspect

    fam, name = qualname.split(".")
    fn = getattr(importlib.import_module(f"gpukit.{fam}"), name)
    sig = inspect.signature(fn)
    params = [
        p
        for p in sig.parameters.values()
        if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.name[0] != "_"
    ]

    @fuzz(12 if qualname in API_SLOW else 60)
    @given(data=st.data())
    def check(data):
        s = _api()
        args, kwargs = [], {}
        for p in params:
            v = data.draw(_param_strategy(qualname, p, s), label=p.name)
            if p.kind == p.KEYWORD_ONLY:
                kwargs[p.name] = v
            else:
                args.append(v)
        with no_hang(HANG_S):
            try:
                r = fn(*args, **kwargs)
            except ValueError as e:
                msg = str(e)
                assert msg and "\n" not in msg, (qualname, msg)
                return
        _finite_walk(r, qualname)

    check()
