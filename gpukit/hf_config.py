"""A ModelSpec from a Hugging Face config.json on disk: any model, not only the catalog's rows.

`load_hf_config(path)` reads a local config.json (no hub access: this works offline) and maps its fields to
gpukit.specs.ModelSpec by the `architectures` entry, the way the transformers class of that name reads
them (field names as in transformers' configuration_<model>.py):

  LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM     the Llama block
  MixtralForCausalLM, Qwen2MoeForCausalLM, Qwen3MoeForCausalLM                 + routed (and shared) experts
  DeepseekV3ForCausalLM                                                        + MLA, shared expert, dense lead
  GptOssForCausalLM                                                            + biases, alternating windows
  Llama4ForConditionalGeneration, Llama4ForCausalLM                            text model: top-1 + shared expert
  Gemma2ForCausalLM                                                            GeGLU, head_dim 256, windows
  GPT2LMHeadModel, OPTForCausalLM                                              the GPT block

An architecture not in that list, a missing field, a file that is not JSON or not a file: one-line
ValueError naming it. What the config cannot say is named in `HFConfig.notes` (the pretraining length
is taken from rope_scaling's original_max_position_embeddings or gpt-oss's initial_context_length, else the
window); parameters ModelSpec leaves out (Qwen's q/k biases and q/k norms, gpt-oss's attention sinks, Gemma
2's extra norms) are under 0.01% of the count (tests/test_hf_config.py compares each fixture with the
transformers count in gpukit/data/models.csv).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from gpukit.specs import ModelSpec

LLAMA_LIKE = ("LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM")
MOE_LIKE = ("MixtralForCausalLM", "Qwen2MoeForCausalLM", "Qwen3MoeForCausalLM")
ARCHITECTURES = (
    *LLAMA_LIKE,
    *MOE_LIKE,
    "DeepseekV3ForCausalLM",
    "GptOssForCausalLM",
    "Llama4ForConditionalGeneration",
    "Llama4ForCausalLM",
    "Gemma2ForCausalLM",
    "GPT2LMHeadModel",
    "OPTForCausalLM",
)
_LLAMA_BLOCK = {"mlp": "swiglu", "norm": "rmsnorm", "position": "rope", "bias": False, "dropout": False}
_MAX_BYTES = 10 * 2**20  # a config.json is a few KB; a larger file is not one


@dataclass(frozen=True)
class HFConfig:
    """What a config.json gave: the spec, the architecture it was read as, and the assumptions made."""

    spec: ModelSpec
    architecture: str
    path: str
    notes: tuple[str, ...] = ()


class _Fields:
    """A config dict whose missing required field is a one-line ValueError naming it and the file."""

    def __init__(self, d: dict, where: str):
        self.d, self.where = d, where

    def req(self, key: str):
        v = self.d.get(key)
        if v is None:
            raise ValueError(f"{self.where}: missing field {key!r} (needed for {self.d['architectures'][0]})")
        return v

    def opt(self, key: str, default=None):
        v = self.d.get(key)
        return default if v is None else v


def _read_json(path) -> tuple[dict, str]:
    p = Path(path)
    where = str(path)
    if not p.exists():
        raise ValueError(f"{where}: no such file")
    if not p.is_file():
        raise ValueError(f"{where}: not a file (give the path of a config.json)")
    if p.stat().st_size > _MAX_BYTES:
        raise ValueError(f"{where}: {p.stat().st_size} bytes is not a config.json (at most 10 MiB)")
    try:
        d = json.loads(p.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{where}: not JSON ({str(e).splitlines()[0]})") from None
    except OSError as e:
        raise ValueError(f"{where}: cannot read ({e.strerror or type(e).__name__})") from None
    if not isinstance(d, dict):
        raise ValueError(f"{where}: not a config.json (a JSON object), got a {type(d).__name__}")
    return d, where


def _train_seq_len(f: _Fields, max_seq: int, notes: list[str]) -> int:
    """The pretraining length a config implies: rope_scaling's original_max_position_embeddings (Llama 3.1,
    DeepSeek-V3 YaRN), gpt-oss's initial_context_length, else the window itself (named in the notes)."""
    rs = f.opt("rope_scaling") or f.opt("rope_parameters") or {}
    orig = rs.get("original_max_position_embeddings") if isinstance(rs, dict) else None
    orig = orig or f.opt("initial_context_length")
    if isinstance(orig, int) and 0 < orig <= max_seq:
        notes.append(
            f"train_seq_len {orig}: the pre-extension context of rope_scaling/initial_context_length"
        )
        return orig
    notes.append(
        f"train_seq_len = max_position_embeddings {max_seq} (the config gives no pretraining length)"
    )
    return max_seq


def _name(d: dict, path: str) -> str:
    """The model's name: config _name_or_path's last part, else the file's stem (a folder's name for a
    file called config.json)."""
    n = d.get("_name_or_path")
    if isinstance(n, str) and n.strip("/"):
        return n.strip("/").split("/")[-1].lower()
    p = Path(path)
    if p.stem != "config":
        return p.stem.lower()
    parts = p.resolve().parts
    for part in reversed(parts[:-1]):  # the hub cache: models--Org--Name/snapshots/<commit>/config.json
        if part.startswith("models--"):
            return part.split("--")[-1].lower()
    return parts[-2].lower() if len(parts) > 1 else "hf-config"


def spec_from_hf_dict(d: dict, where: str = "config.json", name: str | None = None) -> HFConfig:
    """HFConfig from a config.json already parsed into `d` (`where` names it in errors)."""
    try:
        return _spec_from_hf_dict(d, where, name)
    except (TypeError, AttributeError, KeyError) as e:  # a field of the wrong JSON type ("4096", a list, ...)
        raise ValueError(
            f"{where}: a field has the wrong type for its architecture ({type(e).__name__}: {e})"
        ) from None


def _spec_from_hf_dict(d: dict, where: str, name: str | None) -> HFConfig:
    if not isinstance(d, dict):
        raise ValueError(f"{where}: not a config.json (a JSON object), got a {type(d).__name__}")
    archs = d.get("architectures")
    if not isinstance(archs, list) or not archs or not isinstance(archs[0], str):
        raise ValueError(
            f"{where}: missing field 'architectures' (a list naming the transformers class, e.g. "
            "['LlamaForCausalLM'])"
        )
    arch = archs[0]
    if arch not in ARCHITECTURES:
        raise ValueError(
            f"{where}: architecture {arch!r} is not supported; supported: {', '.join(ARCHITECTURES)}"
        )
    notes: list[str] = []
    name = name or _name(d, where)
    if arch.startswith("Llama4"):
        text = d.get("text_config", d)
        if not isinstance(text, dict):
            raise ValueError(f"{where}: 'text_config' must be an object, got {type(text).__name__}")
        d = {**text, "architectures": [arch], "tie_word_embeddings": d.get("tie_word_embeddings", False)}
        notes.append("Llama 4: the text model only (the vision encoder is not counted)")
    f = _Fields(d, where)
    if arch == "GPT2LMHeadModel":
        kw = _gpt2(f)
    elif arch == "OPTForCausalLM":
        kw = _opt(f)
    else:
        kw = _llama_family(f, arch, notes)
    max_seq = kw["max_seq"]
    if arch not in ("GPT2LMHeadModel", "OPTForCausalLM"):
        kw["train_seq_len"] = _train_seq_len(f, max_seq, notes)
    try:
        spec = ModelSpec(name=name, **kw)
    except ValueError as e:
        raise ValueError(f"{where}: {e}") from None
    return HFConfig(spec, arch, where, tuple(notes))


def _gpt2(f: _Fields) -> dict:
    h = f.req("n_embd")
    return dict(
        n_layers=f.req("n_layer"),
        hidden=h,
        n_heads=f.req("n_head"),
        ffn_hidden=f.opt("n_inner") or 4 * h,
        vocab=f.req("vocab_size"),
        max_seq=f.req("n_positions"),
        tied_embeddings=True,  # GPT2LMHeadModel ties lm_head to wte
        mlp="gelu",
        norm="layernorm",
        position="learned",
        bias=True,
        dropout=bool(f.opt("resid_pdrop", 0.1)),
    )


def _opt(f: _Fields) -> dict:
    h = f.req("hidden_size")
    if f.opt("word_embed_proj_dim", h) != h:
        raise ValueError(
            f"{f.where}: word_embed_proj_dim {f.d['word_embed_proj_dim']} != hidden_size {h} (OPT-350m's "
            "projected embeddings) is not supported"
        )
    return dict(
        n_layers=f.req("num_hidden_layers"),
        hidden=h,
        n_heads=f.req("num_attention_heads"),
        ffn_hidden=f.req("ffn_dim"),
        vocab=f.req("vocab_size"),
        max_seq=f.req("max_position_embeddings"),
        tied_embeddings=bool(f.opt("tie_word_embeddings", True)),
        mlp="gelu",  # ReLU: the same two matrices
        norm="layernorm",
        position="learned",
        bias=True,
        dropout=bool(f.opt("dropout", 0.1)),
    )


def _alternation(f: _Fields, n_layers: int) -> int:
    """full_attention_every from gpt-oss's layer_types: layer i is full when (i + 1) % k == 0."""
    types = f.opt("layer_types")
    if not types:
        return 2  # transformers GptOssConfig's default pattern: sliding, full, sliding, ...
    full = [t == "full_attention" for t in types]
    for k in range(1, n_layers + 1):
        if full == [(i + 1) % k == 0 for i in range(len(types))]:
            return k
    raise ValueError(
        f"{f.where}: layer_types is not a periodic 'every k-th layer full' pattern; not supported"
    )


def _llama_family(f: _Fields, arch: str, notes: list[str]) -> dict:
    n_layers, heads = f.req("num_hidden_layers"), f.req("num_attention_heads")
    kw: dict = dict(
        _LLAMA_BLOCK,
        n_layers=n_layers,
        hidden=f.req("hidden_size"),
        n_heads=heads,
        n_kv_heads=f.opt("num_key_value_heads", heads),
        ffn_hidden=f.req("intermediate_size"),
        vocab=f.req("vocab_size"),
        max_seq=f.req("max_position_embeddings"),
        tied_embeddings=bool(f.opt("tie_word_embeddings", arch == "Gemma2ForCausalLM")),
        head_dim=f.opt("head_dim"),
    )
    if f.opt("attention_bias") or f.opt("mlp_bias"):
        kw["bias"] = True
        if arch != "GptOssForCausalLM" and not (f.opt("attention_bias") and f.opt("mlp_bias")):
            notes.append(
                "attention_bias/mlp_bias: ModelSpec has one bias flag, so biases are counted on both"
            )
    if arch in ("Qwen2ForCausalLM", "Qwen2MoeForCausalLM"):
        notes.append("Qwen2: q/k/v biases not counted (bias=false; under 0.01% of the parameters)")
    if arch in ("Qwen2ForCausalLM", "Qwen3ForCausalLM", "Qwen2MoeForCausalLM", "Qwen3MoeForCausalLM"):
        if f.opt("use_sliding_window", False):
            raise ValueError(
                f"{f.where}: use_sliding_window true (windows on the lower layers) is not supported"
            )
    elif arch in ("MistralForCausalLM", "MixtralForCausalLM") and f.opt("sliding_window"):
        kw["sliding_window"] = f.req("sliding_window")
    if arch == "Gemma2ForCausalLM":
        kw["sliding_window"], kw["full_attention_every"] = f.req("sliding_window"), 2  # local, global, ...
        notes.append("Gemma 2: GeGLU counted as a gated MLP (mlp=swiglu); its 4 norms per block counted as 2")
    if arch == "MixtralForCausalLM":
        kw |= dict(n_experts=f.req("num_local_experts"), experts_per_token=f.req("num_experts_per_tok"))
    elif arch in ("Qwen2MoeForCausalLM", "Qwen3MoeForCausalLM"):
        if f.opt("mlp_only_layers"):
            raise ValueError(
                f"{f.where}: mlp_only_layers {f.d['mlp_only_layers']} is not supported (give [])"
            )
        kw |= dict(
            n_experts=f.req("num_experts"),
            experts_per_token=f.req("num_experts_per_tok"),
            moe_ffn_hidden=f.req("moe_intermediate_size"),
            moe_every=f.opt("decoder_sparse_step", 1),
        )
        if arch == "Qwen2MoeForCausalLM":
            kw |= dict(n_shared_experts=1, shared_ffn_hidden=f.req("shared_expert_intermediate_size"))
    elif arch == "DeepseekV3ForCausalLM":
        if f.opt("moe_layer_freq", 1) != 1:
            raise ValueError(f"{f.where}: moe_layer_freq {f.d['moe_layer_freq']} is not supported (give 1)")
        kw |= dict(
            n_kv_heads=heads,
            head_dim=f.req("qk_nope_head_dim"),
            n_experts=f.req("n_routed_experts"),
            experts_per_token=f.req("num_experts_per_tok"),
            n_shared_experts=f.opt("n_shared_experts", 0),
            moe_ffn_hidden=f.req("moe_intermediate_size"),
            first_dense_layers=f.opt("first_k_dense_replace", 0),
            kv_lora_rank=f.req("kv_lora_rank"),
            q_lora_rank=f.opt("q_lora_rank", 0),
            qk_rope_head_dim=f.req("qk_rope_head_dim"),
            v_head_dim=f.req("v_head_dim"),
            mtp_layers=f.opt("num_nextn_predict_layers", 0),
        )
        if kw["mtp_layers"]:
            notes.append(
                f"{kw['mtp_layers']} multi-token-prediction module(s): noted, not counted in n_params"
            )
    elif arch == "GptOssForCausalLM":
        kw |= dict(
            bias=True,  # attention, router and experts carry biases
            n_experts=f.req("num_local_experts"),
            experts_per_token=f.opt("num_experts_per_tok") or f.req("experts_per_token"),
            sliding_window=f.req("sliding_window"),
            full_attention_every=_alternation(f, n_layers),
        )
        notes.append("gpt-oss: attention sinks not counted; experts ship in MXFP4 (quantization_config)")
    elif arch.startswith("Llama4"):
        step = f.opt("interleave_moe_layer_step", 1)
        kw |= dict(
            ffn_hidden=f.opt("intermediate_size_mlp") or kw["ffn_hidden"],
            n_experts=f.req("num_local_experts"),
            experts_per_token=f.req("num_experts_per_tok"),
            n_shared_experts=1,
            moe_ffn_hidden=f.req("intermediate_size"),
            moe_every=step,
        )
        if f.opt("attention_chunk_size"):
            kw |= dict(sliding_window=f.d["attention_chunk_size"], full_attention_every=4)
            notes.append(
                f"Llama 4: chunked attention (attention_chunk_size {f.d['attention_chunk_size']}) on 3 of 4 "
                "layers modelled as a sliding window (the KV cache bound is right; attended keys overstated)"
            )
    return kw


def read_hf_config(path, name: str | None = None) -> HFConfig:
    """HFConfig (spec, architecture, notes) from the config.json at `path`; ValueError in one line."""
    d, where = _read_json(path)
    return spec_from_hf_dict(d, where, name)


def load_hf_config(path, name: str | None = None) -> ModelSpec:
    """The ModelSpec of the config.json at `path` (a local file: no network). `name` defaults to the
    config's _name_or_path, else the folder's name. ValueError in one line naming the problem."""
    return read_hf_config(path, name).spec
