"""Model shapes (ModelSpec) and their exact parameter counts.

Vocabulary (STYLE.md): n_layers, hidden, n_heads, n_kv_heads, ffn_hidden, vocab, max_seq (context
window), train_seq_len (pretraining sequence length), dropout, sliding_window (attention span).
Parameter count per layer follows the Megatron GPT layer (Narayanan et al. 2021, sec. 3; Llama
layout in Touvron et al. 2023): attention q,o (h x h) plus k,v (h x kv_heads*head_dim), an MLP of
two (gelu) or three (swiglu) h x ffn matrices, and two norms; plus embeddings, learned positions,
a final norm, and an untied LM head.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

from gpukit.errors import require_choice, require_positive_int

MLP_KINDS = ("gelu", "swiglu")
NORM_KINDS = ("layernorm", "rmsnorm")
POSITION_KINDS = ("learned", "rope")
ARCH_KINDS = ("decoder", "encoder")


@dataclass(frozen=True)
class ModelSpec:
    """A transformer's shape. Only the fields that change memory, FLOPs or bytes moved."""

    name: str
    n_layers: int
    hidden: int
    n_heads: int
    # n_kv_heads, ffn_hidden, head_dim and train_seq_len take None at construction (the default below)
    # and __post_init__ always replaces it by an int: the fields are int, the __init__ that the type
    # checker reads (TYPE_CHECKING below) takes int | None.
    n_kv_heads: int = None  # type: ignore[assignment]  # None -> n_heads (multi-head attention)
    ffn_hidden: int = None  # type: ignore[assignment]  # None -> 4*hidden (gelu) / Llama's 8/3*hidden rounded (swiglu)
    vocab: int = 50257
    max_seq: int = 2048
    tied_embeddings: bool = False
    mlp: str = "gelu"
    norm: str = "layernorm"
    position: str = "learned"
    bias: bool = True
    arch: str = "decoder"
    head_dim: int = None  # type: ignore[assignment]  # None -> hidden / n_heads
    published_params: int | None = field(default=None, compare=False)
    # Sequence length of pretraining (None -> max_seq): what training FLOPs and memory default to.
    # The context window (max_seq) can be much longer (Llama 3.1: 131072, pretrained at 8192).
    train_seq_len: int = None  # type: ignore[assignment]  # resolved by __post_init__, like n_kv_heads
    dropout: bool = True  # the architecture's training recipe applies dropout (Llama, Mistral: no)
    # Sliding-window attention: each token attends to at most this many previous tokens (its own
    # position included), and a rolling buffer of that size holds the KV cache (Mistral 7B v0.1:
    # 4096, Jiang et al. 2023 "Mistral 7B", arXiv:2310.06825, sec. 2; config.json "sliding_window").
    # None: full causal attention. See kv_tokens and mean_attended_keys.
    sliding_window: int | None = None
    # With sliding_window set: 0 -> every layer uses the window (Mistral 7B v0.1); k -> every k-th layer
    # (layer index i with (i + 1) % k == 0) attends over the full context, the others over the window
    # (gpt-oss: alternating, k = 2, OpenAI gpt-oss model card 2025 sec. 2; Gemma 3: 5 local : 1 global, k = 6).
    full_attention_every: int = 0
    # ---- mixture of experts (0 experts: a dense model). Fedus et al. 2021 (Switch), Jiang et al. 2024
    # (Mixtral, arXiv:2401.04088 sec. 2), DeepSeek-AI 2024 (DeepSeek-V3, arXiv:2412.19437 sec. 2.1.2).
    n_experts: int = 0  # routed experts per MoE layer (config.json num_local_experts / n_routed_experts)
    experts_per_token: int = 0  # top-k routed experts per token (num_experts_per_tok)
    n_shared_experts: int = 0  # always-active shared experts per MoE layer (DeepSeek-V3: 1)
    moe_ffn_hidden: int = None  # type: ignore[assignment]  # one expert's intermediate size; None -> ffn_hidden
    shared_ffn_hidden: int = None  # type: ignore[assignment]  # one shared expert's; None -> moe_ffn_hidden
    first_dense_layers: int = 0  # leading layers with a dense MLP (DeepSeek-V3 first_k_dense_replace 3)
    moe_every: int = 1  # after those, layer i is MoE when (i + 1) % moe_every == 0 (Llama 4 Maverick: 2)
    # ---- multi-head latent attention (DeepSeek-V2/V3, arXiv:2405.04434 sec. 2.1): kv_lora_rank 0 -> standard
    # attention. With MLA, head_dim is the per-head non-rotary q/k dim (qk_nope_head_dim), qk_rope_head_dim the
    # decoupled rotary dim, v_head_dim the value dim; the KV cache holds kv_lora_rank + qk_rope_head_dim per token
    # per layer.
    kv_lora_rank: int = 0
    q_lora_rank: int = 0  # 0 -> q projected directly from hidden (DeepSeek-V2-Lite)
    qk_rope_head_dim: int = 0
    v_head_dim: int = None  # type: ignore[assignment]  # None -> head_dim
    # multi-token prediction modules (DeepSeek-V3 sec. 2.2: 1 module, 14B of the 685B checkpoint): noted,
    # not counted in n_params (the report's 671B excludes them)
    mtp_layers: int = 0

    if TYPE_CHECKING:  # the constructor as callers see it: None asks __post_init__ for the default

        def __init__(
            self,
            name: str,
            n_layers: int,
            hidden: int,
            n_heads: int,
            n_kv_heads: int | None = None,
            ffn_hidden: int | None = None,
            vocab: int = 50257,
            max_seq: int = 2048,
            tied_embeddings: bool = False,
            mlp: str = "gelu",
            norm: str = "layernorm",
            position: str = "learned",
            bias: bool = True,
            arch: str = "decoder",
            head_dim: int | None = None,
            published_params: int | None = None,
            train_seq_len: int | None = None,
            dropout: bool = True,
            sliding_window: int | None = None,
            full_attention_every: int = 0,
            n_experts: int = 0,
            experts_per_token: int = 0,
            n_shared_experts: int = 0,
            moe_ffn_hidden: int | None = None,
            shared_ffn_hidden: int | None = None,
            first_dense_layers: int = 0,
            moe_every: int = 1,
            kv_lora_rank: int = 0,
            q_lora_rank: int = 0,
            qk_rope_head_dim: int = 0,
            v_head_dim: int | None = None,
            mtp_layers: int = 0,
        ) -> None: ...

    def __post_init__(self):
        for f in ("n_layers", "hidden", "n_heads", "vocab", "max_seq"):  # 2.0 -> 2: range() needs ints
            object.__setattr__(self, f, require_positive_int(f, getattr(self, f)))
        if self.n_kv_heads is None:
            object.__setattr__(self, "n_kv_heads", self.n_heads)
        object.__setattr__(self, "n_kv_heads", require_positive_int("n_kv_heads", self.n_kv_heads))
        require_choice("mlp", self.mlp, MLP_KINDS)
        require_choice("norm", self.norm, NORM_KINDS)
        require_choice("position", self.position, POSITION_KINDS)
        require_choice("arch", self.arch, ARCH_KINDS)
        if self.head_dim is None:
            if self.hidden % self.n_heads:
                raise ValueError(
                    f"n_heads must divide hidden: hidden {self.hidden} is not a multiple of n_heads {self.n_heads}"
                )
            object.__setattr__(self, "head_dim", self.hidden // self.n_heads)
        object.__setattr__(self, "head_dim", require_positive_int("head_dim", self.head_dim))
        if self.n_heads % self.n_kv_heads:
            raise ValueError(
                f"n_kv_heads must divide n_heads: n_heads {self.n_heads} is not a multiple of n_kv_heads {self.n_kv_heads}"
            )
        if self.ffn_hidden is None:
            if self.mlp == "gelu":
                ffn = 4 * self.hidden
            else:  # Llama: 2/3 of 4h, rounded up to a multiple of 256 (Touvron et al. 2023, model.py)
                ffn = 256 * -(-(8 * self.hidden // 3) // 256)  # integer math: no float overflow
            object.__setattr__(self, "ffn_hidden", ffn)
        object.__setattr__(self, "ffn_hidden", require_positive_int("ffn_hidden", self.ffn_hidden))
        if self.train_seq_len is None:
            object.__setattr__(self, "train_seq_len", self.max_seq)
        object.__setattr__(self, "train_seq_len", require_positive_int("train_seq_len", self.train_seq_len))
        if self.train_seq_len > self.max_seq:
            raise ValueError(f"train_seq_len must be <= max_seq {self.max_seq}, got {self.train_seq_len}")
        if not isinstance(self.dropout, bool):
            raise ValueError(f"dropout must be True or False, got {self.dropout!r}")
        if self.sliding_window is not None:
            w: object = self.sliding_window  # a float 4096.0 from a CSV or JSON is accepted
            if isinstance(w, float) and w.is_integer():
                w = int(w)
            if not isinstance(w, int) or isinstance(w, bool) or w < 1:
                raise ValueError(
                    f"sliding_window must be a positive integer (tokens) or None (full attention), "
                    f"got {self.sliding_window!r}"
                )
            object.__setattr__(self, "sliding_window", w)
        self._check_moe_mla()

    def _check_moe_mla(self) -> None:
        """Validate and resolve the MoE, MLA and attention-pattern fields (defaults: a dense model)."""
        for f in (
            "full_attention_every",
            "n_experts",
            "experts_per_token",
            "n_shared_experts",
            "first_dense_layers",
            "kv_lora_rank",
            "q_lora_rank",
            "qk_rope_head_dim",
            "mtp_layers",
        ):
            v = getattr(self, f)
            if isinstance(v, float) and v.is_integer():
                v = int(v)
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise ValueError(f"{f} must be a whole number >= 0, got {v!r}")
            object.__setattr__(self, f, v)
        object.__setattr__(self, "moe_every", require_positive_int("moe_every", self.moe_every))
        if self.full_attention_every and self.sliding_window is None:
            raise ValueError(
                f"full_attention_every {self.full_attention_every} needs sliding_window (the other layers' span)"
            )
        if self.n_experts:
            if not 1 <= self.experts_per_token <= self.n_experts:
                raise ValueError(
                    f"experts_per_token must be in [1, n_experts {self.n_experts}], got {self.experts_per_token}"
                )
            if self.first_dense_layers >= self.n_layers:
                raise ValueError(
                    f"first_dense_layers must be < n_layers {self.n_layers}, got {self.first_dense_layers}"
                )
        elif self.experts_per_token or self.n_shared_experts:
            raise ValueError(
                "experts_per_token and n_shared_experts need n_experts > 0 (a mixture of experts), "
                f"got n_experts 0, experts_per_token {self.experts_per_token}, n_shared_experts {self.n_shared_experts}"
            )
        moe_f = self.ffn_hidden if self.moe_ffn_hidden is None else self.moe_ffn_hidden
        object.__setattr__(self, "moe_ffn_hidden", require_positive_int("moe_ffn_hidden", moe_f))
        sh = self.moe_ffn_hidden if self.shared_ffn_hidden is None else self.shared_ffn_hidden
        object.__setattr__(self, "shared_ffn_hidden", require_positive_int("shared_ffn_hidden", sh))
        v_dim = self.head_dim if self.v_head_dim is None else self.v_head_dim
        object.__setattr__(self, "v_head_dim", require_positive_int("v_head_dim", v_dim))
        if self.kv_lora_rank == 0 and (self.q_lora_rank or self.qk_rope_head_dim):
            raise ValueError(
                "q_lora_rank and qk_rope_head_dim describe multi-head latent attention: they need kv_lora_rank > 0"
            )

    # ---- mixture of experts and latent attention ----
    @property
    def is_moe(self) -> bool:
        return self.n_experts > 0

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank > 0

    def is_moe_layer(self, i: int) -> bool:
        """Layer i (0-based) has a routed-expert MLP: after first_dense_layers, every moe_every-th layer."""
        return self.is_moe and i >= self.first_dense_layers and (i + 1) % self.moe_every == 0

    @property
    def n_moe_layers(self) -> int:
        # closed form of sum(is_moe_layer(i)): the multiples of moe_every in (first_dense_layers, n_layers]
        if not self.is_moe:
            return 0
        return self.n_layers // self.moe_every - self.first_dense_layers // self.moe_every

    def is_full_attention_layer(self, i: int) -> bool:
        """Layer i attends over the whole context (no sliding window, or the pattern's global layer)."""
        if self.sliding_window is None:
            return True
        return bool(self.full_attention_every) and (i + 1) % self.full_attention_every == 0

    def expert_params(self, ffn: int | None = None) -> int:
        """One expert's MLP (the model's mlp kind and bias) with intermediate `ffn` (default moe_ffn_hidden)."""
        h, f = self.hidden, self.moe_ffn_hidden if ffn is None else ffn
        n = (2 if self.mlp == "gelu" else 3) * h * f
        if self.bias:
            n += f + h if self.mlp == "gelu" else 2 * f + h
        return n

    def router_params(self) -> int:
        """The gate of one MoE layer: hidden x n_experts (+ a bias per expert when the model has biases)."""
        return self.hidden * self.n_experts + (self.n_experts if self.bias else 0) if self.is_moe else 0

    def moe_mlp_params(self, active: bool = False) -> int:
        """The MLP of one MoE layer: router, routed experts (all, or experts_per_token when `active`) and
        shared experts."""
        routed = self.experts_per_token if active else self.n_experts
        return (
            self.router_params()
            + routed * self.expert_params()
            + self.n_shared_experts * self.expert_params(self.shared_ffn_hidden)
        )

    def layer_params_at(self, i: int, active: bool = False) -> int:
        """Parameters of block i: attention, its MLP (dense, or MoE: all experts, or the active ones), norms."""
        mlp = self.moe_mlp_params(active) if self.is_moe_layer(i) else self.mlp_params()
        return self.attention_params() + mlp + 2 * self.norm_params()

    def blocks_params(self, active: bool = False) -> int:
        """All transformer blocks (exact over mixed dense and MoE layers)."""
        if not self.is_moe:
            return self.n_layers * self.layer_params_at(0)
        n_moe = self.n_moe_layers
        return n_moe * self.layer_params_at(self.n_layers - 1, active) + (self.n_layers - n_moe) * (
            self.attention_params() + self.mlp_params() + 2 * self.norm_params()
        )

    @property
    def active_params(self) -> int:
        """Parameters one token passes through: every block with its top-k routed and shared experts only,
        plus embeddings and head (n_params for a dense model). MoE reports count it this way (Mixtral
        12.9B of 46.7B, Jiang et al. 2024 sec. 2; DeepSeek-V3 37B of 671B)."""
        return self.blocks_params(active=True) + self.embedding_params() + self.head_params()

    @property
    def qk_head_dim(self) -> int:
        """Per-head q/k width: head_dim (+ the decoupled rotary dim with MLA)."""
        return self.head_dim + self.qk_rope_head_dim

    @property
    def train_seq_len_source(self) -> str:
        """Where a default seq_len comes from, in words: the pretraining length, not the window."""
        return (
            f"{self.name}'s pretraining sequence length, train_seq_len; context window max_seq {self.max_seq}"
        )

    def default_seq_len(self, flag: str = "seq_len") -> tuple[int, str]:
        """(tokens, note): the sequence length a question assumes when none is given, the one rule every
        calculator, command and widget uses. The pretraining length train_seq_len (what the model was
        trained on; Llama 3.1: 8192 although its window max_seq is 131072, Dubey et al. 2024 sec. 3.4),
        capped by the context window max_seq (__post_init__ keeps train_seq_len <= max_seq already).
        The note names `flag` (the spelling of the input: "seq_len", "--seq-len"), the value and its source."""
        n = min(self.train_seq_len, self.max_seq)
        return n, (
            f"{flag} not given: {n} tokens, {self.name}'s pretraining length ({self.name} was pretrained "
            f"at {self.train_seq_len}: train_seq_len; context window max_seq {self.max_seq})"
        )

    def tp_note(self, tp: int) -> str | None:
        """None when tensor parallelism of degree `tp` can split this model, else the one-line reason.
        Megatron-LM splits whole attention heads over the tp ranks (Shoeybi et al. 2019 sec. 3:
        n_heads % tp == 0); grouped-query KV heads are split when tp divides n_kv_heads and replicated
        when tp is a multiple of it (Megatron-LM/vLLM: each rank holds max(1, n_kv_heads/tp) KV heads)."""
        tp = require_positive_int("tp", tp)
        if self.n_heads % tp:
            return (
                f"tp must divide n_heads {self.n_heads}, got {tp} (whole heads per GPU; and divide n_kv_heads "
                f"{self.n_kv_heads} or be a multiple of it)"
            )
        if self.n_kv_heads % tp and tp % self.n_kv_heads:
            return (
                f"tp must divide n_kv_heads {self.n_kv_heads} or be a multiple of it, got {tp} (KV heads are "
                f"split or replicated whole; n_heads {self.n_heads})"
            )
        return None

    def check_tp(self, tp: int) -> int:
        """`tp` when tp_note allows it; else ValueError with tp_note's line."""
        if (note := self.tp_note(tp)) is not None:
            raise ValueError(note)
        return require_positive_int("tp", tp)

    def window_note(self, seq_len: int, flag: str = "seq_len") -> str | None:
        """None when `seq_len` fits the context window max_seq. Beyond it: a ValueError for learned
        positions (the position table has max_seq rows: longer sequences cannot be encoded), a note
        for RoPE (computable, but beyond what the model was trained or extended to)."""
        if seq_len <= self.max_seq:
            return None
        if self.position == "learned":
            raise ValueError(
                f"{flag} must be at most {self.name}'s context window {self.max_seq} (learned "
                f"positions: no position beyond it), got {seq_len}"
            )
        return (
            f"{flag} {seq_len} is beyond {self.name}'s context window {self.max_seq}: the numbers are "
            "computed, but the model was never trained at that length"
        )

    # ---- attention span (sliding window) ----
    def kv_tokens(self, context: int) -> int:
        """Key/value positions one sequence caches, and a new token attends to, after `context` tokens:
        min(context, sliding_window), or `context` with full attention. Mistral's rolling buffer cache
        keeps the last W positions only (Jiang et al. 2023, arXiv:2310.06825, sec. 2: "On a sequence
        length of 32k tokens, this reduces the cache memory usage by 8x"); vLLM frees the blocks that
        fall out of the window, TensorRT-LLM's cyclic KV cache (max_attention_window_size) and HF
        transformers' SlidingWindowCache hold W positions."""
        context = require_positive_int("context", context)
        return context if self.sliding_window is None else min(context, self.sliding_window)

    @property
    def window_layer_share(self) -> float:
        """Share of the layers that attend through the sliding window: 0 with full attention, 1 when every
        layer is windowed (Mistral 7B), the pattern's share otherwise (gpt-oss: every other layer, model card;
        Gemma 2: alternating local/global, Gemma Team 2024 sec. 2)."""
        if self.sliding_window is None:
            return 0.0
        if not self.full_attention_every:
            return 1.0
        # closed form: layers i with (i + 1) % full_attention_every == 0 attend to the whole context
        return (self.n_layers - self.n_layers // self.full_attention_every) / self.n_layers

    def mean_kv_tokens(self, context: int) -> float:
        """Key/value positions one sequence caches per layer after `context` tokens, averaged over the
        layers: windowed layers min(context, W) (kv_tokens), full-attention layers the whole context."""
        context = require_positive_int("context", context)
        share = self.window_layer_share
        return (1.0 - share) * context + share * self.kv_tokens(context)

    def mean_attended_keys(self, seq_len: int) -> float:
        """Mean keys a token attends to in one causal pass (prefill or training) over `seq_len` tokens,
        in the continuous convention of gpukit.compute.flops_per_token's causal term (position x of
        [0, s] sees x keys, Kaplan et al. 2020 table 1): s/2 with full attention. With a sliding window
        W < s, position x sees min(x, W) keys (Jiang et al. 2023 sec. 2), and the mean over [0, s] is
        (W^2/2 + W(s - W)) / s = W - W^2/(2s); W >= s gives s/2 again, today's term exactly. With a pattern
        of windowed and full layers (full_attention_every), the mean over the layers of the two."""
        s = require_positive_int("seq_len", seq_len)
        w = self.sliding_window
        if w is None or w >= s:
            return s / 2
        share = self.window_layer_share
        return (1.0 - share) * s / 2 + share * (w - w * w / (2 * s))

    def sliding_window_note(self, tokens: int) -> str | None:
        """One line when the sliding window caps `tokens` (the KV cache and the keys attended), else None."""
        if self.sliding_window is None or tokens <= self.sliding_window:
            return None
        if self.full_attention_every:
            share = self.window_layer_share
            k = self.full_attention_every
            which = "every other layer" if k == 2 else f"one layer in {k}"
            return (
                f"{self.name} alternates attention: {share:.0%} of its layers attend to a sliding window of "
                f"{self.sliding_window} tokens (their KV cache holds at most {self.sliding_window} per sequence), "
                f"{which} attends to the whole context (config.json layer_types / sliding_window pattern)"
            )
        return (
            f"{self.name} attends to a sliding window of {self.sliding_window} tokens: the KV cache holds at "
            f"most {self.sliding_window} per sequence and a token attends to at most {self.sliding_window} keys "
            "(Jiang et al. 2023 sec. 2)"
        )

    # ---- parameter counts (elements) ----
    @property
    def kv_dim(self) -> int:
        return self.n_kv_heads * self.head_dim

    @property
    def q_dim(self) -> int:
        return self.n_heads * self.head_dim

    @property
    def linear_shapes(self) -> tuple[tuple[str, int, int], ...]:
        """(name, d_in, d_out) of every linear weight in one transformer block: q, k, v, o, then
        fc1, fc2 (gelu) or gate, up, down (swiglu). What int8/nf4 quantize and LoRA adapts."""
        h, q, kv, f = self.hidden, self.q_dim, self.kv_dim, self.ffn_hidden
        shapes = (("q", h, q), ("k", h, kv), ("v", h, kv), ("o", q, h))
        if self.mlp == "swiglu":
            return shapes + (("gate", h, f), ("up", h, f), ("down", f, h))
        return shapes + (("fc1", h, f), ("fc2", f, h))

    @property
    def linear_weights(self) -> tuple[int, int]:
        """(weights, output rows) of the linear layers in one block (no biases, no norms)."""
        return sum(i * o for _, i, o in self.linear_shapes), sum(o for _, _, o in self.linear_shapes)

    def attention_params(self) -> int:
        h = self.hidden
        if (
            self.is_mla
        ):  # DeepSeek-V2 sec. 2.1.2-2.1.3 (W^DQ, W^UQ, W^QR, W^DKV, W^UK, W^UV, W^KR, W^O + 2 norms)
            nh, qk, r, c = self.n_heads, self.qk_head_dim, self.qk_rope_head_dim, self.kv_lora_rank
            q = (
                (h * self.q_lora_rank + self.q_lora_rank + self.q_lora_rank * nh * qk)
                if self.q_lora_rank
                else h * nh * qk
            )
            kv = h * (c + r) + c + c * nh * (self.head_dim + self.v_head_dim)
            return q + kv + nh * self.v_head_dim * h
        n = h * self.q_dim + 2 * h * self.kv_dim + self.q_dim * h
        if self.bias:
            n += self.q_dim + 2 * self.kv_dim + h
        return n

    def mlp_params(self) -> int:
        h, f = self.hidden, self.ffn_hidden
        n = (2 if self.mlp == "gelu" else 3) * h * f
        if self.bias:
            n += f + h if self.mlp == "gelu" else 2 * f + h
        return n

    def norm_params(self) -> int:
        """One norm: weight (+ bias for LayerNorm)."""
        return 2 * self.hidden if self.norm == "layernorm" else self.hidden

    def stage_moe_layers(self, layers: int) -> int:
        """MoE blocks on the heaviest pipeline stage of `layers` blocks: the stage's share of the MoE layers
        rounded up, at most `layers` (the rule of gpukit.parallel.layout's and gpukit.memory's expert sharding)."""
        if not self.is_moe:
            return 0
        return min(layers, math.ceil(self.n_moe_layers * layers / self.n_layers))

    def stage_blocks_params(self, layers: int) -> int:
        """Parameters of `layers` blocks on the heaviest pipeline stage: stage_moe_layers(layers) MoE blocks
        (all experts) and the rest dense. layers x the mean block (layer_params) would hold fewer experts than
        the stage's MoE blocks have, e.g. DeepSeek-V3's 3 dense layers averaged into every stage."""
        if not self.is_moe:
            return layers * self.layer_params()
        moe = self.stage_moe_layers(layers)
        first_moe = (
            -(-(self.first_dense_layers + 1) // self.moe_every) * self.moe_every - 1
        )  # first MoE layer
        dense_block = self.attention_params() + self.mlp_params() + 2 * self.norm_params()
        return moe * self.layer_params_at(first_moe) + (layers - moe) * dense_block

    def layer_params(self) -> int:
        """One block's parameters; for a mixture of experts with mixed layers, the mean block (rounded):
        blocks_params() is exact."""
        if self.is_moe:
            return round(self.blocks_params() / self.n_layers)
        return self.attention_params() + self.mlp_params() + 2 * self.norm_params()

    def embedding_params(self) -> int:
        """Token embeddings, learned positions, (encoder: token types, 2 rows)."""
        n = self.vocab * self.hidden
        if self.position == "learned":
            n += self.max_seq * self.hidden
        if self.arch == "encoder":
            n += 2 * self.hidden
        return n

    def head_params(self) -> int:
        """Final norm + untied LM head (+ encoder pooler, h x h + h)."""
        n = self.norm_params()
        if not self.tied_embeddings and self.arch == "decoder":
            n += self.vocab * self.hidden
        if self.arch == "encoder":
            n += self.hidden * self.hidden + self.hidden
        return n

    @property
    def n_params(self) -> int:
        return self.blocks_params() + self.embedding_params() + self.head_params()

    @property
    def n_params_non_embedding(self) -> int:
        """Parameters outside the token/position embeddings (Kaplan et al. 2020's N)."""
        return self.n_params - self.embedding_params()

    def to_dict(self) -> dict:
        d = asdict(self)
        d["n_params"] = self.n_params
        return d
