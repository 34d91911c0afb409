"""`rigcheck reports export`: rows a person can copy into the calibration data as they are."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from bot.reports.export import COLUMNS, EXPORT_FORMAT, read_csv, rows, to_csv, to_json
from bot.store.reports import Report
from catalog import load_catalog
from estimator.calibration.measurements import BACKENDS

WHEN = datetime(2026, 3, 4, 12, 0, tzinfo=UTC)


def report(**changes: object) -> Report:
    fields: dict[str, object] = {
        "id": 7, "reporter": "hash", "guild_id": 1, "created_at": WHEN, "updated_at": WHEN, "status": "accepted",
        "status_reason": None, "gpu_id": "nvidia-t4", "gpu_count": 1, "model_id": "qwen3-8b", "quant_id": "q4_k_m",
        "engine": "llama.cpp", "decode_tps": 35.2, "prefill_tps": 1234.5, "prompt_tokens": 512,
        "generated_tokens": 128, "source": "llama-bench", "build": "8e672efe (4446)",
    }
    return Report.model_validate({**fields, **changes})


def test_rows_name_the_engine_and_the_backend_as_the_data_files_do() -> None:
    decode, prefill = rows([report()], load_catalog())
    assert list(decode) == list(COLUMNS)
    assert decode["engine"] == "llama.cpp"
    assert decode["backend"] == "CUDA" and decode["backend"] in BACKENDS
    assert (decode["test"], decode["tps"]) == ("tg128", 35.2)
    assert (prefill["test"], prefill["tps"]) == ("pp512", 1234.5)
    assert (decode["gpu"], decode["model"], decode["quant"]) == ("NVIDIA T4", "Qwen3-8B", "Q4_K_M")
    assert decode["date"] == "2026-03-04" and decode["source"] == "rigcheck community report #7"
    assert "reporter" not in decode and "guild_id" not in decode


def test_apple_reports_are_metal_and_a_dropped_gpu_has_no_backend() -> None:
    (apple,) = rows([report(gpu_id="apple-m2-max-32gb", prefill_tps=None)], load_catalog())
    assert apple["backend"] == "Metal"
    (gone,) = rows([report(gpu_id="no-such-gpu", prefill_tps=None)], load_catalog())
    assert gone["gpu"] == "no-such-gpu" and gone["backend"] is None


def test_json_and_csv_carry_the_same_rows() -> None:
    data = rows([report(), report(id=8, prefill_tps=None, notes="fan at 100 %")], load_catalog())
    document = json.loads(json.dumps(to_json(data)))
    assert document == {"format": EXPORT_FORMAT, "measurement": data}
    assert read_csv(to_csv(data)) == data
