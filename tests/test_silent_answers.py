"""Silent wrong answers and broken promises (issue 7 section 4): each case that once gave a wrong
answer with exit code 0, or a traceback, and the class of defect around it."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpukit import catalog
from gpukit import memory as mem
from gpukit.cli import CliError, build_parser, main
from gpukit.compute import flops_per_token, roofline_matmul, time_to_train
from gpukit.units import parse_bytes, parse_count

DATA = Path(__file__).resolve().parent.parent / "gpukit" / "data"  # the catalogs ship inside the package


def run(capsys, *argv):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return rc, out, err


# ------------------------------------------------------------------ pretraining length and dropout
def test_every_model_row_has_a_cited_train_seq_len_and_dropout():
    for name, m in catalog.models().items():
        assert 1 <= m.train_seq_len <= m.max_seq, name
        assert isinstance(m.dropout, bool)
    rows = catalog.read_csv(DATA / "models.csv")
    assert all(r["train_source"].strip() for r in rows)


@pytest.mark.parametrize(
    "name,seq,dropout",
    [
        # Dubey et al. 2024 sec. 3.4.1 (8K pretraining, 128K only at the end); Touvron et al. 2023 Table 1 (4k);
        # Radford et al. 2019 sec. 2.3 (1024); Zhang et al. 2022 sec. 2.2 (2048, dropout 0.1).
        ("llama-3.1-405b", 8192, False),
        ("llama-3.1-8b", 8192, False),
        ("llama-2-7b", 4096, False),
        ("mistral-7b", 8192, False),
        ("gpt2", 1024, True),
        ("opt-175b", 2048, True),
    ],
)
def test_published_pretraining_lengths(name, seq, dropout):
    m = catalog.get_model(name)
    assert (m.train_seq_len, m.dropout) == (seq, dropout)


def test_llama31_and_llama3_cost_the_same_per_token():
    """Same architecture, same pretraining length: the 131072-token window must not triple the FLOPs."""
    a = time_to_train("llama-3.1-8b", 15e12, "h100-sxm", 1024)
    b = time_to_train("llama-3-8b", 15e12, "h100-sxm", 1024)
    assert a.flops == b.flops and a.seconds == b.seconds and a.seq_len == 8192
    assert "pretraining" in a.seq_len_source and "131072" in a.seq_len_source
    # given explicitly, the window length is used and said
    c = time_to_train("llama-3.1-8b", 15e12, "h100-sxm", 1024, seq_len=131072)
    assert c.flops > 1.5 * a.flops and c.seq_len_source == "given"


def test_train_time_cli_says_which_seq_len(capsys):
    rc, out, _ = run(
        capsys,
        "train-time",
        "--model",
        "llama-3.1-405b",
        "--tokens",
        "15.6T",
        "--gpu",
        "h100-sxm",
        "--gpus",
        "16384",
    )
    assert rc == 0 and "seq_len 8192" in out and "pretraining" in out and "131072" in out
    rc, out, _ = run(
        capsys,
        "train-time",
        "--model",
        "llama-3.1-405b",
        "--tokens",
        "15.6T",
        "--gpu",
        "h100-sxm",
        "--gpus",
        "16384",
        "--json",
    )
    d = json.loads(out)
    assert d["seq_len"] == 8192 and "train_seq_len" in d["seq_len_source"]


def test_no_dropout_masks_for_models_without_dropout():
    llama = catalog.get_model("llama-2-7b")
    base = mem.TrainSetup(seq_len=4096, convention="megatron")  # the masks are a term of the paper convention
    default = mem.estimate_memory(llama, setup=base)
    off = mem.estimate_memory(llama, setup=mem.TrainSetup(seq_len=4096, dropout=False, convention="megatron"))
    on = mem.estimate_memory(llama, setup=mem.TrainSetup(seq_len=4096, dropout=True, convention="megatron"))
    assert default.activations_bytes == off.activations_bytes < on.activations_bytes
    # per layer the masks are 2sbh (attention output + MLP output) + the embedding's sbh, 1 byte each
    s, h = 4096, llama.hidden
    assert on.activations_bytes - off.activations_bytes == (2 * llama.n_layers + 1) * s * h
    gpt = catalog.get_model("gpt2")  # trains with dropout: masks counted by default
    g = mem.TrainSetup(seq_len=1024)
    assert (
        mem.estimate_memory(gpt, setup=g).activations_bytes
        == mem.estimate_memory(gpt, setup=mem.TrainSetup(seq_len=1024, dropout=True)).activations_bytes
    )


def test_memory_cli_states_dropout_and_seq_len(capsys):
    rc, out, _ = run(capsys, "memory", "--model", "llama-2-7b")
    assert rc == 0 and "without dropout" in out and "pretrained at 4096" in out


# ------------------------------------------------------------------ pipeline micro-batches in flight
def test_pp_without_grad_accum_keeps_pp_micro_batches_in_flight(capsys):
    rc, out, _ = run(capsys, "memory", "--model", "gpt2-xl", "--pp", "4", "--json")
    assumed = json.loads(out)
    rc2, out2, _ = run(capsys, "memory", "--model", "gpt2-xl", "--pp", "4", "--grad-accum", "4", "--json")
    explicit = json.loads(out2)
    rc3, out3, _ = run(capsys, "memory", "--model", "gpt2-xl", "--pp", "4", "--grad-accum", "1", "--json")
    one = json.loads(out3)
    assert rc == rc2 == rc3 == 0
    assert assumed["activations_bytes"] == explicit["activations_bytes"] > 3 * one["activations_bytes"]
    assert any("--grad-accum not given" in n for n in assumed["notes"])
    rc, out, _ = run(capsys, "memory", "--model", "gpt2-xl", "--pp", "4")
    assert "4 in flight" in out and "min(pp, grad_accum) = 4" in out
    rc, out, _ = run(capsys, "memory", "--model", "gpt2-xl", "--pp", "4", "--grad-accum", "1")
    assert "min(pp, grad_accum) = 1" in out and "bubble is 75%" in out
    # the API says it too
    text = mem.estimate_memory("gpt2-xl", setup=mem.TrainSetup(pp=4)).to_text()
    assert "min(pp, grad_accum) = 1" in text and "bubble" in text


# ------------------------------------------------------------------ "what fits" answers
def test_max_seq_len_stops_at_the_context_window(capsys):
    g, gpt2 = catalog.get_gpu("h100-sxm"), catalog.get_model("gpt2")
    assert mem.max_seq_len(gpt2, mem.TrainSetup(), g) == gpt2.max_seq == 1024
    rc, out, _ = run(capsys, "memory", "--model", "gpt2", "--gpu", "h100-sxm", "--max-seq-len")
    assert rc == 0 and "1024 tokens" in out and "context window" in out
    rc, out, _ = run(capsys, "memory", "--model", "gpt2", "--gpu", "h100-sxm", "--max-seq-len", "--json")
    d = json.loads(out)
    assert d["max_seq_len"] == 1024 and d["max_seq_len_capped"] is True


def test_max_micro_batch_needs_a_shape_and_a_positive_limit(capsys):
    g = catalog.get_gpu("h100-sxm")
    with pytest.raises(ValueError, match="model's shape"):
        mem.max_micro_batch(None, mem.TrainSetup(), g, n_params=7_000_000_000)
    with pytest.raises(ValueError, match="limit"):
        mem.max_micro_batch(catalog.get_model("gpt2"), mem.TrainSetup(), g, limit=0)
    with pytest.raises(ValueError, match="limit"):
        mem.max_seq_len(catalog.get_model("gpt2"), mem.TrainSetup(), g, limit=0)
    rc, _, err = run(capsys, "memory", "--params", "7B", "--gpu", "h100-sxm", "--max-micro-batch")
    assert rc == 2 and "--max-micro-batch" in err and "every micro-batch would fit" in err
    rc, _, err = run(capsys, "memory", "--params", "7B", "--gpu", "h100-sxm", "--max-seq-len")
    assert rc == 2 and "--max-seq-len" in err


def test_max_micro_batch_at_the_limit_says_at_least(capsys, monkeypatch):
    from gpukit.cli import memory as cli_memory

    monkeypatch.setattr(cli_memory, "MICRO_BATCH_LIMIT", 4)
    rc, out, _ = run(capsys, "memory", "--model", "gpt2", "--gpu", "h100-sxm", "--max-micro-batch")
    assert rc == 0 and "at least 4 (the search limit)" in out


# ------------------------------------------------------------------ decimal comma
@pytest.mark.parametrize(
    "argv",
    [
        ["memory", "--params", "1,5B"],
        ["train-time", "--params", "1,5B", "--tokens", "300B", "--gpu", "h100-sxm", "--gpus", "8"],
        ["train-time", "--params", "7B", "--tokens", "1,5T", "--gpu", "h100-sxm", "--gpus", "8"],
        ["flops", "--params", "1,5B", "--seq-len", "2048"],
        ["comm", "--op", "all_reduce", "--bytes", "1,5GB", "--gpus", "8", "--link", "nvlink4"],
    ],
)
def test_a_comma_in_a_number_is_an_error(capsys, argv):
    rc, _, err = run(capsys, *argv)
    assert rc == 2 and "comma" in err


@settings(max_examples=60, deadline=None)
@given(st.from_regex(r"[0-9]{1,3},[0-9]{1,3}[kKMBTG]?", fullmatch=True))
def test_parse_count_refuses_every_comma(text):
    with pytest.raises(ValueError, match="comma"):
        parse_count(text, "--params")
    with pytest.raises(ValueError, match="comma"):
        parse_bytes(text + "B", "--bytes")


# ------------------------------------------------------------------ profiles
def _profile(tmp_path, **links):
    p = tmp_path / "p.json"
    p.write_text(
        json.dumps(
            {
                "version": 1,
                "device": {"name": "x"},
                "matmul_tflops": {"bf16": 500.0},
                "memory_bandwidth_gbps": {"triad": 2000.0},
                "env": {},
                "links": links or {"nvlink4": {"alpha_us": 5.0, "beta_gbps": 300.0}},
            }
        )
    )
    return p


def test_empty_profile_path_is_an_error(capsys):
    rc, _, err = run(
        capsys,
        "train-time",
        "--model",
        "llama-2-7b",
        "--tokens",
        "2T",
        "--gpu",
        "h100-sxm",
        "--gpus",
        "8",
        "--profile",
        "",
    )
    assert rc == 2 and "profile path is empty" in err
    rc, _, err = run(
        capsys,
        "comm",
        "--op",
        "all_reduce",
        "--bytes",
        "1GB",
        "--gpus",
        "8",
        "--link",
        "nvlink4",
        "--profile",
        "",
    )
    assert rc == 2 and "profile path is empty" in err


@pytest.mark.parametrize(
    "field,links",
    [
        ("beta_gbps", {"nvlink4": {"alpha_us": 5.0, "beta_gbps": 1e-300}}),
        ("beta_gbps", {"nvlink4": {"alpha_us": 5.0, "beta_gbps": 1e300}}),
        ("alpha_us", {"nvlink4": {"alpha_us": 1e300, "beta_gbps": 300.0}}),
    ],
)
def test_absurd_profile_values_name_the_field(tmp_path, capsys, field, links):
    p = _profile(tmp_path, **links)
    rc, _, err = run(
        capsys,
        "comm",
        "--op",
        "all_reduce",
        "--bytes",
        "1GB",
        "--gpus",
        "8",
        "--link",
        "nvlink4",
        "--profile",
        p,
    )
    assert rc == 2 and field in err and str(p) in err


def test_absurd_matmul_rate_names_the_field(tmp_path):
    from gpukit.profile import profile_from_dict

    for bad in (1e-300, 1e300):
        with pytest.raises(ValueError, match=r"matmul_tflops\['bf16'\]"):
            profile_from_dict(
                {
                    "version": 1,
                    "device": {},
                    "env": {},
                    "links": {},
                    "matmul_tflops": {"bf16": bad},
                    "memory_bandwidth_gbps": {},
                }
            )


# ------------------------------------------------------------------ catalog ranges
def _write_catalog(tmp_path, kind, col, value):
    import csv
    import shutil

    for f in DATA.glob("*.csv"):
        shutil.copy(f, tmp_path / f.name)
    path = tmp_path / f"{kind}.csv"
    rows = list(csv.reader(path.open(newline="", encoding="utf-8")))
    rows[1][rows[0].index(col)] = value
    with path.open("w", newline="", encoding="utf-8") as f:
        csv.writer(f, lineterminator="\n").writerows(rows)
    return path


@pytest.mark.parametrize(
    "kind,col", [(k, c) for k, cols in catalog.NUMERIC_COLUMNS.items() for c in cols if c in catalog.RANGES]
)
def test_every_numeric_catalog_column_has_a_sane_range(tmp_path, monkeypatch, kind, col):
    lo, hi, _ = catalog.RANGES[col]
    load = {"gpus": catalog.gpus, "models": catalog.models, "interconnects": catalog.interconnects}[kind]
    for bad in ("1e300", str(int(hi * 10) + 1)):
        _write_catalog(tmp_path, kind, col, bad)
        monkeypatch.setenv("GPUKIT_DATA", str(tmp_path))
        with pytest.raises(ValueError, match=rf"{kind}\.csv:2: '{col}'"):
            load()


def test_every_numeric_column_is_ranged():
    for kind, cols in catalog.NUMERIC_COLUMNS.items():
        assert set(cols) <= set(catalog.RANGES), (kind, set(cols) - set(catalog.RANGES))


@pytest.mark.parametrize("value", ["0", "1e300"])
def test_gpu_memory_0_or_huge_is_rejected_with_file_and_line(tmp_path, monkeypatch, capsys, value):
    _write_catalog(tmp_path, "gpus", "memory_gib", value)
    monkeypatch.setenv("GPUKIT_DATA", str(tmp_path))
    rc, _, err = run(capsys, "memory", "--model", "gpt2", "--gpu", "v100-32gb")
    assert rc == 2 and "gpus.csv:2: 'memory_gib'" in err


# ------------------------------------------------------------------ timeouts, threads, counts
def _walk(parser, path=()):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _walk(sub, (*path, name))
        elif action.option_strings:
            yield path, action


def _commands_with(flag):
    return sorted({p for p, a in _walk(build_parser()) if flag in a.option_strings})


@pytest.mark.parametrize("value", ["1e300", "1e10", "nan", "inf", "0", "-5", "abc"])
def test_every_timeout_flag_refuses_absurd_values(capsys, value):
    cmds = _commands_with("--timeout")
    assert len(cmds) >= 8
    for cmd in cmds:
        with pytest.raises(CliError, match="--timeout"):  # argparse: before anything runs
            build_parser().parse_args([*cmd, "--timeout", value])
        rc = main([*cmd, "--timeout", value])
        _, err = capsys.readouterr()
        assert rc == 2 and "--timeout" in err, (cmd, err)


def test_no_flag_takes_a_bare_float():
    """float() accepts nan, inf and 1e300: every float flag goes through a checked type."""
    bare = [f"{' '.join(p)} {a.option_strings[0]}" for p, a in _walk(build_parser()) if a.type is float]
    assert not bare, bare


@pytest.mark.parametrize("flag", ["--threads", "--repeats", "--ranks", "--steps", "--calls", "--iters"])
def test_zero_counts_are_errors_not_one(capsys, flag):
    for cmd in _commands_with(flag):
        if cmd == ("comm",):
            continue  # comm's --ranks is the old spelling of --gpus (checked by its own type)
        rc = main([*cmd, flag, "0"])
        _, err = capsys.readouterr()
        assert rc == 2 and flag in err, (cmd, err)


def test_harness_check_honours_its_timeout():
    from gpukit.bench.matmul import harness_check

    with pytest.raises(TimeoutError, match="harness check timed out"):
        harness_check("cpu", "fp32", 64, timeout_s=1e-4, min_run_time_s=0.05, rounds=2)


def test_bench_harness_cli_honours_timeout(capsys):
    rc, _, err = run(capsys, "bench", "harness", "--device", "cpu", "--dims", "64", "--timeout", "0.0001")
    assert rc == 2 and "timed out" in err, (rc, err)


def test_bench_matmul_with_nothing_measured_exits_nonzero(capsys):
    rc, out, err = run(
        capsys,
        "bench",
        "matmul",
        "--device",
        "cpu",
        "--dims",
        "512",
        "--square-only",
        "--timeout",
        "0.000001",
        "--repeats",
        "3",
    )
    assert rc == 2 and "timed out" in err and out == ""


def test_validate_memory_has_a_timeout():
    # a fresh CLI process, as a user runs it (in a warm process a 1 ms alarm can land in torch's C++
    # code of a 0.1 s run and be delivered only after it: see the closing note of issue 7)
    import subprocess
    import sys

    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "gpukit",
            "validate",
            "memory",
            "--layers",
            "2",
            "--hidden",
            "64",
            "--heads",
            "2",
            "--timeout",
            "0.001",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 2 and "timed out" in p.stderr and "Traceback" not in p.stderr, (
        p.returncode,
        p.stderr,
    )


# ------------------------------------------------------------------ --out and profile files
def test_out_is_checked_before_the_work(tmp_path, capsys, monkeypatch):
    import gpukit.bench.matmul as bm

    def never(*a, **k):
        raise AssertionError("the benchmark ran although --out cannot be written")

    monkeypatch.setattr(bm, "matmul_bench", never)
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    for out in (blocker / "r.json", tmp_path, ""):
        rc, _, err = run(capsys, "bench", "matmul", "--device", "cpu", "--out", out)
        assert rc == 2 and "--out" in err, (out, err)


def test_calibrate_checks_out_before_measuring(tmp_path):
    from gpukit.bench.calibrate import calibrate

    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    with pytest.raises(ValueError, match="--out"):
        calibrate(quick=True, out=blocker / "profile.json", timeout_s=5)


def test_failed_write_leaves_no_tmp(tmp_path, monkeypatch):
    from gpukit.bench import results

    def boom(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(results.os, "replace", boom)
    with pytest.raises(OSError):
        results.write_json({"a": 1}, tmp_path / "r.json")
    assert list(tmp_path.iterdir()) == []


def test_calibrate_keeps_the_previous_profile(tmp_path):
    from gpukit.bench.calibrate import write_profile

    path = tmp_path / "profile.json"
    write_profile({"n": 1}, path)
    prof = write_profile({"n": 2}, path)
    assert json.loads(path.read_text())["n"] == 2
    assert prof["replaced"] == str(path) + ".bak" and json.loads(Path(prof["replaced"]).read_text())["n"] == 1


# ------------------------------------------------------------------ names in the API, no inf in text
def test_api_takes_catalog_names():
    by_name = mem.estimate_memory("llama-2-7b", gpu="h100-sxm")
    by_spec = mem.estimate_memory(catalog.get_model("llama-2-7b"), gpu=catalog.get_gpu("h100-sxm"))
    assert by_name.total_bytes == by_spec.total_bytes
    assert (
        time_to_train("llama-2-7b", 2e12, "h100-sxm", 8).seconds
        == time_to_train(catalog.get_model("llama-2-7b"), 2e12, catalog.get_gpu("h100-sxm"), 8).seconds
    )
    assert flops_per_token("gpt2", seq_len=1024).model_flops > 0
    assert roofline_matmul(256, 256, 256, gpu="h100-sxm").bound in ("compute", "memory")
    assert mem.max_seq_len("gpt2", mem.TrainSetup(), "h100-sxm") == 1024
    from gpukit.comm import collective_time

    assert collective_time("all_reduce", 1e9, 8, "nvlink4").time_s > 0
    from gpukit.compute import layer_matmul_params, roofline_layer
    from gpukit.memory import trick_stack

    assert mem.layer_activation_bytes("gpt2", mem.TrainSetup(seq_len=1024)) > 0
    assert layer_matmul_params("gpt2") > 0 and roofline_layer("gpt2", 1024, 1, gpu="h100-sxm").ops
    assert trick_stack("llama-2-7b", "rtx-4090", precision="bf16-mixed").final.total_bytes > 0


@pytest.mark.parametrize(
    "call",
    [
        lambda: mem.estimate_memory(42),
        lambda: mem.estimate_memory("llama-2-7b", gpu=80),
        lambda: time_to_train("llama-2-7b", 2e12, 3.5, 8),
        lambda: mem.estimate_memory("no-such-model"),
    ],
)
def test_api_bad_specs_are_value_errors(call):
    with pytest.raises(ValueError):
        call()


def test_one_rank_prints_no_inf(capsys):
    rc, out, _ = run(
        capsys, "comm", "--op", "all_reduce", "--bytes", "1GB", "--gpus", "1", "--link", "nvlink4"
    )
    assert rc == 0 and "inf" not in out.lower() and "n/a" in out
    rc, out, _ = run(
        capsys, "comm", "--op", "all_reduce", "--bytes", "1GB", "--gpus", "1", "--link", "nvlink4", "--json"
    )
    d = json.loads(out)
    assert d["algbw_gbps"] is None and d["busbw_gbps"] is None


@settings(max_examples=40, deadline=None)
@given(
    op=st.sampled_from(["all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all"]),
    gpus=st.integers(1, 4096),
    size=st.sampled_from(["0", "1", "1MB", "1GB", "1TB"]),
)
def test_comm_text_never_prints_inf_or_nan(op, gpus, size):
    import contextlib
    import io

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["comm", "--op", op, "--bytes", size, "--gpus", str(gpus), "--link", "nvlink4"])
    text = out.getvalue().lower()
    assert rc in (0, 2) and "Traceback" not in err.getvalue()
    assert not any(w in text.replace("n/a", "") for w in ("inf ", "nan")), text


# ------------------------------------------------------------------ the source articles
def test_seeds_dir_honours_the_environment(tmp_path, monkeypatch):
    import conftest

    (tmp_path / "000_x.txt").write_text("article")
    monkeypatch.setenv("GPUKIT_SEEDS", str(tmp_path))
    assert conftest.seeds_dir() == tmp_path
    monkeypatch.delenv("GPUKIT_SEEDS")
    found = conftest.seeds_dir()
    assert found is None or any(found.glob("*.txt"))


# ------------------------------------------------------------------ beyond the context window
@pytest.mark.parametrize(
    "argv",
    [
        ["memory", "--model", "gpt2", "--seq-len", "4096"],
        [
            "train-time",
            "--model",
            "gpt2",
            "--tokens",
            "1B",
            "--gpu",
            "h100-sxm",
            "--gpus",
            "1",
            "--seq-len",
            "4096",
        ],
        ["flops", "--model", "gpt2", "--seq-len", "4096"],
        ["roofline", "--model", "gpt2", "--seq-len", "4096", "--gpu", "h100-sxm"],
    ],
)
def test_learned_positions_refuse_sequences_beyond_the_window(capsys, argv):
    rc, _, err = run(capsys, *argv)
    assert rc == 2 and "context window 1024" in err


@pytest.mark.parametrize(
    "argv",
    [
        ["memory", "--model", "llama-2-7b", "--seq-len", "16384"],
        [
            "train-time",
            "--model",
            "llama-2-7b",
            "--tokens",
            "1B",
            "--gpu",
            "h100-sxm",
            "--gpus",
            "1",
            "--seq-len",
            "16384",
        ],
        ["flops", "--model", "llama-2-7b", "--seq-len", "16384"],
        ["roofline", "--model", "llama-2-7b", "--seq-len", "16384", "--gpu", "h100-sxm"],
    ],
)
def test_rope_beyond_the_window_is_computed_and_said(capsys, argv):
    rc, out, _ = run(capsys, *argv)
    assert rc == 0 and "beyond llama-2-7b's context window 4096" in out


def test_seq_len_zero_is_an_error_not_the_default():
    """`seq_len or model.max_seq` once turned 0 into the context window without a word."""
    with pytest.raises(ValueError, match="seq_len"):
        time_to_train("llama-2-7b", 2e12, "h100-sxm", 8, seq_len=0)


def test_params_only_says_its_total_is_a_lower_bound(capsys):
    rc, out, _ = run(capsys, "memory", "--params", "7B", "--inference", "--batch", "64", "--gpu", "h100-sxm")
    assert rc == 0 and "lower bound" in out and "KV cache" in out


def test_benchmark_tables_print_no_inf():
    from gpukit.bench.results import format_table

    text = format_table(
        [{"size": 1, "busbw_gbps": float("inf"), "algbw_gbps": float("nan")}],
        ["size", "busbw_gbps", "algbw_gbps"],
    )
    assert "inf" not in text and "nan" not in text and text.count("n/a") == 2


@pytest.mark.parametrize(
    "argv,msg",
    [
        (["bench", "harness", "--device", "cpu", "--dims", "10000000"], "out of memory at size 10000000"),
        (["bench", "article", "--device", "cpu", "--skew-ms", "1e300"], "skew_ms must be at most"),
        (["bench", "memory", "--device", "cpu", "--size-mib", "1e300"], "size_mib"),
    ],
)
def test_huge_benchmark_inputs_are_one_line_exit_2(capsys, argv, msg):
    rc, _, err = run(capsys, *argv)
    assert rc == 2 and msg in err and err.count("\n") == 1


def test_benchreport_checks_out_first(tmp_path, capsys):
    from gpukit.cli.benchreport import main as bench_main

    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    assert bench_main(["--out", str(blocker / "r.json"), "--skip", "memory,matmul,collectives"]) == 2
    assert "--out" in capsys.readouterr().err


# ------------------------------------------------------------------ flags that would be ignored
@pytest.mark.parametrize(
    "argv,msg",
    [
        (
            ["memory", "--model", "llama-2-7b", "--inference", "--micro-batch", "64"],
            "--micro-batch applies to training",
        ),
        (
            ["memory", "--model", "llama-2-7b", "--inference", "--optimizer", "sgd"],
            "--optimizer applies to training",
        ),
        (["memory", "--model", "llama-2-7b", "--batch", "64"], "--batch applies to --inference"),
        (
            ["roofline", "--model", "gpt2", "--seq-len", "512", "--m", "5", "--gpu", "h100-sxm"],
            "two different questions",
        ),
        (
            ["roofline", "--dims", "64,64,64", "--seq-len", "512", "--gpu", "h100-sxm"],
            "--seq-len applies to --model",
        ),
        (
            ["roofline", "--dims", "64,64,64", "--mode", "decode", "--gpu", "h100-sxm"],
            "--mode applies to --model",
        ),
        (["roofline", "--model", "gpt2", "--seq-len", "512", "--batch", "4", "--gpu", "h100-sxm"], "--batch"),
        (
            [
                "train-time",
                "--params",
                "7B",
                "--seq-len",
                "4096",
                "--tokens",
                "1T",
                "--gpu",
                "h100-sxm",
                "--gpus",
                "8",
            ],
            "seq_len needs a model",
        ),
    ],
)
def test_a_flag_that_would_be_ignored_is_an_error(capsys, argv, msg):
    rc, _, err = run(capsys, *argv)
    assert rc == 2 and msg in err, err


def test_comm_says_where_each_link_comes_from(tmp_path, capsys):
    p = _profile(tmp_path)  # has nvlink4 only
    rc, out, _ = run(
        capsys,
        "comm",
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
        "--profile",
        p,
    )
    assert rc == 0 and "nvlink4: measured" in out and "ib-ndr: catalog (profile" in out
    rc, out, _ = run(
        capsys,
        "comm",
        "--op",
        "all_reduce",
        "--bytes",
        "1GB",
        "--gpus",
        "8",
        "--link",
        "pcie4",
        "--profile",
        p,
        "--json",
    )
    assert json.loads(out)["link_sources"] == [f"pcie4: catalog (profile {p} has no link 'pcie4')"]


def test_memory_says_when_a_flag_changes_nothing(capsys):
    rc, out, _ = run(capsys, "memory", "--model", "llama-2-7b", "--zero", "3")
    assert rc == 0 and "nothing is partitioned" in out
    rc, out, _ = run(capsys, "memory", "--model", "llama-2-7b", "--zero", "3", "--dp", "8")
    assert rc == 0 and "nothing is partitioned" not in out
    rc, out, _ = run(capsys, "memory", "--model", "llama-2-7b", "--sp")
    assert rc == 0 and "--sp with --tp 1" in out


@pytest.mark.parametrize(
    "argv, flag",
    [
        (
            ["memory", "--model", "llama-3-8b", "--mode", "inference"],
            "--mode",
        ),  # was read as --model inference
        (["serve", "--model", "gpt2", "--gpu", "t4", "--out", "200"], "--out"),  # was read as --output-tokens
        (
            [
                "parallel",
                "search",
                "--model",
                "gpt2",
                "--gpu",
                "h100-sxm",
                "--gpus",
                "8",
                "--gpus-per-node",
                "8",
                "--micro",
                "2",
            ],
            "--micro",
        ),
    ],
)
def test_no_flag_prefix_matching(argv, flag, capsys):
    """A misspelt or partial flag is an error naming it, never silently another flag (argparse's
    prefix matching is off in every gpukit parser)."""
    assert main(argv) == 2
    _, err = capsys.readouterr()
    assert "unrecognized arguments" in err and flag in err and "Traceback" not in err


def test_every_parser_refuses_abbreviations():
    def parsers(p):
        yield p
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                for sub in a.choices.values():
                    yield from parsers(sub)

    found = list(parsers(build_parser()))
    assert len(found) > 20 and not [p.prog for p in found if p.allow_abbrev]


# ------------------------------------------------------------------ precision the GPU has
def test_memory_default_precision_follows_the_gpu(capsys):
    """A T4 or V100 has no bf16 units: the default becomes fp16-mixed (same bytes) with a note; an
    explicit bf16 there gets a note; an H100 keeps bf16-mixed without one."""
    rc, out, _ = run(capsys, "memory", "--model", "gpt2", "--gpu", "t4", "--json")
    d = json.loads(out)
    assert rc == 0 and any("fp16-mixed" in n and "no bf16 units" in n for n in d["notes"])
    rc, out, _ = run(
        capsys, "memory", "--model", "gpt2", "--gpu", "t4", "--precision", "bf16-mixed", "--json"
    )
    assert (
        any("no bf16 units" in n for n in json.loads(out)["notes"])
        and json.loads(out)["total_bytes"] == d["total_bytes"]
    )
    rc, out, _ = run(capsys, "memory", "--model", "gpt2", "--gpu", "h100-sxm")
    assert out.startswith("gpt2: bf16-mixed") and "no bf16 units" not in out
    rc, out, _ = run(capsys, "memory", "--model", "gpt2", "--gpu", "v100-32gb")
    assert out.startswith("gpt2: fp16-mixed")
    # serving too: the header said "inference bf16" on a T4 with no word (same bytes, wrong dtype)
    rc, out, _ = run(capsys, "memory", "--model", "gpt2", "--gpu", "t4", "--inference")
    assert rc == 0 and out.startswith("gpt2: inference fp16") and "no bf16 units" in out
    rc, out, _ = run(
        capsys, "memory", "--model", "gpt2", "--gpu", "t4", "--inference", "--weights-dtype", "int8"
    )
    assert out.startswith("gpt2: inference int8") and "fp16 activations and KV cache)" in out


@pytest.mark.parametrize(
    "argv",
    [
        ["train-time", "--model", "gpt2", "--gpu", "t4", "--tokens", "1B", "--gpus", "1"],
        ["roofline", "--gpu", "t4", "--dims", "4096,4096,4096"],
        ["roofline", "--gpu", "v100-32gb", "--model", "gpt2", "--seq-len", "1024"],
    ],
)
def test_compute_default_dtype_follows_the_gpu(argv, capsys):
    """Without --dtype a GPU without bf16 units is computed in fp16 (its peak), not refused."""
    rc, out, err = run(capsys, *argv, "--json")
    assert rc == 0, err
    assert "fp16" in out and "bf16" not in out
    rc, out, _ = run(capsys, *[("h100-sxm" if a in ("t4", "v100-32gb") else a) for a in argv], "--json")
    assert rc == 0 and "bf16" in out


def test_comm_op_hyphen_spelling(capsys):
    a = run(
        capsys, "comm", "--op", "all-reduce", "--bytes", "1GB", "--gpus", "8", "--link", "nvlink4", "--json"
    )
    b = run(
        capsys, "comm", "--op", "all_reduce", "--bytes", "1GB", "--gpus", "8", "--link", "nvlink4", "--json"
    )
    assert a[0] == b[0] == 0 and a[1] == b[1]
    rc, _, err = run(
        capsys, "comm", "--op", "allreduce", "--bytes", "1GB", "--gpus", "8", "--link", "nvlink4"
    )
    assert rc == 2 and "--op" in err


def test_scaling_links_follow_the_gpu(capsys):
    """Without --link/--inter-link the network is the GPU's own: a T4 box talks over PCIe and
    Ethernet, an A100 over NVLink 3 and InfiniBand HDR; NVLink never crosses nodes."""
    from gpukit.scaling import scaling

    for gpu, intra, inter in (
        ("t4", "pcie3", "eth-100g"),
        ("a100-80gb", "nvlink3", "ib-hdr"),
        ("h100-sxm", "nvlink4", "ib-ndr"),
    ):
        r = scaling("gpt2", gpu=gpu, gpus=(1, 8, 16), tokens_per_gpu=8192).to_json_dict()
        assert (r["network"]["intra_name"], r["network"]["inter_name"]) == (intra, inter), gpu
        rc, out, _ = run(
            capsys,
            "scaling",
            "--model",
            "gpt2",
            "--gpu",
            gpu,
            "--gpus",
            "1,8,16",
            "--tokens-per-gpu",
            "8192",
            "--json",
        )
        net = json.loads(out)["network"]
        assert rc == 0 and (net["intra_name"], net["inter_name"]) == (intra, inter), gpu
    # an explicit intra-node link alone still gets a network between nodes
    r = scaling("gpt2", gpu="h100-sxm", link="nvlink4", gpus=(1, 16), tokens_per_gpu=8192).to_json_dict()
    assert r["network"]["inter_name"] == "ib-ndr"


def test_cost_inter_node_link_follows_the_gpu():
    """Cost and plan price a multi-node run over the network of the GPU's era unless told otherwise."""
    from gpukit.cost import predicted_efficiency

    # (use_scaling=False is gone: issue 22 left one gradient-sync path, gpukit.comm.grad_sync)
    a100 = predicted_efficiency(7e9, "a100-80gb", 16)
    h100 = predicted_efficiency(7e9, "h100-sxm", 16)
    ndr = predicted_efficiency(7e9, "a100-80gb", 16, inter_link="ib-ndr")
    assert "ib-hdr between nodes" in a100.model and "ib-ndr between nodes" in h100.model
    assert ndr.comm_s < a100.comm_s  # NDR's 50 GB/s per port against HDR's 25


# ------------------------------------------------------------------ custom shapes: sliding window, plan
SHAPE_7B = ["--layers", "32", "--hidden", "4096", "--heads", "32", "--kv-heads", "8"]


def test_sliding_window_caps_a_custom_shapes_kv_cache(capsys):
    """--sliding-window W on a custom shape: the KV cache holds min(seq_len, W) tokens per sequence
    (Jiang et al. 2023 sec. 2), 8x less at 32768 tokens and W 4096, and the output says so."""
    argv = [
        "memory",
        *SHAPE_7B,
        "--mlp",
        "swiglu",
        "--inference",
        "--batch",
        "8",
        "--seq-len",
        "32768",
        "--json",
    ]
    kv = {}
    for extra in ([], ["--sliding-window", "4096"]):
        rc, out, _ = run(capsys, *argv, *extra)
        assert rc == 0
        kv[bool(extra)] = json.loads(out)
    assert kv[False]["kv_cache_bytes"] == 8 * kv[True]["kv_cache_bytes"]
    assert kv[False]["kv_cache_bytes"] == 2 * 32 * 8 * 128 * 2 * 32768 * 8  # K and V, layers, kv dim, bf16
    assert any("sliding window of 4096" in n for n in kv[True]["notes"])
    step_s = {}
    for extra in ([], ["--sliding-window", "4096"]):  # training: attention FLOPs over min(position, W) keys
        rc, out, _ = run(
            capsys,
            "parallel",
            "estimate",
            *SHAPE_7B,
            *extra,
            "--gpu",
            "h100-sxm",
            "--gpus-per-node",
            "8",
            "--global-batch",
            "8",
            "--dp",
            "8",
            "--tp",
            "1",
            "--pp",
            "1",
            "--micro-batch",
            "1",
            "--seq-len",
            "32768",
            "--json",
        )
        assert rc == 0
        step_s[bool(extra)] = json.loads(out)["step_time_s"]
    assert step_s[True] < step_s[False]


@pytest.mark.parametrize(
    "argv, msg",
    [
        (
            ["memory", "--model", "mistral-7b", "--sliding-window", "1024"],
            "--model and --sliding-window are mutually",
        ),
        (["memory", *SHAPE_7B, "--sliding-window", "0"], "--sliding-window must be a positive integer"),
        # plan once read the model from --model and dropped --kv-heads without a word
        (
            ["plan", "--workload", "serve", "--model", "llama-3.1-8b", "--kv-heads", "4", "--rate", "1"],
            "--model and --kv-heads are mutually",
        ),
        (
            [
                "plan",
                "--workload",
                "serve",
                "--model",
                "llama-3.1-8b",
                "--sliding-window",
                "4096",
                "--rate",
                "1",
            ],
            "--model and --sliding-window are mutually",
        ),
    ],
)
def test_model_flags_that_would_be_ignored_are_errors(capsys, argv, msg):
    rc, _, err = run(capsys, *argv)
    assert rc == 2 and msg in err and len(err.strip().splitlines()) == 1


def test_plan_serves_long_prompts_on_a_custom_shape(capsys):
    """A custom shape has no context window: plan's serve sizes it to the request (it refused a
    30000-token prompt against a made-up max_seq of 2048, which no flag could change)."""
    argv = ["plan", "--workload", "serve", *SHAPE_7B, "--rate", "1", "--input-tokens", "30000", "--json"]
    rc, out, _ = run(capsys, *argv)
    assert rc == 0
    full = json.loads(out)
    rc, out, _ = run(capsys, *argv, "--sliding-window", "4096")
    assert rc == 0
    windowed = json.loads(out)
    assert full["plans"] and windowed["plans"]

    def cheapest(r):  # USD per million output tokens of the cheapest plan
        return min(p["usd_per_million_tokens"] for p in r["plans"])

    assert cheapest(windowed) < cheapest(full)  # a 4096-token window: less KV cache, fewer attention FLOPs


# ------------------------------------------------------------------ audit 2: serve, train-time, scaling, comm
def _one_line_error(capsys, *argv, msg):
    rc, _, err = run(capsys, *argv)
    assert rc == 2 and msg in err and len(err.strip().splitlines()) == 1, (rc, err)


def test_serve_rate_too_slow_to_simulate_is_an_error(capsys):
    """--rate 1e-300 put 400 arrivals near t = 4e302 s, where a 1.4 s request adds nothing to the clock:
    the simulation printed 'latency p50 0 s, p99 0 s' with exit 0."""
    from gpukit.inference import serve, simulate

    _one_line_error(
        capsys,
        "serve",
        "--model",
        "llama-3-8b",
        "--gpu",
        "h100-sxm",
        "--rate",
        "1e-300",
        msg="rate must be >= 1e-06 req/s",
    )
    with pytest.raises(ValueError, match="rate must be >= 1e-06"):
        simulate(
            lambda b, c: 0.01, lambda n: 0.03, rate=1e-12, input_tokens=10, output_tokens=10, max_batch=4
        )
    slow = serve("llama-3-8b", "h100-sxm", rate=1e-6, simulate_requests=50)  # the slowest rate still resolves
    assert slow.simulation.p50_latency_s == pytest.approx(slow.request_latency_s, rel=0.01)


def test_serve_batch_beyond_any_engine_is_an_error(capsys):
    """--batch 10**20 printed a KV cache of 1.5e19 GiB and an ITL of 1e19 ms as a plan."""
    _one_line_error(
        capsys,
        "serve",
        "--model",
        "llama-3-8b",
        "--gpu",
        "h100-sxm",
        "--batch",
        str(10**20),
        msg="batch must be <= 100,000",
    )


def test_serve_bound_is_the_steps_not_the_matmuls(capsys):
    """At batch 300 and 5,500 tokens the weight matmuls are compute-bound (21 ms) but the KV-cache reads
    take 59 of the 82 ms step: the text said '(compute-bound)' and JSON decode_bound 'compute'."""
    from gpukit.inference import serve

    argv = [
        "serve",
        "--model",
        "llama-3.1-70b",
        "--gpu",
        "h100-sxm",
        "--gpus",
        "2",
        "--precision",
        "fp8",
        "--kv-dtype",
        "fp8",
        "--input-tokens",
        "5000",
        "--output-tokens",
        "500",
        "--batch",
        "300",
    ]
    p = serve(
        "llama-3.1-70b",
        "h100-sxm",
        gpus=2,
        precision="fp8",
        kv_dtype="fp8",
        input_tokens=5000,
        output_tokens=500,
        batch=300,
    )
    assert p.decode.bound == "compute" and p.decode.attn_s > 2 * p.decode.dense_s
    assert p.decode.step_bound == "memory"
    rc, out, _ = run(capsys, *argv)
    assert rc == 0 and "(memory-bound: attention over the KV cache" in out and "(compute-bound)" not in out
    rc, out, _ = run(capsys, *argv, "--json")
    d = json.loads(out)
    assert d["decode_bound"] == "memory" and d["decode_dense_bound"] == "compute"
    small = serve("llama-3-8b", "h100-sxm")  # batch 1: both memory-bound, the text as before
    assert small.decode.step_bound == small.decode.bound == "memory" and "(memory-bound)" in small.to_text()


def test_serve_fit_hint_uses_the_kv_dtype():
    """The 'needs --gpus N' hint sized the KV cache in bf16 whatever --kv-dtype said: with an fp8 cache
    it asked for 8 GPUs where 4 hold it."""
    from gpukit.inference import serve

    kw = dict(kv_dtype="fp8", batch=64, context=8192)
    p = serve("llama-3-70b", "h100-sxm", gpus=2, **kw)
    assert not p.fits and any("needs --gpus 4 (tp=4, pp=1)" in n for n in p.notes), p.notes
    assert serve("llama-3-70b", "h100-sxm", gpus=4, **kw).fits


def test_serve_states_what_the_precision_flags_assume():
    """A bf16 KV cache on a GPU without bf16 units got no word (bf16 weights did); quantized weights
    kept embeddings and the LM head in 16-bit without saying so."""
    from gpukit.inference import serve

    assert any(
        "no bf16 units: a 16-bit KV cache is held as fp16" in n
        for n in serve("llama-3-8b", "v100-32gb", kv_dtype="bf16").notes
    )
    assert not any("KV cache is held" in n for n in serve("llama-3-8b", "v100-32gb").notes)
    for precision in ("fp8", "int8", "int4"):
        assert any(
            "embeddings, LM head and norms stay 16-bit" in n
            for n in serve("llama-3-8b", "h100-sxm", precision=precision).notes
        )
    assert not any("stay 16-bit" in n for n in serve("llama-3-8b", "h100-sxm").notes)


def test_train_time_needs_a_token_per_gpu(capsys):
    """--gpus 10**20 on 15T tokens printed '0.0 us, 541,894 GPU-hours'; --tokens 1e-3 printed 0 GPU-hours."""
    _one_line_error(
        capsys,
        "train-time",
        "--model",
        "llama-3-8b",
        "--tokens",
        "15T",
        "--gpu",
        "h100-sxm",
        "--gpus",
        str(10**20),
        msg="tokens must be at least n_gpus",
    )
    _one_line_error(
        capsys,
        "train-time",
        "--model",
        "llama-3-8b",
        "--tokens",
        "1e-3",
        "--gpu",
        "h100-sxm",
        "--gpus",
        "8",
        msg="tokens must be at least n_gpus",
    )
    with pytest.raises(ValueError, match="tokens must be at least n_gpus"):
        time_to_train("llama-3-8b", 100, "h100-sxm", 1000)


@pytest.mark.parametrize(
    "extra, msg",
    [
        (
            ["--tokens-per-gpu", "16384", "--inter-link", "ib-hdr"],
            "--inter-link sets the network between nodes",
        ),
        (
            ["--tokens-per-gpu", "16384", "--ports-per-node", "2"],
            "--ports-per-node sets the network between nodes",
        ),
        (["--tokens-per-gpu", "16384", "--efficiency", "0.5"], "--efficiency sets the network between nodes"),
        (["--global-batch-tokens", "4"], "global_batch_tokens must be at least gpus x grad_accum = 8 x 1"),
        (["--tokens-per-gpu", "0.5"], "tokens_per_gpu must be at least 1"),
    ],
)
def test_scaling_flags_that_change_nothing_or_leave_no_token(capsys, extra, msg):
    """On 8 GPUs of one node the inter-node flags changed nothing, silently; a global batch of 4 tokens
    on 8 GPUs gave a step of half a token per GPU."""
    _one_line_error(
        capsys, "scaling", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--gpus", "8", *extra, msg=msg
    )
    if "--inter-link" in extra:  # a count past the node makes the same flag count
        rc, out, _ = run(
            capsys, "scaling", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--gpus", "8,16", *extra
        )
        assert rc == 0 and "ib-hdr" in out


def test_comm_flat_past_a_node_states_the_fabric(capsys):
    """16 GPUs 'over nvlink4' priced one NVLink domain of 16 (a node holds 8) without a word."""
    rc, out, _ = run(
        capsys, "comm", "--op", "all_reduce", "--bytes", "1GB", "--gpus", "16", "--link", "nvlink4"
    )
    assert rc == 0 and "assumes: all 16 GPUs on one nvlink4 fabric" in out
    rc, out, _ = run(
        capsys, "comm", "--op", "all_reduce", "--bytes", "1GB", "--gpus", "16", "--link", "nvlink4", "--json"
    )
    assert rc == 0 and "NVLink Switch" in json.loads(out)["assumptions"][0]
    for argv in (["--gpus", "8", "--link", "nvlink4"], ["--gpus", "16", "--link", "ib-ndr"]):
        rc, out, _ = run(capsys, "comm", "--op", "all_reduce", "--bytes", "1GB", *argv)
        assert rc == 0 and "assumes:" not in out


def test_serve_price_without_capacity_says_why(capsys):
    """--price-per-gpu-hour on a layout that does not fit printed no cost line and no reason."""
    rc, out, _ = run(
        capsys, "serve", "--model", "llama-3-70b", "--gpu", "h100-sxm", "--price-per-gpu-hour", "2"
    )
    assert rc == 0 and "cost: n/a (no replica has capacity" in out
    rc, out, _ = run(
        capsys, "serve", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--price-per-gpu-hour", "2"
    )
    assert rc == 0 and "cost: $" in out and "n/a" not in out


def test_an_encoders_attention_is_full_and_it_does_not_decode(capsys):
    """BERT attends both ways (Devlin et al. 2019 sec. 3), but flops/train-time counted its attention
    causal (half) and `flops --mode decode` priced generated tokens for it."""
    bert = catalog.get_model("bert-large")
    f = flops_per_token(bert, seq_len=512)
    assert not f.causal and f.get("attention_forward") == 4.0 * 24 * 1024 * 512  # 4 L H Q T, T keys per token
    assert flops_per_token("gpt2", seq_len=1024).causal  # a decoder stays causal
    with pytest.raises(ValueError, match="encoder attends both ways"):
        flops_per_token(bert, seq_len=512, causal=True)
    assert time_to_train(bert, 1e9, "h100-sxm", 8).flops == pytest.approx(
        1e9 * f.hardware_flops + 1e9 * 6 * bert.vocab * bert.hidden
    )
    rc, out, _ = run(capsys, "flops", "--model", "bert-large", "--seq-len", "512")
    assert rc == 0 and "attention full (bert-large is an encoder" in out
    _one_line_error(
        capsys,
        "flops",
        "--model",
        "bert-large",
        "--seq-len",
        "512",
        "--mode",
        "decode",
        msg="mode decode needs a decoder",
    )
    _one_line_error(
        capsys,
        "roofline",
        "--gpu",
        "h100-sxm",
        "--model",
        "bert-large",
        "--seq-len",
        "1",
        "--mode",
        "decode",
        "--context",
        "512",
        msg="mode decode needs a decoder",
    )
