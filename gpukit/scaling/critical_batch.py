"""The critical batch size: the largest global batch a run can use before more data parallelism buys
no fewer optimizer steps (McCandlish et al. 2018, "An Empirical Model of Large-Batch Training",
arXiv 1812.06162: beyond the gradient noise scale B_noise, doubling the batch barely cuts the steps).

The planner's first design decision: the global batch it assumes, in tokens and in sequences. A model
whose run published its batch (PUBLISHED_BATCH, each row cited) takes that batch; any other model takes
the DeepSeek LLM compute-optimal fit B_opt = 0.2920 x C^0.3271 tokens with C = 6 N D FLOPs (Bi et al.
2024, arXiv 2401.02954, sec. 3.1, eq. 1; fitted on runs of 1e17-3e20 FLOPs, extrapolated beyond). Published
schedules ramp the batch as the loss falls (Llama 3 405B: 4M -> 8M -> 16M tokens, Dubey et al. 2024,
arXiv 2407.21783, sec. 3.4.1; DeepSeek-V3: 3,072 -> 15,360 sequences of 4,096 tokens, arXiv 2412.19437,
sec. 4.2): the planner takes the batch at the end of the ramp. Units: tokens and sequences.

Used in: gpukit.plan.planner (the global batch of every training plan), tests/test_planner_search.py.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpukit.catalog import as_model
from gpukit.errors import require_positive, require_positive_int

DEEPSEEK_LLM_BATCH = (
    0.2920,
    0.3271,
)  # B_opt = 0.2920 * C^0.3271 tokens (Bi et al. 2024, arXiv 2401.02954, eq. 1)
_LLAMA2 = (
    "Touvron et al. 2023, Llama 2, sec. 2.2 (global batch of 4M tokens)",
    "https://arxiv.org/abs/2307.09288",
)
_OPT = ("Zhang et al. 2022, OPT, Table 1 (batch size in tokens)", "https://arxiv.org/abs/2205.01068")
_GPT2 = (
    "Radford et al. 2019, GPT-2 paper, sec. 2.3 (batch size 512 of 1,024 tokens)",
    "https://cdn.openai.com/better-language-models/language_models_are_unsupervised_multitask_learners.pdf",
)
_GPT3 = ("Brown et al. 2020, GPT-3, Table 2.1 (batch size in tokens)", "https://arxiv.org/abs/2005.14165")
_LLAMA3 = (
    "Dubey et al. 2024, Llama 3, sec. 3.4.1 (4M -> 8M -> 16M tokens)",
    "https://arxiv.org/abs/2407.21783",
)
ACCESSED = "2026-12-05"
# model name -> (global batch in tokens at the end of the ramp, source, url); accessed ACCESSED
PUBLISHED_BATCH: dict[str, tuple[int, str, str]] = {
    "gpt2": (512 * 1024, *_GPT2),
    "gpt2-medium": (512 * 1024, *_GPT2),
    "gpt2-large": (512 * 1024, *_GPT2),
    "gpt2-xl": (512 * 1024, *_GPT2),
    "llama-2-7b": (4 * 2**20, *_LLAMA2),
    "llama-2-13b": (4 * 2**20, *_LLAMA2),
    "llama-2-70b": (4 * 2**20, *_LLAMA2),
    "llama-3.1-405b": (16 * 2**20, *_LLAMA3),
    "opt-1.3b": (2**20, *_OPT),
    "opt-6.7b": (2 * 2**20, *_OPT),
    "opt-13b": (4 * 2**20, *_OPT),
    "opt-30b": (4 * 2**20, *_OPT),
    "opt-66b": (2 * 2**20, *_OPT),
    "opt-175b": (2 * 2**20, *_OPT),
    "gpt3-175b": (3_200_000, *_GPT3),
}


@dataclass(frozen=True)
class CriticalBatch:
    """The global batch a run can use (tokens), where it comes from, and that batch in sequences of seq_len."""

    tokens: int
    seq_len: int
    source: str

    @property
    def sequences(self) -> int:
        return max(1, self.tokens // self.seq_len)

    def line(self) -> str:
        return f"critical batch {self.tokens:,} tokens ({self.sequences:,} sequences of {self.seq_len}): {self.source}"


def critical_batch(model, tokens: float, seq_len: int | None = None) -> CriticalBatch:
    """The critical global batch of training `model` on `tokens` tokens (module docstring): the
    published batch of the model's run when PUBLISHED_BATCH has it, else the DeepSeek LLM fit at
    C = 6 x n_params x tokens."""
    model = as_model(model)
    tokens = require_positive("tokens", tokens)
    s = require_positive_int("seq_len", seq_len if seq_len is not None else model.default_seq_len()[0])
    if model.name in PUBLISHED_BATCH:
        b, src, url = PUBLISHED_BATCH[model.name]
        return CriticalBatch(b, s, f"{model.name}'s published batch ({src}, {url}, accessed {ACCESSED})")
    a, e = DEEPSEEK_LLM_BATCH
    c = 6 * model.n_params * tokens  # C = 6ND training FLOPs (Kaplan et al. 2020 sec. 2.1)
    b = int(a * c**e)  # Bi et al. 2024 (DeepSeek LLM), arXiv 2401.02954, sec. 3.1, eq. 1
    return CriticalBatch(
        max(b, s),
        s,
        f"DeepSeek LLM fit B_opt = 0.2920 x C^0.3271 at C = 6ND = {c:.2g} FLOPs (Bi et al. 2024, arXiv 2401.02954, eq. 1)",
    )


def beyond_critical(global_batch_tokens: float, cb: CriticalBatch) -> str | None:
    """A one-line flag when a global batch exceeds the critical batch (McCandlish et al. 2018: past it,
    more data parallelism buys almost no fewer steps, so the extra GPUs are not speed); None otherwise."""
    global_batch_tokens = require_positive("global_batch_tokens", global_batch_tokens)
    if not isinstance(cb, CriticalBatch):
        raise ValueError(f"cb must be a CriticalBatch (critical_batch(...)), got {type(cb).__name__}")
    if global_batch_tokens <= cb.tokens:
        return None
    return (
        f"global batch {int(global_batch_tokens):,} tokens exceeds the critical batch {cb.tokens:,} "
        f"({global_batch_tokens / cb.tokens:.1f}x): past it more data parallelism buys almost no fewer "
        "optimizer steps (McCandlish et al. 2018, arXiv 1812.06162); the hours assume it does"
    )
