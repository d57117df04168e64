"""Outside a family only its face is imported (issue 22, STYLE.md): other families, the layers (cli,
course, audits, widgets, bench), tests, scripts, notebooks, docs and the README write
`from gpukit.memory import x`, never `from gpukit.memory.parts import x`; a family's own parts import
each other directly and never through their own face."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FAMILIES = ("compute", "comm", "memory", "scaling", "parallel", "inference", "cost", "plan")
PART = re.compile(rf"(?:from|import)\s+gpukit\.({'|'.join(FAMILIES)})\.\w+")


def _python_sources():
    for d in ("gpukit", "tests", "scripts"):
        for p in (ROOT / d).rglob("*.py"):
            yield p, p.read_text()
    for nb in (ROOT / "notebooks").glob("*.ipynb"):
        cells = json.loads(nb.read_text())["cells"]
        yield nb, "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")


def _family_of(path: Path) -> str | None:
    rel = path.relative_to(ROOT).parts
    return rel[1] if len(rel) > 2 and rel[0] == "gpukit" and rel[1] in FAMILIES else None


def test_outside_a_family_only_its_face_is_imported():
    bad = []
    for path, src in _python_sources():
        own = _family_of(path)
        for node in ast.walk(ast.parse(src)):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                parts = node.module.split(".")
                if len(parts) >= 3 and parts[0] == "gpukit" and parts[1] in FAMILIES and parts[1] != own:
                    bad.append(f"{path.relative_to(ROOT)}: from {node.module}")
                if own and node.module == f"gpukit.{own}":
                    bad.append(f"{path.relative_to(ROOT)}: a part imports its own face")
            elif isinstance(node, ast.ImportFrom) and node.module == "gpukit" and own:
                if any(a.name == own for a in node.names):
                    bad.append(f"{path.relative_to(ROOT)}: a part imports its own face")
    for doc in [ROOT / "README.md", *(ROOT / "docs").rglob("*.md")]:
        bad += [f"{doc.relative_to(ROOT)}: {m.group(0)}" for m in PART.finditer(doc.read_text())]
    assert bad == []


def test_no_import_cycle_anywhere_in_gpukit():
    """0 import cycles (issue 22): no module of gpukit reaches itself through imports, function-local
    ones included (grimp counts them); a face importing its parts is not a cycle because no part imports
    its face (above)."""
    import grimp

    graph = grimp.build_graph("gpukit", cache_dir=None)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.find_modules_directly_imported_by(v):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    assert cycles == []
