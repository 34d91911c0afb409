"""Every setting in one pydantic model, read from the environment (and an optional `.env`)."""

from __future__ import annotations

import math
import os
from pathlib import Path
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

CGROUP_CPU_MAX = Path("/sys/fs/cgroup/cpu.max")


def available_cpus(cpu_max: Path = CGROUP_CPU_MAX) -> int:
    """CPUs this process may use: its affinity and, in a container, its cgroup's CPU quota (a pod's
    limit), not the node's count, which os.cpu_count() reports."""
    try:
        count = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        count = os.cpu_count() or 1
    try:
        quota, period = cpu_max.read_text().split()[:2]
        if quota != "max":
            count = min(count, max(1, math.ceil(int(quota) / int(period))))
    except (OSError, ValueError):
        pass
    return max(count, 1)


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_file=".env", env_file_encoding="utf-8", extra="ignore")

    discord_token: SecretStr | None = Field(default=None, description="bot token; none → the local sandbox")
    discord_api_base: str | None = Field(default=None, description="REST base, e.g. the sandbox's /api/v10")
    discord_gateway_url: str | None = Field(default=None, description="gateway websocket URL")
    rigcheck_data_dir: Path = Path("data")
    rigcheck_dev_guild: int | None = Field(default=None, description="sync commands to this guild only")
    rigcheck_shard_ids: str | None = Field(default=None, description="comma-separated shard ids this process runs")
    rigcheck_shard_count: int | None = None
    rigcheck_cache_max_mb: int = 256
    rigcheck_http_host: str = "127.0.0.1"
    rigcheck_http_port: int = 8080
    rigcheck_http_enabled: bool = True
    rigcheck_webhook_secret: SecretStr | None = None
    rigcheck_hf_base_url: str = "https://huggingface.co"
    rigcheck_hf_token: SecretStr | None = None
    rigcheck_hf_timeout_s: float = Field(default=10.0, gt=0, description="whole-request deadline for a hub fetch")
    rigcheck_render_workers: int = Field(
        default_factory=lambda: min(8, available_cpus()), ge=0, le=32,
        description="processes that draw charts, one per usable CPU (0: threads in the bot process)",
    )
    rigcheck_chart_wait_s: float = Field(
        default=0.3, ge=0, le=60,
        description="how long an answer waits for its chart (not at all when the chart is queued for longer); "
                    "after that it is posted without and the chart edited in",
    )
    rigcheck_guild_ready_timeout: float = 2.0
    rigcheck_log_level: str = "INFO"
    rigcheck_database_url: SecretStr | None = Field(
        default=None, description="postgresql://… shared by every process; unset: a SQLite file in the data dir",
    )
    rigcheck_instance: str | None = Field(
        default=None, description="this process's name in delivery claims; default POD_NAME, else host and shards",
    )
    rigcheck_daily_lease_s: float = Field(
        default=300.0, gt=0, description="how long a delivery claim holds before another process may take it over",
    )
    rigcheck_daily_sweep_s: float = Field(
        default=60.0, gt=0, description="how often to look for claims whose holder died",
    )
    rigcheck_resume_lease_s: float = Field(
        default=60.0, gt=0,
        description="how long a deferred command's claim holds before another process may answer it instead",
    )

    rigcheck_owner_ids: str = Field(
        default="", description="comma-separated Discord user ids who may moderate community reports",
    )
    rigcheck_report_salt: SecretStr | None = Field(
        default=None, description="key for hashing reporters; unset: generated once and kept in the state database",
    )
    rigcheck_report_user_limit: int = Field(default=5, ge=1, description="reports one person may make per window")
    rigcheck_report_guild_limit: int = Field(default=50, ge=1, description="reports one server may make per window")
    rigcheck_report_window_s: float = Field(default=3600.0, gt=0, description="the rate-limit window for reports")

    @property
    def owner_ids(self) -> frozenset[int]:
        return frozenset(int(s) for s in self.rigcheck_owner_ids.replace(" ", "").split(",") if s.isdigit())

    @field_validator("rigcheck_database_url")
    @classmethod
    def _postgres_url(cls, value: SecretStr | None) -> SecretStr | None:
        if value is None or not value.get_secret_value().strip():
            return None
        parts = urlsplit(value.get_secret_value().strip())
        if parts.scheme not in ("postgresql", "postgres"):
            # The message must not echo the value: it may hold a password.
            raise ValueError("must be a postgresql://user:password@host:port/database URL")
        return SecretStr(value.get_secret_value().strip())

    @property
    def database_url(self) -> str | None:
        return self.rigcheck_database_url.get_secret_value() if self.rigcheck_database_url else None

    @property
    def shard_ids(self) -> list[int] | None:
        if not self.rigcheck_shard_ids:
            return None
        return [int(s) for s in self.rigcheck_shard_ids.split(",") if s.strip()]
