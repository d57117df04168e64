"""Bytes of quantized weights and the size of LoRA adapters (used by gpukit.memory).

The shapes of a block's linear layers belong to the model: `ModelSpec.linear_shapes` and
`ModelSpec.linear_weights` (gpukit.specs).

Quantization formats, in bytes per weight plus the constants needed to dequantize them:

- int8: LLM.int8() vector-wise quantization (Dettmers et al. 2022, "LLM.int8()", sec. 3.1):
  1 byte per weight plus one fp32 scale per output row (bitsandbytes stores it as `SCB`).
- nf4: 4-bit NormalFloat (Dettmers et al. 2023, "QLoRA", sec. 3): 0.5 byte per weight plus one
  absmax per block of 64 weights. Stored in fp32 that costs 32/64 = 0.5 bit per weight; with double
  quantization (the QLoRA default, sec. 3 "Double Quantization") the absmax is stored in 8 bits with
  one fp32 second-level constant per 256 blocks: 8/64 + 32/(64*256) = 0.127 bit per weight.
- mxfp4: OCP Microscaling Formats (MX) Specification v1.0 (2023), sec. 5-6: blocks of 32 FP4 (E2M1)
  elements share one 8-bit E8M0 scale: (32 x 4 + 8) / 32 = 4.25 bits per weight. gpt-oss ships its MoE
  expert weights in MXFP4 and the rest in bf16 (OpenAI gpt-oss model card 2025, sec. 2).

As in bitsandbytes/transformers, only the linear layers inside transformer blocks are quantized;
embeddings, the LM head, norms and biases stay in the 16-bit compute dtype.

LoRA (Hu et al. 2021, sec. 4.1): a frozen d_out x d_in matrix W gets a trainable update B A with
A (r x d_in) and B (d_out x r): r * (d_in + d_out) trainable parameters per adapted matrix.
Used in: notebooks on fitting a model (memory).
"""

from __future__ import annotations

from gpukit.errors import require_choice, require_positive_int
from gpukit.specs import ModelSpec

QUANT_DTYPES = ("int8", "nf4", "mxfp4")
MXFP4_BLOCK = 32  # OCP MX spec v1.0: k = 32 elements per shared scale
MXFP4_ELEMENT_BITS = 4  # FP4 E2M1
MXFP4_SCALE_BITS = 8  # E8M0 shared scale
NF4_BLOCK = 64  # QLoRA sec. 3: blocksize 64 for the weights
NF4_DQ_BLOCK = 256  # QLoRA sec. 3: blocksize 256 for the second-level (double) quantization
LORA_TARGETS = ("qv", "attention", "all")


def nf4_constant_bits(double_quant: bool = True) -> float:
    """Bits of quantization constants per weight for NF4 (QLoRA sec. 3): 0.5, or 0.127 with DQ."""
    if double_quant:
        return 8 / NF4_BLOCK + 32 / (NF4_BLOCK * NF4_DQ_BLOCK)
    return 32 / NF4_BLOCK


def mxfp4_bits_per_weight() -> float:
    """Bits per weight of MXFP4 (OCP MX spec v1.0): 4-bit E2M1 elements + one 8-bit E8M0 scale per 32 = 4.25."""
    return MXFP4_ELEMENT_BITS + MXFP4_SCALE_BITS / MXFP4_BLOCK


def quantized_bytes(n_weights: float, dtype: str, n_rows: float = 0, double_quant: bool = True) -> float:
    """Bytes to store `n_weights` in `dtype` (int8 | nf4 | mxfp4), constants included.

    `n_rows` is the number of output rows (int8 keeps one fp32 scale per row, LLM.int8() sec. 3.1).
    """
    require_choice("dtype", dtype, QUANT_DTYPES)
    if dtype == "int8":
        return n_weights * 1.0 + 4.0 * n_rows
    if dtype == "mxfp4":  # OCP MX spec v1.0: 4.25 bits per weight
        return n_weights * mxfp4_bits_per_weight() / 8
    return n_weights * 0.5 + n_weights * nf4_constant_bits(double_quant) / 8


def lora_layer_params(model: ModelSpec, rank: int, targets: str = "all") -> int:
    """Trainable LoRA parameters in one block: r*(d_in+d_out) per adapted matrix (Hu et al. 2021).

    targets: "qv" (W_q, W_v: the LoRA paper's GPT-3 experiments, sec. 7.1), "attention" (q, k, v, o)
    or "all" (every linear layer of the block, which QLoRA sec. 4 finds necessary to match full
    finetuning, and PEFT's target_modules="all-linear").
    """
    require_positive_int("lora_rank", rank)
    require_choice("lora_targets", targets, LORA_TARGETS)
    names = {"qv": ("q", "v"), "attention": ("q", "k", "v", "o")}.get(targets)
    return sum(rank * (i + o) for name, i, o in model.linear_shapes if names is None or name in names)


def lora_params(model: ModelSpec, rank: int, targets: str = "all") -> int:
    """Trainable LoRA parameters of the whole model (no adapters on embeddings or the LM head)."""
    return model.n_layers * lora_layer_params(model, rank, targets)
