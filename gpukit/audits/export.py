"""Write gpukit/data/claims.csv from the audits: one row per registered claim, every topic.

    python -m gpukit.audits.export            # (re)write gpukit/data/claims.csv
    python -m gpukit.audits.export --check    # exit 1, naming the first difference, if it is stale
    python -m gpukit.audits.export --out FILE # write elsewhere

The file is GENERATED (gpukit/data/README.md says so; a CSV comment line would break the catalog header
checks): edit the audit functions in gpukit/audits/<topic>.py, then rerun this.
Numbers are written with 6 significant digits so that the file is the same on every machine.
tests/test_claims_csv.py checks that gpukit/data/claims.csv equals what this module would write.
"""

from __future__ import annotations

import argparse
import csv
import io
import sys
from pathlib import Path

COLUMNS = (
    "key",
    "topic",
    "article",
    "text",
    "quote",
    "claimed",
    "claimed_unit",
    "computed",
    "unit",
    "ratio",
    "verdict",
    "check",
    "assumptions",
    "source",
    "source_url",
    "accessed",
)
# The provenance columns every gpukit/data/*.csv carries: the article, its file, when the seeds were read.
SEEDS_READ = "2026-12-03"


def _num(x) -> str:
    if x is None:
        return ""
    return f"{float(x):.6g}"


def rows() -> list[dict]:
    """Every registered claim, computed with its defaults, in registry order."""
    from gpukit.audits.claims import ARTICLES, claims

    out = []
    for c in claims():
        out.append(
            {
                "key": c.key,
                "topic": c.topic,
                "article": c.article,
                "source": ARTICLES[c.article][0],
                "source_url": f"shared/seeds/{ARTICLES[c.article][1]}",
                "accessed": SEEDS_READ,
                "text": c.text,
                "quote": " ".join(c.quote.split()),
                "claimed": _num(c.claimed),
                "claimed_unit": c.claimed_unit,
                "computed": _num(c.computed),
                "unit": c.unit,
                "ratio": _num(c.ratio),
                "verdict": c.verdict,
                "check": " ".join(c.check.split()),
                "assumptions": " | ".join(c.assumptions),
            }
        )
    return out


def render() -> str:
    """gpukit/data/claims.csv's full text."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    w.writeheader()
    w.writerows(rows())
    return buf.getvalue()


def default_path() -> Path:
    from gpukit.catalog import data_dir

    return data_dir() / "claims.csv"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        allow_abbrev=False, prog="python -m gpukit.audits.export", description=__doc__.splitlines()[0]
    )
    p.add_argument(
        "--check", action="store_true", help="exit 1 if the file differs from what would be written"
    )
    p.add_argument("--out", help="file to write (default gpukit/data/claims.csv)")
    args = p.parse_args(argv)
    path = Path(args.out) if args.out else default_path()
    text = render()
    if args.check:
        old = path.read_text(encoding="utf-8") if path.exists() else ""
        a, b = old.splitlines(), text.splitlines()
        if old != text:
            first = next(
                (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
            )
            print(
                f"{path} is out of date (first difference on line {first + 1}); run python -m gpukit.audits.export",
                file=sys.stderr,
            )
            return 1
        print(f"{path} is up to date ({len(b) - 1} claims)")
        return 0
    path.write_text(text, encoding="utf-8")
    print(f"wrote {path} ({text.count(chr(10)) - 1} claims)")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
