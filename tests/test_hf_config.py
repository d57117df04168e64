"""gpukit.hf_config: a ModelSpec from a local config.json, and --hf-config on every model-taking command.

The fixtures (tests/fixtures/hf_configs/*.json, cited in the README there) are the published config.json of
catalog rows; each must give the row's shape, hence its exact n_params (which models.csv checks against the
transformers class built from the same config) and active_params."""

from __future__ import annotations

import argparse
import dataclasses
import json
import socket
from pathlib import Path

import pytest
from helpers import run_cli

from gpukit import catalog
from gpukit.cli import build_parser
from gpukit.hf_config import ARCHITECTURES, load_hf_config, read_hf_config

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "hf_configs"
NAMES = sorted(p.stem for p in FIXTURES.glob("*.json"))
# The config cannot say how long the pretraining sequences were: where it names no pre-extension length
# (rope_scaling original_max_position_embeddings, initial_context_length), train_seq_len is the window.
NOT_IN_CONFIG = {"train_seq_len"}


def test_every_fixture_is_a_catalog_row_and_every_architecture_has_one():
    assert len(NAMES) >= 14
    assert set(NAMES) <= set(catalog.models())
    archs = {json.loads((FIXTURES / f"{n}.json").read_text())["architectures"][0] for n in NAMES}
    assert archs >= set(ARCHITECTURES) - {"Qwen2MoeForCausalLM", "Llama4ForCausalLM"}
    readme = (FIXTURES / "README.md").read_text()
    for n in NAMES:
        assert f"`{n}.json`" in readme, f"{n}.json is not cited in tests/fixtures/hf_configs/README.md"


@pytest.mark.parametrize("name", NAMES)
def test_fixture_round_trips_to_the_catalog_row(name):
    spec, row = load_hf_config(FIXTURES / f"{name}.json"), catalog.get_model(name)
    assert spec.name == name
    assert spec.n_params == row.n_params
    assert spec.active_params == row.active_params
    fields = {f.name for f in dataclasses.fields(row)} - {"name", "published_params"} - NOT_IN_CONFIG
    diff = {f: (getattr(spec, f), getattr(row, f)) for f in fields if getattr(spec, f) != getattr(row, f)}
    assert not diff, diff


def test_moe_fixtures_give_the_published_active_figures():
    for name in ("deepseek-v3", "gpt-oss-120b", "mixtral-8x7b", "qwen3-30b-a3b", "llama-4-scout"):
        pub = catalog.published_counts(name)
        got = pub.comparable_active(load_hf_config(FIXTURES / f"{name}.json"))
        assert pub.active is not None and abs(pub.off_pct(got, pub.active)) <= pub.tolerance_pct, name


def test_assumptions_are_named():
    qwen = read_hf_config(FIXTURES / "qwen3-8b.json")
    assert qwen.architecture == "Qwen3ForCausalLM"
    assert any("train_seq_len = max_position_embeddings 40960" in n for n in qwen.notes)
    llama = read_hf_config(FIXTURES / "llama-3.3-70b.json")
    assert llama.spec.train_seq_len == 8192 and any("rope_scaling" in n for n in llama.notes)
    scout = read_hf_config(FIXTURES / "llama-4-scout.json")
    assert any("vision encoder is not counted" in n for n in scout.notes)
    assert any("chunked attention" in n for n in scout.notes)
    ds = read_hf_config(FIXTURES / "deepseek-v3.json")
    assert ds.spec.mtp_layers == 1 and any("multi-token-prediction" in n for n in ds.notes)


def test_loading_needs_no_network(monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("hf_config opened a socket")

    monkeypatch.setattr(socket, "socket", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    assert load_hf_config(FIXTURES / "mixtral-8x7b.json").n_experts == 8


# ------------------------------------------------------------------------------- bad files
def _write(tmp_path, text: str, name: str = "config.json") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def _fixture_without(tmp_path, name: str, field: str) -> Path:
    d = json.loads((FIXTURES / f"{name}.json").read_text())
    del d[field]
    return _write(tmp_path, json.dumps(d))


@pytest.mark.parametrize(
    "make, match",
    [
        (
            lambda t: _fixture_without(t, "mixtral-8x7b", "num_local_experts"),
            "missing field 'num_local_experts'",
        ),
        (lambda t: _fixture_without(t, "deepseek-v3", "kv_lora_rank"), "missing field 'kv_lora_rank'"),
        (lambda t: _fixture_without(t, "gpt2", "n_embd"), "missing field 'n_embd'"),
        (lambda t: _fixture_without(t, "qwen3-8b", "architectures"), "missing field 'architectures'"),
        (
            lambda t: _write(t, json.dumps({"architectures": ["MambaForCausalLM"], "hidden_size": 8})),
            "architecture 'MambaForCausalLM' is not supported; supported: LlamaForCausalLM",
        ),
        (lambda t: _write(t, "{not json"), "not JSON"),
        (lambda t: _write(t, "[1, 2]"), "not a config.json"),
        (lambda t: t, "not a file"),
        (lambda t: t / "absent.json", "no such file"),
        (
            lambda t: _write(
                t,
                json.dumps(
                    json.loads((FIXTURES / "qwen3-8b.json").read_text()) | {"use_sliding_window": True}
                ),
            ),
            "use_sliding_window true",
        ),
        (
            lambda t: _write(
                t,
                json.dumps(
                    json.loads((FIXTURES / "gpt-oss-20b.json").read_text())
                    | {"layer_types": ["full_attention"] + ["sliding_attention"] * 23}
                ),
            ),
            "layer_types is not a periodic",
        ),
        (
            lambda t: _write(
                t,
                json.dumps(
                    json.loads((FIXTURES / "mixtral-8x7b.json").read_text()) | {"num_experts_per_tok": 9}
                ),
            ),
            "experts_per_token must be in",
        ),
    ],
)
def test_bad_config_is_one_line_naming_it_and_exit_2(tmp_path, capsys, make, match):
    path = make(tmp_path)
    with pytest.raises(ValueError, match=match) as e:
        load_hf_config(path)
    assert "\n" not in str(e.value) and str(path) in str(e.value)
    rc, out, err = run_cli(capsys, "memory", "--hf-config", str(path))
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and "--hf-config" in err and match.split("'")[0] in err
    assert "Traceback" not in err


# ------------------------------------------------------------------------------- the command line
def _model_commands(parser, path=()):
    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            for n, sub in a.choices.items():
                yield from _model_commands(sub, (*path, n))
    opts = {o for a in parser._actions for o in a.option_strings}
    if "--model" in opts:
        yield path, opts


def test_every_model_taking_command_has_hf_config():
    cmds = list(_model_commands(build_parser()))
    assert len(cmds) >= 8
    for path, opts in cmds:
        assert "--hf-config" in opts, " ".join(path)


@pytest.mark.parametrize(
    "argv",
    [
        ["memory"],
        ["flops", "--seq-len", "64"],
        ["roofline", "--gpu", "h100-sxm", "--seq-len", "64"],
        ["scaling", "--tokens-per-gpu", "8192"],
        ["serve", "--gpu", "h100-sxm"],
    ],
)
def test_hf_config_and_model_are_mutually_exclusive(capsys, argv):
    rc, out, err = run_cli(capsys, *argv, "--model", "gpt2", "--hf-config", str(FIXTURES / "gpt2.json"))
    assert rc == 2 and out == "" and "--hf-config" in err and "--model" in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    "argv",
    [
        ["memory", "--json"],
        ["flops", "--seq-len", "512", "--json"],
        ["roofline", "--gpu", "h100-sxm", "--seq-len", "512", "--json"],
        ["train-time", "--tokens", "1B", "--gpu", "h100-sxm", "--gpus", "8", "--json"],
        ["serve", "--gpu", "h100-sxm", "--json"],
    ],
)
def test_hf_config_answers_as_the_catalog_row_does(capsys, argv):
    """gpt2's config.json gives the gpt2 row (same shape, same pretraining length): the same answer."""
    rc1, by_name, _ = run_cli(capsys, *argv, "--model", "gpt2")
    rc2, by_file, _ = run_cli(capsys, *argv, "--hf-config", str(FIXTURES / "gpt2.json"))
    assert rc1 == rc2 == 0
    assert json.loads(by_file) == json.loads(by_name)


def test_hf_config_moe_through_the_cli(capsys):
    rc, out, err = run_cli(
        capsys, "memory", "--hf-config", str(FIXTURES / "gpt-oss-120b.json"), "--inference", "--json"
    )
    assert rc == 0, err
    d = json.loads(out)
    assert d["n_params"] == catalog.get_model("gpt-oss-120b").n_params


@pytest.mark.parametrize(
    "patch",
    [
        {"max_position_embeddings": "4096"},
        {"hidden_size": [4096]},
        {"num_hidden_layers": None},
        {"num_key_value_heads": 7},
        {"architectures": "LlamaForCausalLM"},
    ],
)
def test_wrong_field_types_are_one_line_value_errors(tmp_path, patch):
    d = json.loads((FIXTURES / "llama-3.3-70b.json").read_text()) | patch
    path = _write(tmp_path, json.dumps(d))
    with pytest.raises(ValueError) as e:
        load_hf_config(path)
    assert "\n" not in str(e.value) and str(path) in str(e.value)


def test_llama4_text_config_must_be_an_object(tmp_path):
    d = json.loads((FIXTURES / "llama-4-scout.json").read_text()) | {"text_config": 3}
    with pytest.raises(ValueError, match="'text_config' must be an object"):
        load_hf_config(_write(tmp_path, json.dumps(d)))


def test_the_api_takes_a_config_path_wherever_it_takes_a_model():
    """catalog.as_model (what every calculator calls on model=) reads a .json path or a Path: the same
    spec as load_hf_config; a bad path is one line naming the argument."""
    from gpukit.memory import estimate_memory

    path = FIXTURES / "qwen3-8b.json"
    assert catalog.as_model(path) == catalog.as_model(str(path)) == load_hf_config(path)
    by_path = estimate_memory(str(FIXTURES / "gpt2.json"))
    assert by_path.total_bytes == estimate_memory("gpt2").total_bytes
    with pytest.raises(ValueError, match=r"^model: .*absent\.json: no such file$"):
        catalog.as_model(str(FIXTURES / "absent.json"))
    with pytest.raises(ValueError, match="did you mean|unknown"):
        catalog.as_model("qwen3-8b-typo")


def test_models_hf_config_shows_the_row_and_its_assumptions(capsys):
    """`gpukit models --hf-config PATH`: the spec a config gives, nothing published, the assumptions said."""
    path = str(FIXTURES / "qwen3-30b-a3b.json")
    rc, out, err = run_cli(capsys, "models", "--hf-config", path, "--json")
    assert rc == 0, err
    (row,) = json.loads(out)
    m = catalog.get_model("qwen3-30b-a3b")
    assert (row["n_params"], row["active_params"]) == (m.n_params, m.active_params)
    assert row["published_params"] is None and row["published_active_params"] is None
    assert (
        "Qwen3MoeForCausalLM" in row["source"]
        and "train_seq_len = max_position_embeddings" in row["train_source"]
    )
    rc, out, _ = run_cli(capsys, "models", "--hf-config", path)
    assert rc == 0 and "note: train_seq_len = max_position_embeddings 40960" in out
    rc, out, err = run_cli(capsys, "models", "gpt2", "--hf-config", path)
    assert rc == 2 and out == "" and "not both" in err


def test_the_name_comes_from_the_file_or_the_hub_cache_folder(tmp_path):
    text = (FIXTURES / "qwen3-8b.json").read_text()
    snap = tmp_path / "models--Qwen--Qwen3-8B" / "snapshots" / ("a" * 40)
    snap.mkdir(parents=True)
    assert load_hf_config(_write(snap, text)).name == "qwen3-8b"
    (tmp_path / "my-model").mkdir()
    assert load_hf_config(_write(tmp_path / "my-model", text)).name == "my-model"
    assert load_hf_config(_write(tmp_path, text, "other.json")).name == "other"
    assert load_hf_config(FIXTURES / "qwen3-8b.json", name="mine").name == "mine"
