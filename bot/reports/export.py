"""Accepted reports as rows shaped like the calibration measurements (estimator/calibration/data/
llamacpp.toml: gpu, gpu_count, model, model_hf, quant, engine, backend, test, tps, date, source, note), plus
their provenance, for a person to review and copy into the data by hand. Never read by the fit.

`--json` writes `{"format": "rigcheck-reports", "measurement": [row, …]}` (the data files' `[[measurement]]`
tables); `--csv` the same rows, one column per key of `COLUMNS` in its order. `backend` is spelled as the
data files spell it ("CUDA", "ROCm", …) and is empty for a GPU the catalog no longer has. The reporter and
server are left out: a reviewer needs what was measured, not who measured it.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from typing import Any

from bot.store.reports import Report
from catalog.store import Catalog
from estimator.calibration.measurements import BACKENDS
from estimator.query import backend_of

# The data files' spelling of each backend, which the measurement loader reads back.
BACKEND_NAMES = {backend: name for name, backend in BACKENDS.items()}

EXPORT_FORMAT = "rigcheck-reports"
# Column → type, in output order; CSV cells are read back through these.
COLUMNS: dict[str, type] = {
    "gpu": str, "gpu_count": int, "model": str, "model_hf": str, "quant": str, "engine": str, "backend": str,
    "test": str, "tps": float, "date": str, "source": str, "note": str, "report_id": int, "report_source": str,
    "status": str, "build": str, "ctx": int, "estimate_decode_tps": float, "estimate_decode_tps_low": float,
    "estimate_decode_tps_high": float, "estimate_prefill_tps": float, "estimator_version": str,
}


def _names(catalog: Catalog, r: Report) -> tuple[str, str | None, str, str | None, str]:
    """Catalog names (and the GPU's backend) for the stored ids; an id a later catalog dropped is exported
    as stored."""
    try:
        entry = catalog.gpu(r.gpu_id)
        gpu, backend = entry.name, BACKEND_NAMES.get(backend_of(entry))
    except (KeyError, LookupError):
        gpu, backend = r.gpu_id, None
    try:
        model = catalog.model(r.model_id)
        model_name, hf = model.name, model.hf_repo
    except (KeyError, LookupError):
        model_name, hf = r.model_id, None
    try:
        quant = catalog.quant(r.quant_id).name
    except (KeyError, LookupError):
        quant = r.quant_id
    return gpu, backend, model_name, hf, quant


def rows(reports: Iterable[Report], catalog: Catalog) -> list[dict[str, Any]]:
    """One row per measured quantity: decode (`tgN`) and, when reported, prompt processing (`ppN`)."""
    out = []
    for r in reports:
        gpu, backend, model, hf, quant = _names(catalog, r)
        base = {
            "gpu": gpu, "gpu_count": r.gpu_count, "model": model, "model_hf": hf, "quant": quant, "engine": r.engine,
            "backend": backend, "date": r.created_at.date().isoformat(), "source": f"rigcheck community report #{r.id}",
            "note": r.notes, "report_id": r.id, "report_source": r.source, "status": r.status, "build": r.build,
            "ctx": r.ctx, "estimate_decode_tps": r.estimate_decode_tps,
            "estimate_decode_tps_low": r.estimate_decode_tps_low,
            "estimate_decode_tps_high": r.estimate_decode_tps_high,
            "estimate_prefill_tps": r.estimate_prefill_tps, "estimator_version": r.estimator_version,
        }
        measured = [(f"tg{r.generated_tokens or ''}", r.decode_tps)]
        if r.prefill_tps is not None:
            measured.append((f"pp{r.prompt_tokens or ''}", r.prefill_tps))
        for test, tps in measured:
            out.append({name: {**base, "test": test, "tps": tps}[name] for name in COLUMNS})
    return out


def to_json(data: list[dict[str, Any]]) -> dict[str, Any]:
    return {"format": EXPORT_FORMAT, "measurement": data}


def to_csv(data: list[dict[str, Any]]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(COLUMNS), lineterminator="\n")
    writer.writeheader()
    for row in data:
        writer.writerow({k: "" if v is None else v for k, v in row.items()})
    return buffer.getvalue()


def read_csv(text: str) -> list[dict[str, Any]]:
    """The rows `to_csv` wrote, with their types back (an empty cell is None)."""
    return [
        {name: (None if row[name] == "" else kind(row[name])) for name, kind in COLUMNS.items()}
        for row in csv.DictReader(io.StringIO(text))
    ]
