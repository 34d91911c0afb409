"""Quality signals for ranking, each a dated, sourced snapshot kept in `data/quality/`."""

from __future__ import annotations

import tomllib
from functools import cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

QUALITY_DIR = Path(__file__).resolve().parent / "data" / "quality"


class ArenaScore(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str = Field(description="catalog model id")
    arena_name: str = Field(description="the model's name on the leaderboard")
    score: float
    votes: int = Field(ge=0)


class QualitySnapshot(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    source: str = Field(min_length=8)
    metric: str
    date: str = Field(pattern=r"^\d{4}-\d{2}-\d{2}$")
    score: tuple[ArenaScore, ...]

    def by_model(self) -> dict[str, float]:
        return {s.model: s.score for s in self.score}


@cache
def arena_snapshot() -> QualitySnapshot:
    """The LMArena text leaderboard snapshot the quality order rests on."""
    with (QUALITY_DIR / "lmarena-text.toml").open("rb") as fh:
        return QualitySnapshot.model_validate(tomllib.load(fh))
