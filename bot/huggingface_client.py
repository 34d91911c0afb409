"""Reading public model configs from the Hugging Face Hub, for models the catalog does not list.

`HubClient.fetch_model("org/name")` downloads `config.json` (and `model.safetensors.index.json` when the
repo has one) and derives a catalog `Model` with `catalog.huggingface.config`. Every failure is a `HubError` whose text
can be shown to the person who asked. `get_or_fetch` keeps derived entries in a small SQLite table so a
model is fetched once per `max_age_s`; an entry is written only after a complete derivation.

The token, when set, is sent as a Bearer header and never logged or shown in `repr`.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import re
import sqlite3
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import aiohttp
import aiosqlite
import yarl
from pydantic import ValidationError

from bot.params import BOUND_KEYS, CatalogError, Typed, validation_message
from bot.render.text import Message
from bot.store._sqlite import connect, is_corruption, sidecar_paths
from catalog.huggingface.bounds import check_config, check_params_b
from catalog.huggingface.config import UnsupportedConfig, model_from_config
from catalog.schema import Model

log = logging.getLogger(__name__)
_T = TypeVar("_T")

DEFAULT_BASE_URL = "https://huggingface.co"
DEFAULT_TOTAL_TIMEOUT_S = 10.0
DEFAULT_CONNECT_TIMEOUT_S = 5.0
DEFAULT_MAX_BYTES = 2_000_000
DEFAULT_MAX_TRIES = 3
DEFAULT_BACKOFF_S = 0.5
DEFAULT_MAX_AGE_S = 7 * 24 * 3600.0
REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
_RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
_REDIRECT_STATUS = frozenset({301, 302, 303, 307, 308})
MAX_REDIRECTS = 3
_TOTAL_SIZE = re.compile(rb'"total_size"\s*:\s*(\d+)')
_TOTAL_PARAMS = re.compile(rb'"total_parameters"\s*:\s*(\d+)')


class HubError(CatalogError):
    """A Hub lookup that failed; `str(err)` is a sentence for the person who asked."""


class BadRepoId(HubError):
    pass


class RepoNotFound(HubError):
    pass


class RepoGated(HubError):
    pass


class HubTimeout(HubError):
    pass


class HubTooLarge(HubError):
    pass


class HubUnavailable(HubError):
    """The Hub kept answering 5xx or 429 until the tries or the deadline ran out."""


class HubBadResponse(HubError):
    pass


def validate_repo(repo: str) -> str:
    text = (repo or "").strip()
    if text.lower().startswith("hf:"):
        text = text[3:].strip()
    if len(text) > 96 or ".." in text or not REPO_ID.match(text):
        raise BadRepoId.of("hub.bad_id", text=Typed(repr(text[:60])))
    return text


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number")


def _retry_after_s(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max((when - datetime.now(UTC)).total_seconds(), 0.0)


class HubClient:
    def __init__(
        self,
        base_url: str = DEFAULT_BASE_URL,
        token: str | None = None,
        *,
        cache_path: Path | str | None = None,
        total_timeout_s: float = DEFAULT_TOTAL_TIMEOUT_S,
        connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S,
        max_bytes: int = DEFAULT_MAX_BYTES,
        max_tries: int = DEFAULT_MAX_TRIES,
        backoff_s: float = DEFAULT_BACKOFF_S,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.__token = token or None
        self.cache_path = Path(cache_path) if cache_path is not None else None
        self.total_timeout_s = total_timeout_s
        self.connect_timeout_s = connect_timeout_s
        self.max_bytes = max_bytes
        self.max_tries = max(1, max_tries)
        self.backoff_s = backoff_s
        self._clock = clock or (lambda: datetime.now(UTC))
        self._session: aiohttp.ClientSession | None = None
        self._schema_ready = False
        self._inflight: dict[str, asyncio.Future[Model]] = {}

    @classmethod
    def from_settings(cls, settings: Any, cache_path: Path | str | None = None, **kwargs: Any) -> HubClient:
        """From bot.settings.Settings: RIGCHECK_HF_BASE_URL and RIGCHECK_HF_TOKEN."""
        token = settings.rigcheck_hf_token.get_secret_value() if settings.rigcheck_hf_token else None
        if cache_path is None:
            cache_path = Path(settings.rigcheck_data_dir) / "hf_models.sqlite3"
        return cls(settings.rigcheck_hf_base_url, token, cache_path=cache_path, **kwargs)

    def __repr__(self) -> str:
        return f"HubClient(base_url={self.base_url!r}, token={'***' if self.__token else None})"

    async def __aenter__(self) -> HubClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        if self._session is not None and not self._session.closed:
            await self._session.close()
        self._session = None

    def _http(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            headers = {"User-Agent": "rigcheck (model config reader)"}
            if self.__token:
                headers["Authorization"] = f"Bearer {self.__token}"
            self._session = aiohttp.ClientSession(headers=headers)
        return self._session

    # --- HTTP ----------------------------------------------------------------------------------

    async def _get(self, repo: str, filename: str, deadline: float, *, partial_ok: bool = False) -> tuple[bytes, bool]:
        """Body of {base}/{repo}/resolve/main/{filename} and whether it was cut at max_bytes.

        Retries 5xx and 429 (honouring Retry-After) while tries and the deadline allow.
        """
        url = yarl.URL(f"{self.base_url}/{repo}/resolve/main/{filename}")
        loop = asyncio.get_running_loop()
        redirects = 0
        attempt = 0
        while attempt < self.max_tries:
            attempt += 1
            left = deadline - loop.time()
            if left <= 0:
                raise self._timeout(repo)
            timeout = aiohttp.ClientTimeout(total=left, connect=min(self.connect_timeout_s, left))
            try:
                # Redirects are followed by hand: only to the configured origin, and only a few.
                async with self._http().get(url, timeout=timeout, allow_redirects=False) as resp:
                    log.debug("hub GET %s -> %s", url, resp.status)
                    if resp.status in _REDIRECT_STATUS:
                        url = self._same_origin(url, resp.headers.get("Location"), repo)
                        redirects += 1
                        attempt -= 1  # a redirect is not a failed try
                        if redirects > MAX_REDIRECTS:
                            raise HubBadResponse.of("hub.redirects", repo=repo, filename=filename,
                                                    most=MAX_REDIRECTS)
                        continue
                    if resp.status == 200:
                        return await self._read_capped(resp, repo, filename, partial_ok)
                    if resp.status == 404:
                        raise RepoNotFound.of("hub.not_found", repo=repo)
                    if resp.status in (401, 403):
                        raise RepoGated.of("hub.gated", repo=repo)
                    if resp.status not in _RETRY_STATUS:
                        raise HubBadResponse.of("hub.http", status=resp.status, repo=repo, filename=filename)
                    wait = _retry_after_s(resp.headers.get("Retry-After"))
            except (TimeoutError, aiohttp.ServerTimeoutError):
                raise self._timeout(repo) from None
            except aiohttp.ClientError as exc:
                # The exception's class (ClientConnectorDNSError …) is for the log; the person is told plainly.
                log.info("hub GET %s failed: %r", url, exc)
                raise HubUnavailable.of("hub.unreachable") from None
            if wait is None:
                wait = self.backoff_s * 2 ** (attempt - 1)
            if attempt == self.max_tries:
                break
            if loop.time() + wait >= deadline:
                raise HubUnavailable.of("hub.busy_wait", status=resp.status, seconds=f"{wait:g}")
            await asyncio.sleep(wait)
        raise HubUnavailable.of("hub.busy", status=resp.status, tries=self.max_tries)

    def _timeout(self, repo: str) -> HubTimeout:
        return HubTimeout.of("hub.timeout", seconds=f"{self.total_timeout_s:g}", repo=repo)

    def _same_origin(self, current: yarl.URL, location: str | None, repo: str) -> yarl.URL:
        if not location:
            raise HubBadResponse.of("hub.redirect_empty", repo=repo)
        target = current.join(yarl.URL(location))
        base = yarl.URL(self.base_url)
        if (target.scheme, target.host, target.port) != (base.scheme, base.host, base.port):
            raise HubBadResponse.of("hub.redirect_host", repo=repo, host=target.host, allowed=base.host)
        return target

    async def _read_capped(self, resp: aiohttp.ClientResponse, repo: str, filename: str,
                           partial_ok: bool) -> tuple[bytes, bool]:
        too_big = HubTooLarge.of("hub.too_large", repo=repo, filename=filename, kb=self.max_bytes // 1000)
        if resp.content_length is not None and resp.content_length > self.max_bytes and not partial_ok:
            raise too_big
        body = bytearray()
        async for chunk in resp.content.iter_chunked(64 * 1024):
            body += chunk
            if len(body) > self.max_bytes:
                if partial_ok:
                    return bytes(body[: self.max_bytes]), True
                raise too_big
        return bytes(body), False

    # --- derivation ----------------------------------------------------------------------------

    async def fetch_model(self, repo: str) -> Model:
        """Download the config (and the safetensors index, if any) and derive the model."""
        repo = validate_repo(repo)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.total_timeout_s
        try:
            async with asyncio.timeout(self.total_timeout_s):
                raw, _ = await self._get(repo, "config.json", deadline)
                index = await self._index(repo, deadline)
        except TimeoutError:
            raise self._timeout(repo) from None
        try:
            config = json.loads(raw, parse_constant=_refuse_constant)
        except (ValueError, RecursionError):  # bad UTF-8 or JSON, NaN, 4,300-digit ints, 100k-deep nesting
            raise HubBadResponse.of("hub.not_json", repo=repo) from None
        if not isinstance(config, dict):
            raise HubBadResponse.of("hub.not_object", repo=repo)
        try:
            check_config(config)
            model = model_from_config(repo, config, safetensors_index=index,
                                      fetched_at=self._clock().strftime("%Y-%m-%d"))
            check_params_b(model.params_b)
        except UnsupportedConfig as exc:
            reason = Message(f"hf.{exc.reason}", exc.values)
            raise HubBadResponse.of("hub.unsupported", repo=repo, reason=reason) from None
        except ValidationError as exc:
            first = exc.errors()[0]
            if not any(k in BOUND_KEYS for k in first.get("ctx") or {}):
                # Fields that contradict each other (heads not a multiple of KV heads): no one field to name.
                log.info("config of %s derives an invalid model: %s", repo, exc)
                raise HubBadResponse.of("hub.unusable", repo=repo) from None
            raise HubBadResponse.of("hub.impossible", repo=repo, reason=validation_message(first)) from None
        except (ValueError, ArithmeticError, TypeError) as exc:
            log.info("config of %s not derivable: %r", repo, exc)
            raise HubBadResponse.of("hub.unusable", repo=repo) from None
        return model

    async def _index(self, repo: str, deadline: float) -> dict[str, Any] | None:
        """Only `metadata` is needed; a sharded index can be megabytes, and its metadata comes first."""
        try:
            raw, cut = await self._get(repo, "model.safetensors.index.json", deadline, partial_ok=True)
        except (RepoNotFound, RepoGated, HubBadResponse, HubTooLarge, HubUnavailable):
            return None
        if not cut:
            try:
                doc = json.loads(raw)
                return doc if isinstance(doc, dict) else None
            except (UnicodeDecodeError, json.JSONDecodeError):
                return None
        meta: dict[str, int] = {}
        if m := _TOTAL_PARAMS.search(raw):
            meta["total_parameters"] = int(m.group(1))
        if m := _TOTAL_SIZE.search(raw):
            meta["total_size"] = int(m.group(1))
        return {"metadata": meta} if meta else None

    # --- cache ---------------------------------------------------------------------------------
    # The cache is disposable: a damaged file is moved aside and rebuilt, and a cache that cannot be
    # written (read-only or full disk) only costs a fetch, never an answer.

    async def _db(self) -> aiosqlite.Connection:
        if self.cache_path is None:
            raise RuntimeError("HubClient has no cache_path")
        self.cache_path.parent.mkdir(parents=True, exist_ok=True)
        db = await connect(self.cache_path)
        try:
            if not self._schema_ready:
                await db.execute("CREATE TABLE IF NOT EXISTS hf_models ("
                                 "repo TEXT PRIMARY KEY, model_json TEXT NOT NULL, fetched_at TEXT NOT NULL)")
                await db.commit()
                self._schema_ready = True
        except BaseException:
            await db.close()
            raise
        return db

    def _move_aside(self, exc: BaseException) -> None:
        assert self.cache_path is not None
        stamp = self._clock().strftime("%Y%m%dT%H%M%S%fZ")
        log.warning("Hugging Face cache %s is damaged (%s); moving it aside and starting empty", self.cache_path, exc)
        for part in sidecar_paths(self.cache_path):
            if part.exists():
                part.rename(part.with_name(f"{part.name}.corrupt-{stamp}"))
        self._schema_ready = False

    async def _with_db(self, action: Callable[[aiosqlite.Connection], Awaitable[_T]]) -> _T:
        """Run `action` on the cache; once more on a fresh file if SQLite says this one is damaged."""
        for attempt in (1, 2):
            try:
                db = await self._db()
                try:
                    return await action(db)
                finally:
                    await db.close()
            except sqlite3.DatabaseError as exc:
                if attempt == 2 or not is_corruption(exc):
                    raise
                self._move_aside(exc)
        raise AssertionError("unreachable")

    async def cached(self, repo: str, max_age_s: float | None = None) -> Model | None:
        """The cached entry if it is younger than max_age_s (any age when None)."""
        repo = validate_repo(repo)

        async def read(db: aiosqlite.Connection) -> Any:
            async with db.execute("SELECT model_json, fetched_at FROM hf_models WHERE repo = ?",
                                  (repo.lower(),)) as cur:
                return await cur.fetchone()

        try:
            row = await self._with_db(read)
        except (sqlite3.Error, OSError) as exc:
            log.warning("Hugging Face cache unreadable (%s); fetching instead", exc)
            return None
        if row is None:
            return None
        try:
            age = (self._clock() - datetime.fromisoformat(row[1])).total_seconds()
            if max_age_s is not None and age > max_age_s:
                return None
            return Model.model_validate_json(row[0])
        except (ValueError, TypeError):
            return None

    async def get_or_fetch(self, repo: str, max_age_s: float = DEFAULT_MAX_AGE_S) -> Model:
        """One fetch per model at a time: concurrent askers for the same repo share the first one's answer."""
        repo = validate_repo(repo)
        key = repo.lower()
        running = self._inflight.get(key)
        if running is None:
            running = asyncio.ensure_future(self._get_or_fetch(repo, max_age_s))
            self._inflight[key] = running

            def done(task: asyncio.Future[Model]) -> None:
                if self._inflight.get(key) is task:
                    del self._inflight[key]
                if not task.cancelled():
                    task.exception()  # retrieved, so an abandoned failure is not logged as unhandled

            running.add_done_callback(done)
        # Shielded: one asker giving up (a cancelled interaction) must not cancel the others' fetch.
        return await asyncio.shield(running)

    async def _get_or_fetch(self, repo: str, max_age_s: float) -> Model:
        hit = await self.cached(repo, max_age_s)
        if hit is not None:
            return hit
        model = await self.fetch_model(repo)

        async def write(db: aiosqlite.Connection) -> None:
            # One statement in one transaction: a crash leaves either the old row or the new one.
            await db.execute("INSERT OR REPLACE INTO hf_models (repo, model_json, fetched_at) VALUES (?, ?, ?)",
                             (repo.lower(), model.model_dump_json(), self._clock().isoformat()))
            await db.commit()

        try:
            await self._with_db(write)
        except (sqlite3.Error, OSError) as exc:
            log.warning("Hugging Face cache not written (%s); the answer stands, the next one fetches again", exc)
        return model


__all__ = [
    "DEFAULT_BASE_URL",
    "BadRepoId",
    "HubBadResponse",
    "HubClient",
    "HubError",
    "HubTimeout",
    "HubTooLarge",
    "HubUnavailable",
    "RepoGated",
    "RepoNotFound",
    "validate_repo",
]
