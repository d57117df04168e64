"""The small reference transformer that gpukit's benchmarks and memory validation run for real.

A decoder-only GPT laid out like the Megatron GPT layer (Narayanan et al. 2021 sec. 3; Korthikanti
et al. 2022 fig. 2), so that the same formulas describe it: token + learned position embeddings,
n_layers blocks of

    x = x + Proj(Attention(QKV(LayerNorm(x))))      # fused QKV Linear h -> 3h, output Linear h -> h
    x = x + FC2(GELU(FC1(LayerNorm(x))))            # Linear h -> ffn_hidden -> h

then a final LayerNorm, an LM head (tied or untied, as the spec says) and cross-entropy.

Attention is written out eagerly (QK^T, scale, causal mask, softmax, dropout, @V) so that what each op
saves for backward is known and can be counted by gpukit.memory.eager; 'sdpa' uses
torch.nn.functional.scaled_dot_product_attention instead. The causal mask is one boolean buffer
(max_seq^2 bytes) shared by all layers, so no per-layer mask is allocated. Dropout modules exist only
when dropout > 0 (dropout 0 allocates nothing). Full recompute wraps each block in
torch.utils.checkpoint(use_reentrant=False), which saves the block input only (Korthikanti et al.
2022 sec. 4: "full recompute", 2sbh bytes per layer in 16-bit).

Used in: gpukit.bench.measure, gpukit.cli.validate, notebooks/01_* (memory).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

from gpukit.errors import require_choice, require_positive
from gpukit.memory import llama_spec, reference_spec  # noqa: F401  (pure; re-exported here)
from gpukit.specs import ModelSpec

RECOMPUTE_KINDS = ("none", "full")
ATTENTION_KINDS = ("eager", "sdpa")
PRECISIONS = ("fp32", "bf16-mixed")


class Attention(nn.Module):
    """Causal self-attention: fused QKV Linear, eager softmax(QK^T/sqrt(d) + mask) V, output Linear."""

    def __init__(self, spec: ModelSpec, dropout: float, attention: str):
        super().__init__()
        self.n_heads, self.head_dim = spec.n_heads, spec.head_dim
        self.qkv = nn.Linear(spec.hidden, spec.q_dim + 2 * spec.kv_dim, bias=spec.bias)
        self.proj = nn.Linear(spec.q_dim, spec.hidden, bias=spec.bias)
        self.attention, self.p = attention, dropout
        self.attn_drop = nn.Dropout(dropout) if dropout > 0 else nn.Identity()
        self.resid_drop = nn.Dropout(dropout) if dropout > 0 else nn.Identity()

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        a, d = self.n_heads, self.head_dim
        # (b, s, 3, a, d) -> 3 x (b, a, s, d): views of the one QKV output
        q, k, v = self.qkv(x).view(b, s, 3, a, d).permute(2, 0, 3, 1, 4).unbind(0)
        if self.attention == "sdpa":
            y = F.scaled_dot_product_attention(
                q, k, v, dropout_p=self.p if self.training else 0.0, is_causal=True
            )
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d))
            att = att.masked_fill(mask[:s, :s], float("-inf"))  # mask is a view of one shared buffer
            att = self.attn_drop(torch.softmax(att, dim=-1))
            y = att @ v
        y = y.transpose(1, 2).reshape(b, s, a * d)
        return self.resid_drop(self.proj(y))


class MLP(nn.Module):
    """Linear h -> ffn_hidden, GELU (exact erf form, as GPT-2/Megatron), Linear ffn_hidden -> h."""

    def __init__(self, spec: ModelSpec, dropout: float):
        super().__init__()
        self.fc1 = nn.Linear(spec.hidden, spec.ffn_hidden, bias=spec.bias)
        self.fc2 = nn.Linear(spec.ffn_hidden, spec.hidden, bias=spec.bias)
        self.drop = nn.Dropout(dropout) if dropout > 0 else nn.Identity()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.drop(self.fc2(F.gelu(self.fc1(x))))


class Block(nn.Module):
    """One pre-LayerNorm transformer layer (Megatron GPT layer)."""

    def __init__(self, spec: ModelSpec, dropout: float, attention: str):
        super().__init__()
        self.ln1 = nn.LayerNorm(spec.hidden)
        self.attn = Attention(spec, dropout, attention)
        self.ln2 = nn.LayerNorm(spec.hidden)
        self.mlp = MLP(spec, dropout)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x), mask)
        return x + self.mlp(self.ln2(x))


class ReferenceGPT(nn.Module):
    """Decoder-only GPT; forward(idx, targets) returns the mean cross-entropy loss (a scalar)."""

    def __init__(
        self, spec: ModelSpec, dropout: float = 0.0, recompute: str = "none", attention: str = "eager"
    ):
        super().__init__()
        self.spec, self.recompute = spec, recompute
        h = spec.hidden
        self.wte = nn.Embedding(spec.vocab, h)
        self.wpe = nn.Embedding(spec.max_seq, h)
        self.drop = nn.Dropout(dropout) if dropout > 0 else nn.Identity()
        self.blocks = nn.ModuleList(Block(spec, dropout, attention) for _ in range(spec.n_layers))
        self.ln_f = nn.LayerNorm(h)
        self.lm_head = nn.Linear(h, spec.vocab, bias=False)
        if spec.tied_embeddings:
            self.lm_head.weight = self.wte.weight
        # True above the diagonal = masked. bool: max_seq^2 bytes, not persistent (not in state_dict)
        mask = torch.ones(spec.max_seq, spec.max_seq, dtype=torch.bool).triu(1)
        self.register_buffer("causal_mask", mask, persistent=False)
        self.apply(_init_weights)

    def forward(self, idx: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        s = idx.shape[1]
        if s > self.spec.max_seq:
            raise ValueError(f"seq_len must be <= max_seq {self.spec.max_seq}, got {s}")
        pos = torch.arange(s, device=idx.device)
        x = self.drop(self.wte(idx) + self.wpe(pos))
        for block in self.blocks:
            if self.recompute == "full" and self.training:
                x = checkpoint(block, x, self.causal_mask, use_reentrant=False)
            else:
                x = block(x, self.causal_mask)
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.reshape(-1))


# ---- the Llama layout ---------------------------------------------------------------------------


class RotaryEmbedding(nn.Module):
    """Rotary positions (Su et al. 2021, RoFormer eq. 34), the rotate-half form of Llama's reference code
    as in Hugging Face transformers' LlamaRotaryEmbedding: cos and sin tables of (max_seq, head_dim) are
    buffers computed once, so applying them allocates only the rotated q and k."""

    def __init__(self, spec: ModelSpec, base: float = 10000.0):
        super().__init__()
        d = spec.head_dim
        inv = 1.0 / (base ** (torch.arange(0, d, 2, dtype=torch.float32) / d))
        ang = torch.outer(torch.arange(spec.max_seq, dtype=torch.float32), inv)
        emb = torch.cat((ang, ang), dim=-1)
        self.register_buffer("cos", emb.cos(), persistent=False)
        self.register_buffer("sin", emb.sin(), persistent=False)


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    d = x.shape[-1] // 2
    return torch.cat((-x[..., d:], x[..., :d]), dim=-1)


def apply_rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x (b, heads, s, d) rotated by position: x cos + rotate_half(x) sin (RoFormer eq. 34)."""
    return x * cos + _rotate_half(x) * sin


class LlamaAttention(nn.Module):
    """Grouped-query attention (Ainslie et al. 2023) with rotary positions and no biases: q, k, v
    projections h -> n_heads*d, n_kv_heads*d, n_kv_heads*d; k and v are repeated to n_heads
    (Hugging Face's repeat_kv) for the eager path; SDPA gets them unrepeated with enable_gqa."""

    def __init__(self, spec: ModelSpec, attention: str):
        super().__init__()
        self.n_heads, self.n_kv, self.head_dim = spec.n_heads, spec.n_kv_heads, spec.head_dim
        self.q_proj = nn.Linear(spec.hidden, spec.q_dim, bias=False)
        self.k_proj = nn.Linear(spec.hidden, spec.kv_dim, bias=False)
        self.v_proj = nn.Linear(spec.hidden, spec.kv_dim, bias=False)
        self.o_proj = nn.Linear(spec.q_dim, spec.hidden, bias=False)
        self.attention = attention

    def forward(
        self, x: torch.Tensor, mask: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor
    ) -> torch.Tensor:
        b, s, _ = x.shape
        a, g, d = self.n_heads, self.n_kv, self.head_dim
        q = self.q_proj(x).view(b, s, a, d).transpose(1, 2)
        k = self.k_proj(x).view(b, s, g, d).transpose(1, 2)
        v = self.v_proj(x).view(b, s, g, d).transpose(1, 2)
        q, k = apply_rotary(q, cos[:s], sin[:s]), apply_rotary(k, cos[:s], sin[:s])
        if self.attention == "sdpa":
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=g != a)
        else:
            if g != a:  # repeat_kv: (b, g, s, d) -> (b, a, s, d), a copy
                k = k.repeat_interleave(a // g, dim=1)
                v = v.repeat_interleave(a // g, dim=1)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d))
            att = att.masked_fill(mask[:s, :s], float("-inf"))
            y = torch.softmax(att, dim=-1) @ v
        return self.o_proj(y.transpose(1, 2).reshape(b, s, a * d))


class SwiGLU(nn.Module):
    """Shazeer 2020, eq. 6 (Llama's FFN): down(silu(gate(x)) * up(x)), no biases."""

    def __init__(self, spec: ModelSpec):
        super().__init__()
        self.gate = nn.Linear(spec.hidden, spec.ffn_hidden, bias=False)
        self.up = nn.Linear(spec.hidden, spec.ffn_hidden, bias=False)
        self.down = nn.Linear(spec.ffn_hidden, spec.hidden, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(F.silu(self.gate(x)) * self.up(x))


class LlamaBlock(nn.Module):
    """One Llama layer (Touvron et al. 2023, sec. 2.2): pre-RMSNorm, GQA with RoPE, SwiGLU; no dropout."""

    def __init__(self, spec: ModelSpec, attention: str):
        super().__init__()
        self.ln1 = nn.RMSNorm(spec.hidden, eps=1e-5)
        self.attn = LlamaAttention(spec, attention)
        self.ln2 = nn.RMSNorm(spec.hidden, eps=1e-5)
        self.mlp = SwiGLU(spec)

    def forward(self, x, mask, cos, sin):
        x = x + self.attn(self.ln1(x), mask, cos, sin)
        return x + self.mlp(self.ln2(x))


class ReferenceLlama(nn.Module):
    """Decoder-only Llama layout; forward(idx, targets) returns the mean cross-entropy loss."""

    def __init__(self, spec: ModelSpec, recompute: str = "none", attention: str = "eager"):
        super().__init__()
        self.spec, self.recompute = spec, recompute
        self.wte = nn.Embedding(spec.vocab, spec.hidden)
        self.rope = RotaryEmbedding(spec)
        self.blocks = nn.ModuleList(LlamaBlock(spec, attention) for _ in range(spec.n_layers))
        self.ln_f = nn.RMSNorm(spec.hidden, eps=1e-5)
        self.lm_head = nn.Linear(spec.hidden, spec.vocab, bias=False)
        if spec.tied_embeddings:
            self.lm_head.weight = self.wte.weight
        mask = torch.ones(spec.max_seq, spec.max_seq, dtype=torch.bool).triu(1)
        self.register_buffer("causal_mask", mask, persistent=False)
        self.apply(_init_weights)

    def forward(self, idx: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        s = idx.shape[1]
        if s > self.spec.max_seq:
            raise ValueError(f"seq_len must be <= max_seq {self.spec.max_seq}, got {s}")
        x = self.wte(idx)
        cos, sin = self.rope.cos, self.rope.sin
        for block in self.blocks:
            if self.recompute == "full" and self.training:
                x = checkpoint(block, x, self.causal_mask, cos, sin, use_reentrant=False)
            else:
                x = block(x, self.causal_mask, cos, sin)
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.reshape(-1))


def build_llama_model(
    spec: ModelSpec, recompute: str = "none", attention: str = "eager", device: str = "cpu", seed: int = 0
) -> ReferenceLlama:
    """Build the reference Llama for `spec` (swiglu, rmsnorm, rope, no bias, decoder) on `device`."""
    require_choice("recompute", recompute, RECOMPUTE_KINDS)
    require_choice("attention", attention, ATTENTION_KINDS)
    for field, want in (
        ("mlp", "swiglu"),
        ("norm", "rmsnorm"),
        ("position", "rope"),
        ("arch", "decoder"),
        ("bias", False),
    ):
        if getattr(spec, field) != want:
            raise ValueError(f"{field} must be {want} for the reference Llama, got {getattr(spec, field)}")
    if spec.head_dim % 2:
        raise ValueError(f"head_dim must be even for rotary positions, got {spec.head_dim}")
    torch.manual_seed(seed)
    return ReferenceLlama(spec, recompute, attention).to(device)


def sdpa_kernel(device: str = "cpu", dtype: str = "fp32", gqa: bool = False) -> str:
    """Which kernel torch.nn.functional.scaled_dot_product_attention dispatches to for a causal
    training call on `device`: the name of the backward node it records (e.g.
    'ScaledDotProductFlashAttentionForCpuBackward0': the flash-attention CPU kernel, which keeps the
    output and a logsumexp, never the s^2 scores; '...EfficientAttention...', '...CudnnAttention...'
    or a 'Math' chain of bmm/softmax ops otherwise)."""
    require_choice("dtype", dtype, ("fp32", "bf16"))
    dt = torch.float32 if dtype == "fp32" else torch.bfloat16
    q = torch.randn(1, 4, 64, 32, dtype=dt, device=device, requires_grad=True)
    kv = torch.randn(1, 2 if gqa else 4, 64, 32, dtype=dt, device=device, requires_grad=True)
    y = F.scaled_dot_product_attention(q, kv, kv, is_causal=True, enable_gqa=gqa)
    return type(y.grad_fn).__name__


def build_model(
    spec: ModelSpec, recompute: str = "none", attention: str = "eager", device: str = "cpu", seed: int = 0
) -> nn.Module:
    """The reference model for `spec`'s layout: ReferenceLlama for swiglu/rmsnorm/rope, else ReferenceGPT."""
    if spec.mlp == "swiglu" or spec.norm == "rmsnorm" or spec.position == "rope":
        return build_llama_model(spec, recompute, attention, device, seed)
    return build_reference_model(spec, 0.0, recompute, attention, device, seed)


def _init_weights(m: nn.Module) -> None:
    # GPT-2 initialisation (Radford et al. 2019): N(0, 0.02), zero biases
    if isinstance(m, (nn.Linear, nn.Embedding)):
        nn.init.normal_(m.weight, mean=0.0, std=0.02)
        if getattr(m, "bias", None) is not None:
            nn.init.zeros_(m.bias)


def build_reference_model(
    spec: ModelSpec,
    dropout: float = 0.0,
    recompute: str = "none",
    attention: str = "eager",
    device: str = "cpu",
    seed: int = 0,
) -> ReferenceGPT:
    """Build the reference GPT for `spec` (gelu, layernorm, learned positions, decoder) on `device`."""
    require_positive("dropout", dropout, allow_zero=True)
    if dropout >= 1:
        raise ValueError(f"dropout must be in [0, 1), got {dropout}")
    require_choice("recompute", recompute, RECOMPUTE_KINDS)
    require_choice("attention", attention, ATTENTION_KINDS)
    for field, want in (("mlp", "gelu"), ("norm", "layernorm"), ("position", "learned"), ("arch", "decoder")):
        if getattr(spec, field) != want:
            raise ValueError(f"{field} must be {want} for the reference model, got {getattr(spec, field)}")
    if spec.n_kv_heads != spec.n_heads:
        raise ValueError(
            f"n_kv_heads must equal n_heads {spec.n_heads} for the reference model, got {spec.n_kv_heads}"
        )
    torch.manual_seed(seed)
    return ReferenceGPT(spec, dropout, recompute, attention).to(device)


def make_optimizer(model: nn.Module, optimizer: str = "adamw", lr: float = 1e-3) -> torch.optim.Optimizer:
    """AdamW (weight decay 0.01), SGD with momentum 0.9, or plain SGD; torch's default implementation
    for the device (single-tensor loop on CPU, foreach on CUDA)."""
    require_choice("optimizer", optimizer, ("adamw", "sgd-momentum", "sgd"))
    params = list(model.parameters())
    if optimizer == "adamw":
        return torch.optim.AdamW(params, lr=lr, weight_decay=0.01)
    return torch.optim.SGD(params, lr=lr, momentum=0.9 if optimizer == "sgd-momentum" else 0.0)


def make_batch(
    spec: ModelSpec, micro_batch: int, seq_len: int, device: str = "cpu", seed: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """Random token ids and next-token targets, int64 (b, s) each; deterministic for `seed`."""
    g = torch.Generator().manual_seed(seed)
    tok = torch.randint(0, spec.vocab, (micro_batch, seq_len + 1), generator=g)
    # clone: for micro_batch 1 the slices are contiguous views sharing one storage
    return tok[:, :-1].clone().to(device), tok[:, 1:].clone().to(device)


def autocast_args(device: str, precision: str) -> dict:
    """Keyword arguments of torch.autocast for `precision` (bf16 autocast for 'bf16-mixed', off for fp32)."""
    require_choice("precision", precision, PRECISIONS)
    return dict(device_type=device, dtype=torch.bfloat16, enabled=precision == "bf16-mixed")


def run_step(
    model: nn.Module, opt: torch.optim.Optimizer, batches, amp: dict, probe=None, tracker=None
) -> float:
    """One optimizer step over len(batches) micro-batches (loss / k each, gradients accumulate), then
    zero_grad(set_to_none=True); the one training step of every harness (gpukit.bench.measure,
    compute_check). `probe(phase)` is called at the end of the last forward, of backward and of the
    optimizer step (the last loss stays alive until the step is over); `tracker` (a MemTracker) gets
    reset_mod_stats() before each forward. Returns the last micro-batch's loss (x k)."""
    k = len(batches)
    loss = None
    for i, (idx, targets) in enumerate(batches):
        if tracker is not None:  # MemTracker refuses a second forward of a module without this
            tracker.reset_mod_stats()
        if loss is not None:
            del loss
        with torch.autocast(**amp):
            loss = model(idx, targets)
            if k > 1:
                loss = loss / k
        if probe and i == k - 1:
            probe("forward")
        loss.backward()
    if probe:
        probe("backward")
    opt.step()
    if probe:
        probe("optimizer")
    opt.zero_grad(set_to_none=True)
    value = loss.item() * k
    del loss
    return value


def train_step(
    model: nn.Module,
    opt: torch.optim.Optimizer,
    batch: tuple[torch.Tensor, torch.Tensor],
    precision: str = "fp32",
) -> float:
    """One training step: forward (under bf16 autocast for 'bf16-mixed'), backward, optimizer step,
    zero_grad(set_to_none=True). Parameters, gradients and optimizer states stay fp32. Returns the loss."""
    return run_step(model, opt, [batch], autocast_args(batch[0].device.type, precision))
