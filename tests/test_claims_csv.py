"""gpukit/data/claims.csv is generated from gpukit/audits (python -m gpukit.audits.export) and in sync."""

from __future__ import annotations

import csv
import io

from gpukit.audits import export
from gpukit.audits.claims import VERDICTS, claim_keys


def test_claims_csv_in_sync_with_the_audits():
    path = export.default_path()
    assert path.exists(), "gpukit/data/claims.csv missing: run python -m gpukit.audits.export"
    assert path.read_text(encoding="utf-8") == export.render(), (
        "gpukit/data/claims.csv is stale: run python -m gpukit.audits.export"
    )


def test_claims_csv_rows_and_columns():
    text = export.render()
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [r["key"] for r in rows] == list(claim_keys())
    assert len(rows) >= 60
    for r in rows:
        assert set(r) == set(export.COLUMNS) and r["quote"] and r["check"]
        assert r["verdict"] in VERDICTS


def test_check_flag_detects_a_stale_file(tmp_path, capsys):
    f = tmp_path / "claims.csv"
    assert export.main(["--out", str(f)]) == 0
    assert export.main(["--out", str(f), "--check"]) == 0
    f.write_text(f.read_text().replace("correct", "c0rrect", 1))
    assert export.main(["--out", str(f), "--check"]) == 1
    assert "out of date" in capsys.readouterr().err
