"""Audits of the seed articles' quantitative claims: the claim, its quote, our calculation, a verdict.

Each audit is a pure function (catalog numbers from gpukit/data/*.csv, gpukit calculators, no torch, no
other I/O) that returns a frozen `Claim`: what the article says (`quote`, verbatim), the number it
claims, the number we compute with gpukit.compute / gpukit.comm under stated `assumptions`, the
calculation written out (`check`), extra `figures` (an ordered breakdown) and a `verdict` from
VERDICTS. Keyword arguments change an assumption, e.g. `claim("allreduce_30b_1gbe", grad_dtype="bf16")`.

Registry (this module): audits register with `@register(key, topic)`; `claims(topic)` runs every
audit of a topic with its defaults, `claim(key, **kw)` one audit, `claims_frame(topic)` the overview
table. The audits themselves live in one module per topic, listed in TOPIC_MODULES (gpukit.audits.
compute, .cost, .comm, .memory); the registry imports them all on first use, and a missing one is
an error.

Articles (shared/seeds/): "000" = N. Dixit, "GPU Cluster vs Single GPU for Deep Learning: The Real
Trade-offs"; "002" = N. Dixit, "GPU Cluster vs Single GPU for AI Workloads: A Practical Guide for 2026".
Used in: gpukit.audits.*, notebooks 01-04, tests/test_claims.py, tests/test_claims_memory.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass

from gpukit.errors import require_choice, require_positive

# One audit module per topic: adding a topic is one line here (and the module).
TOPIC_MODULES = (
    ("compute", "gpukit.audits.compute"),
    ("cost", "gpukit.audits.cost"),
    ("cost", "gpukit.audits.cost_buy_rent"),  # article 002's economics, after article 000's
    ("communication", "gpukit.audits.comm"),
    ("memory", "gpukit.audits.memory"),
    ("scaling", "gpukit.audits.scaling"),
    ("parallel", "gpukit.audits.parallel"),
    ("inference", "gpukit.audits.inference"),
    ("plan", "gpukit.audits.plan"),
    ("plan", "gpukit.audits.rules"),  # the articles' remaining rules and examples (issue 23)
)
TOPICS = tuple(dict.fromkeys(topic for topic, _ in TOPIC_MODULES))  # a topic may span modules
VERDICTS = (
    "correct",
    "plausible",
    "doubtful",
    "misleading",
    "wrong",
    "not checkable",
)  # the last: too vague or private to compute
ARTICLES = {
    "000": ("GPU Cluster vs Single GPU for Deep Learning: The Real Trade-offs", "000_440fe57288c4c54d.txt"),
    "002": (
        "GPU Cluster vs Single GPU for AI Workloads: A Practical Guide for 2026",
        "002_18ae51f957858323.txt",
    ),
}


@dataclass(frozen=True)
class Claim:
    """One audited claim: the article's number, ours, the calculation, the verdict."""

    key: str
    topic: str
    article: str  # key of ARTICLES
    text: str  # the claim in one line, our words
    quote: str  # verbatim from the article
    claimed: float
    claimed_unit: str
    computed: float
    unit: str
    verdict: str  # one of VERDICTS
    check: str  # the calculation with its numbers
    assumptions: tuple[str, ...] = ()
    figures: tuple[tuple[str, float, str], ...] = ()  # (name, value, unit), in reading order

    @property
    def ratio(self) -> float | None:
        """computed / claimed when both are in the same unit, else None."""
        if self.unit != self.claimed_unit or not self.claimed:
            return None
        return self.computed / self.claimed

    def figure(self, name: str) -> float:
        """The value of figure `name`; ValueError listing the figures."""
        for n, v, _ in self.figures:
            if n == name:
                return v
        raise ValueError(f"figure must be one of {', '.join(n for n, _, _ in self.figures)}; got {name!r}")

    def to_json_dict(self) -> dict:
        d = asdict(self)
        d["figures"] = [{"name": n, "value": v, "unit": u} for n, v, u in self.figures]
        d["ratio"] = self.ratio
        return d

    def to_frame(self):
        """The figures as a table (name, value, unit)."""
        import pandas as pd

        return pd.DataFrame(list(self.figures), columns=["figure", "value", "unit"])

    def to_text(self) -> str:
        ratio = f" ({self.ratio:.3g}x the claim)" if self.ratio is not None else ""
        lines = [
            f"CLAIM ({ARTICLES[self.article][0]}): {self.text}",
            f'  quote: "{self.quote}"',
            f"  claimed: {_num(self.claimed)} {self.claimed_unit}; computed: {_num(self.computed)} "
            f"{self.unit}{ratio}",
            f"  check: {self.check}",
        ]
        lines += [f"  assumes: {a}" for a in self.assumptions]
        lines.append(f"  VERDICT: {self.verdict}")
        return "\n".join(lines)

    def _repr_markdown_(self) -> str:
        ratio = f" ({self.ratio:.3g}x the claim)" if self.ratio is not None else ""
        assumes = "".join(f"\n- assumes: {a}" for a in self.assumptions)
        return (
            f"**{self.text}** ({ARTICLES[self.article][0]})\n\n> {self.quote}\n\n"
            f"- claimed: {_num(self.claimed)} {self.claimed_unit}; computed: **{_num(self.computed)} "
            f"{self.unit}**{ratio}\n- check: {self.check}{assumes}\n- **verdict: {self.verdict}**"
        )


def _num(x: float) -> str:
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.3g}"


# ------------------------------------------------------------------------------------ registry
_REGISTRY: dict[str, tuple[str, Callable[..., Claim]]] = {}


def _load_topic_modules() -> None:
    """Import every module of TOPIC_MODULES (each registers its audits); a missing one is an error."""
    import importlib

    for _, module in TOPIC_MODULES:
        importlib.import_module(module)


def register(key: str, topic: str):
    """Decorator: add an audit function (returning a Claim with this key and topic) to the registry."""
    require_choice("topic", topic, TOPICS)

    def deco(fn):
        if key in _REGISTRY:
            raise ValueError(f"claim key {key!r} is registered twice")
        _REGISTRY[key] = (topic, fn)
        return fn

    return deco


def claim_keys(topic: str | None = None) -> tuple[str, ...]:
    """Registered claim keys of one topic, or of all topics in TOPICS order; within a topic in
    registration order (the order of its module), whichever module was imported first."""
    if topic is not None:
        require_choice("topic", topic, TOPICS)
    _load_topic_modules()
    return tuple(k for t_ in ((topic,) if topic else TOPICS) for k, (t, _) in _REGISTRY.items() if t == t_)


def claim(key: str, **assumptions) -> Claim:
    """Run one audit; keyword arguments override its assumptions."""
    _load_topic_modules()
    require_choice("claim", key, list(_REGISTRY))
    topic, fn = _REGISTRY[key]
    c = fn(**assumptions)
    if c.key != key or c.topic != topic or c.verdict not in VERDICTS:
        raise RuntimeError(f"audit {key} returned key {c.key!r}, topic {c.topic!r}, verdict {c.verdict!r}")
    return c


def claims(topic: str | tuple[str, ...] | None = None) -> tuple[Claim, ...]:
    """Every audit of `topic` (a topic, a tuple of topics, or None for all) with its defaults."""
    topics = (topic,) if isinstance(topic, str) else topic
    keys = [k for t in (topics or (None,)) for k in claim_keys(t)]
    return tuple(claim(k) for k in keys)


def claims_frame(topic=None):
    """Overview table: claim, claimed, computed, ratio, verdict (pandas)."""
    import pandas as pd

    rows = [
        {
            "key": c.key,
            "claim": c.text,
            "claimed": c.claimed,
            "claimed_unit": c.claimed_unit,
            "computed": c.computed,
            "unit": c.unit,
            "ratio": c.ratio,
            "verdict": c.verdict,
        }
        for c in claims(topic)
    ]
    return pd.DataFrame(
        rows, columns=["key", "claim", "claimed", "claimed_unit", "computed", "unit", "ratio", "verdict"]
    )


def verdict_from_ratio(ratio: float, correct: float = 1.1, plausible: float = 2.0) -> str:
    """correct within `correct`x either way, plausible within `plausible`x, else wrong."""
    r = require_positive("ratio", ratio)
    r = max(r, 1 / r)
    return "correct" if r <= correct else "plausible" if r <= plausible else "wrong"
