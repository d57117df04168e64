"""The model flags of every model-taking subcommand, and the one builder of a custom shape.

`add_model_args(parser)` adds --model (a catalog row), --hf-config (a local Hugging Face config.json,
read by gpukit.hf_config: no network), optionally --params (a bare count), and the custom shape: --layers/--hidden/--heads (old spellings --n-layers, --n-heads), --kv-heads,
--ffn-hidden, --vocab, --mlp, --norm, --position, --sliding-window. `model_from_args(args)` turns
them into a ModelSpec (or a count), the same block for the same flags under every subcommand:

- the GPT block by default: GeLU MLP of 4 x hidden, LayerNorm, learned positions, biases, dropout
  in its training recipe (Radford et al. 2019; Megatron-LM, Shoeybi et al. 2019);
- `--mlp swiglu` is the Llama block: SwiGLU of 8/3 x hidden rounded up to 256, RMSNorm, RoPE, no
  biases, no dropout (Touvron et al. 2023 sec. 2.2); `--norm` and `--position` override the norm
  and positions the --mlp picked (`--mlp swiglu --norm rmsnorm --position rope` spells it out);
- a custom shape has no context window of its own: max_seq is at least 2048 and stretches to the
  longest sequence the command is asked about, so it never refuses a length for a made-up window.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpukit.cli.argtypes import parse_param_count
from gpukit.specs import MLP_KINDS, NORM_KINDS, POSITION_KINDS, ModelSpec

SHAPE_FLAGS = (
    "layers",
    "hidden",
    "heads",
    "kv_heads",
    "ffn_hidden",
    "vocab",
    "mlp",
    "norm",
    "position",
    "sliding_window",
)
CUSTOM_VOCAB = 50257  # GPT-2's vocabulary (Radford et al. 2019), ModelSpec's default
CUSTOM_MIN_SEQ = 2048  # the smallest context window a custom shape gets


@dataclass(frozen=True)
class ModelChoice:
    """What the model flags gave: a ModelSpec, or a bare parameter count (model None), and for a
    custom shape the defaults picked for it, field -> words (the text output says them)."""

    model: ModelSpec | None
    n_params: int | None = None
    custom: bool = False
    defaults: tuple[tuple[str, str], ...] = ()


def add_model_args(p, *, params: bool = False):
    """Add the model flags to parser `p` (a group); with `params`, --params N too."""
    what = (
        "--model, --hf-config, --params, or --layers/--hidden/--heads"
        if params
        else "--model, --hf-config, or --layers/--hidden/--heads"
    )
    g = p.add_argument_group(f"model (one of: {what})")
    g.add_argument("--model", help="catalog model name (`gpukit models`)")
    add_hf_config_arg(g)
    if params:
        g.add_argument(
            "--params", help="bare parameter count (7e9, 7B, 125M): model states only, no activations"
        )
    p.set_defaults(**({} if params else {"params": None}), _takes_params=params)
    g.add_argument("--layers", "--n-layers", dest="layers", type=int, help="n_layers of a custom shape")
    g.add_argument("--hidden", type=int, help="hidden size")
    g.add_argument("--heads", "--n-heads", dest="heads", type=int, help="n_heads")
    g.add_argument("--kv-heads", dest="kv_heads", type=int, help="n_kv_heads (grouped-query attention)")
    g.add_argument(
        "--ffn-hidden",
        dest="ffn_hidden",
        type=int,
        help="MLP width (default 4*hidden; swiglu: 8/3*hidden rounded up to 256)",
    )
    g.add_argument("--vocab", type=int, help=f"vocabulary size (default {CUSTOM_VOCAB}, GPT-2's)")
    g.add_argument(
        "--mlp",
        choices=MLP_KINDS,
        help="gelu (default): the GPT block; swiglu: the Llama block (RMSNorm, RoPE, no bias, no dropout)",
    )
    g.add_argument(
        "--norm", choices=NORM_KINDS, help="override the block's norm (default: layernorm; swiglu: rmsnorm)"
    )
    g.add_argument(
        "--position",
        choices=POSITION_KINDS,
        help="override the block's positions (default: learned; swiglu: rope)",
    )
    g.add_argument(
        "--sliding-window",
        dest="sliding_window",
        type=int,
        help="attention window in tokens (Mistral 7B v0.1: 4096): the KV cache holds at most W "
        "tokens per sequence (default: full attention)",
    )
    return g


def add_hf_config_arg(g) -> None:
    """--hf-config PATH on parser or group `g` (every model-taking command has it beside --model)."""
    g.add_argument(
        "--hf-config",
        dest="hf_config",
        metavar="PATH",
        help="a local Hugging Face config.json (Llama, Mistral, Mixtral, Qwen2/3 and their MoE, DeepSeek-V3, "
        "gpt-oss, Llama 4, Gemma 2, GPT-2, OPT): the model from its fields, offline",
    )


def hf_config_model(path: str) -> ModelSpec:
    """The ModelSpec of --hf-config PATH; ValueError naming --hf-config and the problem in one line."""
    from gpukit.hf_config import load_hf_config

    try:
        return load_hf_config(path)
    except ValueError as e:
        raise ValueError(f"--hf-config {e}") from None


def model_flag(args) -> ModelSpec | None:
    """The model of --model or --hf-config (None when neither is given), for commands with their own
    --model; ValueError when both are given."""
    from gpukit.catalog import get_model
    from gpukit.errors import named_field

    name, path = _given(args, "model"), _given(args, "hf_config")
    if name is not None and path is not None:
        raise ValueError("--model and --hf-config are mutually exclusive: give the model one way")
    if path is not None:
        return hf_config_model(path)
    return None if name is None else named_field("--model", get_model, name)


def _given(args, name: str):
    return getattr(args, name, None)


def model_from_args(args, *, longest_seq: int = 0) -> ModelChoice:
    """The model the flags give; ValueError naming the flags when they are missing or clash.
    `longest_seq`: the longest sequence the command asks about (a custom shape's window covers it)."""
    from gpukit.catalog import get_model

    dims = [f for f in SHAPE_FLAGS if _given(args, f) is not None]
    flag_list = ", ".join("--" + f.replace("_", "-") for f in dims)
    given = [
        x
        for x, on in (
            ("--model", _given(args, "model") is not None),
            ("--hf-config", _given(args, "hf_config") is not None),
            ("--params", _given(args, "params") is not None),
            (flag_list, bool(dims)),
        )
        if on
    ]
    if len(given) > 1:
        raise ValueError(f"{' and '.join(given)} are mutually exclusive: give the model one way")
    if not given:
        raise ValueError(
            "give the model: --model NAME, --hf-config PATH, "
            + ("--params N, " if _given(args, "_takes_params") else "")
            + "or --layers L --hidden H --heads A"
        )
    if args.model is not None:
        from gpukit.errors import named_field

        return ModelChoice(named_field("--model", get_model, args.model))
    if _given(args, "hf_config") is not None:
        return ModelChoice(hf_config_model(args.hf_config))
    if _given(args, "params") is not None:
        return ModelChoice(None, parse_param_count(args.params))
    missing = [f"--{f}" for f in ("layers", "hidden", "heads") if _given(args, f) is None]
    if missing:
        raise ValueError(f"--layers, --hidden and --heads go together; missing {', '.join(missing)}")
    for flag in ("layers", "hidden", "heads", "kv_heads", "ffn_hidden", "vocab", "sliding_window"):
        v = _given(args, flag)
        if v is not None and v < 1:
            raise ValueError(f"--{flag.replace('_', '-')} must be a positive integer, got {v!r}")
    if args.hidden % args.heads:
        raise ValueError(f"--heads {args.heads} must divide --hidden {args.hidden}")
    return custom_shape(
        layers=args.layers,
        hidden=args.hidden,
        heads=args.heads,
        kv_heads=_given(args, "kv_heads"),
        ffn_hidden=_given(args, "ffn_hidden"),
        vocab=_given(args, "vocab"),
        mlp=_given(args, "mlp"),
        norm=_given(args, "norm"),
        position=_given(args, "position"),
        sliding_window=_given(args, "sliding_window"),
        longest_seq=longest_seq,
    )


def custom_shape(
    *,
    layers: int,
    hidden: int,
    heads: int,
    kv_heads: int | None = None,
    ffn_hidden: int | None = None,
    vocab: int | None = None,
    mlp: str | None = None,
    norm: str | None = None,
    position: str | None = None,
    sliding_window: int | None = None,
    longest_seq: int = 0,
) -> ModelChoice:
    """The custom block (module docstring): GPT unless --mlp swiglu, with the defaults picked named."""
    mlp = mlp or "gelu"
    llama = mlp == "swiglu"
    spec = ModelSpec(
        name="custom",
        n_layers=layers,
        hidden=hidden,
        n_heads=heads,
        n_kv_heads=kv_heads,
        ffn_hidden=ffn_hidden,
        vocab=vocab or CUSTOM_VOCAB,
        max_seq=max(CUSTOM_MIN_SEQ, longest_seq),
        mlp=mlp,
        norm=norm or ("rmsnorm" if llama else "layernorm"),
        position=position or ("rope" if llama else "learned"),
        bias=not llama,
        dropout=not llama,
        sliding_window=sliding_window,
    )
    defaults = [
        (
            "dropout",
            f"dropout masks {'not counted (Llama' if llama else 'counted (GPT'} layout; "
            "--dropout/--no-dropout)",
        )
    ]
    if vocab is None:
        defaults.append(("vocab", f"vocab {spec.vocab} (GPT-2's; --vocab)"))
    if ffn_hidden is None:
        defaults.append(
            (
                "ffn_hidden",
                f"ffn_hidden {spec.ffn_hidden} ("
                + ("8/3 x hidden rounded up to 256, as Llama" if llama else "4 x hidden")
                + "; --ffn-hidden)",
            )
        )
    return ModelChoice(spec, None, True, tuple(defaults))
