"""One audit per quote (issue 23, section 4): a sentence of an article gets one verdict everywhere.

Two registered audits must not quote the same words (one quote inside another counts as the same
claim: an audit of part of a sentence quotes only that part), and every notebook that cites a claim
cites a key of the registry, so that it shows the registry's one verdict.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from gpukit.audits.claims import claim_keys, claims

ROOT = Path(__file__).resolve().parent.parent


def _norm(q: str) -> str:
    return re.sub(r"\s+", " ", q.replace("’", "'").replace("\u2014", "-")).strip().lower()


def test_no_quote_has_two_audits():
    seen = [(c.key, _norm(c.quote)) for c in claims()]
    clashes = [(a, b) for i, (a, qa) in enumerate(seen) for b, qb in seen[i + 1 :] if qa in qb or qb in qa]
    assert not clashes, f"these audits quote the same words (merge them or quote disjoint parts): {clashes}"


def _cited_keys(nb_path: Path) -> set[str]:
    """Claim keys a notebook names: claim("key"), and the key tuples the audits export for notebooks."""
    nb = json.loads(nb_path.read_text())
    code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    keys = set(re.findall(r"""claim\(\s*["']([a-z0-9_]+)["']""", code))
    for m in re.finditer(r"for key in \(([^)]*)\)", code):
        keys |= set(re.findall(r"""["']([a-z0-9_]+)["']""", m.group(1)))
    return keys


def test_every_notebook_cites_registered_audits():
    known = set(claim_keys())
    for nb in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        missing = _cited_keys(nb) - known
        assert not missing, f"{nb.name} cites claims the registry does not have: {sorted(missing)}"


def test_the_merged_quotes_have_one_key():
    keys = set(claim_keys())
    # the duplicates issue 23 found, each now one audit
    assert {"sixteen_gpus_6x", "tp_allreduce_each_token", "two_h100_1_7x", "comm_10pct_efficiency"} <= keys
    assert not {"dp_sixteen_gpus_6x", "tp_serving_all_reduce_per_token", "dp_two_h100_1_7x"} & keys
