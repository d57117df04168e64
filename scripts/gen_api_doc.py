"""Write docs/API.md, the Python API page: every name of each calculator family's face (`__all__`) and
every public name of the ground-floor modules, with its signature and the first lines of its
docstring, and one example per family that runs (tests/test_api_doc.py runs them and checks that the
page is what this script writes).

    python scripts/gen_api_doc.py          # rewrite docs/API.md
    python scripts/gen_api_doc.py --check  # exit 1 when docs/API.md is stale
"""

from __future__ import annotations

import argparse
import ast
import importlib
import inspect
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "API.md"

# the calculator families (a face with __all__ each), in the layer order, and the ground floor
FAMILIES = ("memory", "compute", "comm", "scaling", "parallel", "inference", "cost", "plan")
GROUND = (
    "catalog",
    "specs",
    "hf_config",
    "units",
    "errors",
    "results",
    "timing_stats",
    "prices",
    "profile",
    "quant",
)
MAX_DEFAULT = 40  # a default whose repr is longer is shown as `Name(...)`
MAX_CONSTANT = 100  # a constant's repr is cut after this many characters
DOC_LINES = 3  # docstring lines shown per name (its first paragraph, at most this many lines)

# one example per family; each block runs as it is (the test executes them)
EXAMPLES = {
    "memory": """\
from gpukit.catalog import get_model
from gpukit.memory import TrainSetup, estimate_memory

m = estimate_memory(get_model("llama-2-7b"), setup=TrainSetup(seq_len=4096, micro_batch=1), gpu="h100-sxm")
print(f"{m.total_bytes / 2**30:.1f} GiB of {m.gpu_memory_bytes / 2**30:.0f} GiB, fits: {m.fits}")
z3 = estimate_memory(get_model("llama-2-7b"), setup=TrainSetup(seq_len=4096, zero_stage=3, dp=8), gpu="h100-sxm")
print(f"ZeRO-3 over 8 GPUs: {z3.total_bytes / 2**30:.1f} GiB, fits: {z3.fits}")
""",
    "compute": """\
from gpukit.catalog import get_model
from gpukit.compute import flops_per_token, time_to_train

f = flops_per_token(get_model("llama-3-8b"), seq_len=8192)
t = time_to_train(get_model("llama-3-8b"), 15e12, "h100-sxm", 1024, mfu=0.4)
print(f"{f.model_flops:.3g} model FLOPs per token; {t.seconds / 86400:.1f} days on 1024 GPUs")
""",
    "comm": """\
from gpukit.comm import collective_time

c = collective_time("all_reduce", 1e9, 8, "nvlink4")  # 1 GB over 8 ranks on NVLink 4
print(f"{c.latency_s + c.bandwidth_s:.4f} s, bandwidth term {c.bandwidth_s:.4f} s")
""",
    "scaling": """\
from gpukit.catalog import get_model
from gpukit.scaling import scaling

s = scaling(get_model("llama-2-7b"), gpu="h100-sxm", gpus=(8, 16, 64), inter_link="eth-100g", tokens_per_gpu=8192)
for row in s.rows:
    print(row.gpus, f"step {row.step_s:.3f} s", f"efficiency {row.efficiency:.2f}")
""",
    "parallel": """\
from gpukit.catalog import get_model
from gpukit.parallel import ParallelConfig, estimate, make_cluster

e = estimate(
    get_model("llama-2-70b"),
    ParallelConfig(dp=4, tp=8, pp=2, zero_stage=1, micro_batch=1),
    make_cluster("h100-sxm", gpus_per_node=8),
    global_batch=512,
)
print(f"{e.memory_per_gpu_bytes / 2**30:.1f} GiB per GPU (fits: {e.fits}), step {e.step_time_s:.2f} s, MFU {e.mfu:.2f}")
""",
    "inference": """\
from gpukit.catalog import get_model
from gpukit.inference import serve

p = serve(get_model("llama-3.1-70b"), "h100-sxm", gpus=2, precision="fp8", rate=5)
print(f"TTFT {p.ttft_s * 1e3:.0f} ms, ITL {p.itl_s * 1e3:.1f} ms, {p.replicas} replica(s) for 5 req/s")
""",
    "cost": """\
from gpukit.cost import buy_vs_rent

b = buy_vs_rent("h100-sxm", 32, 1.35e6, rent_per_gpu_hour=12.29, utilization=0.9)
print(f"owning: ${b.owned_cost_per_gpu_hour:.2f} per GPU-hour; break-even at {b.break_even_utilization:.0%} use")
""",
    "plan": """\
from gpukit.catalog import get_model
from gpukit.plan import plan

r = plan("qlora", get_model("llama-2-70b"), tokens=1e8, deadline_hours=24, budget_usd=500)
print(r.recommendation)
""",
    "ground": """\
from gpukit.catalog import get_gpu, get_model
from gpukit.units import parse_size

gpu, model = get_gpu("h100-sxm"), get_model("llama-2-7b")
print(gpu.name, gpu.memory_gib, "GiB;", model.name, f"{model.n_params / 1e9:.2f} B parameters")
print(parse_size("1GB"), "bytes")
""",
}


def _short(value) -> str:
    if callable(value) and hasattr(value, "__qualname__"):  # a function default: its name, no address
        return f"{value.__module__}.{value.__qualname__}"
    text = re.sub(r" at 0x[0-9a-f]+", "", repr(value))
    if len(text) <= MAX_DEFAULT:
        return text
    return f"{type(value).__name__}(...)" if not isinstance(value, (str, tuple, list, dict)) else "..."


def _annotation(a) -> str:
    return a if isinstance(a, str) else getattr(a, "__name__", repr(a))


def signature(obj) -> str:
    """`(a: int, *, b: str = 'x') -> T` with long defaults shortened; '' where Python cannot tell."""
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return ""
    P = inspect.Parameter
    parts, star_done = [], False
    params = list(sig.parameters.values())
    for k, p in enumerate(params):
        if p.name.startswith("_"):  # a private argument (tests, internal callers) is no part of the API
            continue
        if p.kind == P.KEYWORD_ONLY and not star_done:
            parts.append("*")
            star_done = True
        text = {P.VAR_POSITIONAL: "*", P.VAR_KEYWORD: "**"}.get(p.kind, "") + p.name
        star_done = star_done or p.kind == P.VAR_POSITIONAL
        if p.annotation is not P.empty:
            text += f": {_annotation(p.annotation)}"
        if p.default is not P.empty:
            text += f" = {_short(p.default)}" if p.annotation is not P.empty else f"={_short(p.default)}"
        parts.append(text)
        if p.kind == P.POSITIONAL_ONLY and (k + 1 == len(params) or params[k + 1].kind != P.POSITIONAL_ONLY):
            parts.append("/")
    out = f"({', '.join(parts)})"
    if sig.return_annotation is not P.empty and _annotation(sig.return_annotation) != "None":
        out += f" -> {_annotation(sig.return_annotation)}"
    return out


def first_lines(obj, own: bool = True) -> str:
    """The first paragraph of obj's own docstring, at most DOC_LINES lines, joined into one line."""
    doc = inspect.getdoc(obj) if own else None
    if not doc:
        return ""
    para = doc.split("\n\n")[0].splitlines()
    text = " ".join(line.strip() for line in para[:DOC_LINES])
    return text + (" ..." if len(para) > DOC_LINES else "")


def _entry(name: str, obj) -> str:
    if inspect.isclass(obj) or callable(obj):  # functions, classes, lru_cache wrappers
        kind = "class " if inspect.isclass(obj) else ""
        doc = first_lines(obj, own=obj.__doc__ is not None)
        line = f"- {kind}**`{name}`**`{signature(obj)}`"
        return line + (f": {doc}" if doc else "")
    text = re.sub(r" at 0x[0-9a-f]+", "", repr(obj))
    if isinstance(obj, (set, frozenset)):  # sorted: a set's order changes with PYTHONHASHSEED
        text = f"{type(obj).__name__}({{{', '.join(sorted(map(repr, obj)))}}})"
    text = text if len(text) <= MAX_CONSTANT else text[: MAX_CONSTANT - 3] + "..."
    return f"- **`{name}`** = `{text.replace('`', '')}`"


def ground_names(module) -> list[str]:
    """Public top-level names that a ground module defines itself (functions, classes, constants)."""
    tree = ast.parse(Path(module.__file__).read_text())
    names = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names += [t.id for t in targets if isinstance(t, ast.Name)]
    out = []
    for n in names:
        if not n.startswith("_") and n not in out and hasattr(module, n):
            obj = getattr(module, n)
            if inspect.ismodule(obj) or (inspect.isfunction(obj) and obj.__module__ != module.__name__):
                continue
            out.append(n)
    return out


def _summary(module) -> str:
    doc = inspect.getdoc(module) or ""
    return " ".join(line.strip() for line in doc.split("\n\n")[0].splitlines())


def render() -> str:
    lines = [
        "# gpukit's Python API",
        "",
        "Generated by `scripts/gen_api_doc.py` from each calculator family's face (`__all__`) and the",
        "ground-floor modules; do not edit by hand (`python scripts/gen_api_doc.py` rewrites it,",
        "tests/test_api_doc.py checks that it is current and runs every example). Units are in the names",
        "(`_bytes`, `_s`, `_gbps`); calculators are pure functions returning frozen dataclasses (most have",
        "`to_text()` and `to_json_dict()`); bad input raises one-line `ValueError`s. Import from the face:",
        "`from gpukit.memory import estimate_memory`, never from a part (`gpukit.memory.resolve`).",
        "",
        "Families: "
        + ", ".join(f"[gpukit.{f}](#gpukit{f})" for f in FAMILIES)
        + "; [ground floor](#ground-floor).",
        "",
    ]
    for fam in FAMILIES:
        face = importlib.import_module(f"gpukit.{fam}")
        lines += [f"## gpukit.{fam}", "", _summary(face), "", "```python", EXAMPLES[fam].rstrip(), "```", ""]
        lines += [_entry(name, getattr(face, name)) for name in face.__all__]
        lines.append("")
    lines += ["## Ground floor", "", "Shared by every family: catalogs, units, errors, results.", ""]
    lines += ["```python", EXAMPLES["ground"].rstrip(), "```", ""]
    for g in GROUND:
        mod = importlib.import_module(f"gpukit.{g}")
        lines += [f"### gpukit.{g}", "", _summary(mod), ""]
        lines += [_entry(name, getattr(mod, name)) for name in ground_names(mod)]
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="write docs/API.md")
    parser.add_argument("--check", action="store_true", help="exit 1 when docs/API.md is stale")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = OUT.read_text() if OUT.exists() else ""
        if current != text:
            print(f"{OUT.relative_to(ROOT)} is stale: run python scripts/gen_api_doc.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text)
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
