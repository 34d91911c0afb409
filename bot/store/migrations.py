"""The state database schema, as the ordered steps that build it, for SQLite and PostgreSQL alike.

Step N (1-based) takes a database from schema version N-1 to N. Steps are append-only: once released,
a step is never edited, because databases in the field have already run it. A step may add or
reshape, but it must carry existing rows across — never drop data.

Steps are written in the SQL both databases accept, with SQLite's type names; `bot.store.db.for_postgres`
maps INTEGER to BIGINT (snowflakes need 64 bits) and INTEGER PRIMARY KEY to an identity column. A new
table is one more step here and its name in TABLES (the order export and import copy tables in).
"""

from __future__ import annotations

Migration = tuple[str, ...]

MIGRATIONS: tuple[Migration, ...] = (
    # 1: per-guild and per-user defaults, daily-summary subscriptions and their deliveries,
    #    webhook replay protection.
    (
        """
        CREATE TABLE settings (
            scope TEXT NOT NULL CHECK (scope IN ('guild', 'user')),
            subject_id INTEGER NOT NULL,
            -- JSON, so a new optional setting needs a model field, not a migration.
            data TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            PRIMARY KEY (scope, subject_id)
        )
        """,
        """
        CREATE TABLE subscriptions (
            id INTEGER PRIMARY KEY,
            guild_id INTEGER NOT NULL,
            channel_id INTEGER,
            webhook_url TEXT,
            gpus TEXT NOT NULL,
            ctx INTEGER NOT NULL CHECK (ctx > 0),
            locale TEXT NOT NULL,
            active INTEGER NOT NULL DEFAULT 1,
            disabled_reason TEXT,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            CHECK (channel_id IS NOT NULL OR webhook_url IS NOT NULL)
        )
        """,
        # NULLs never collide in a unique index, so a webhook-only target is folded to channel 0.
        "CREATE UNIQUE INDEX subscriptions_target ON subscriptions (guild_id, COALESCE(channel_id, 0))",
        """
        CREATE TABLE deliveries (
            id INTEGER PRIMARY KEY,
            subscription_id INTEGER NOT NULL REFERENCES subscriptions (id),
            day TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('pending', 'sent', 'failed')),
            forced INTEGER NOT NULL DEFAULT 0,
            message_id INTEGER,
            reason TEXT,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL
        )
        """,
        # At most one attempt in flight per subscription and day, forced or not ...
        """
        CREATE UNIQUE INDEX deliveries_one_in_flight ON deliveries (subscription_id, day)
        WHERE status = 'pending'
        """,
        # ... and the scheduled run sends once; only an explicit force may send the same day again.
        """
        CREATE UNIQUE INDEX deliveries_scheduled_once ON deliveries (subscription_id, day)
        WHERE status IN ('pending', 'sent') AND forced = 0
        """,
        "CREATE INDEX deliveries_day ON deliveries (day)",
        """
        CREATE TABLE seen_signatures (
            digest TEXT PRIMARY KEY,
            seen_at TEXT NOT NULL
        )
        """,
        "CREATE INDEX seen_signatures_seen_at ON seen_signatures (seen_at)",
    ),
    # 2: usage statistics and catalog snapshots for "what changed" in summaries.
    (
        """
        CREATE TABLE query_log (
            id INTEGER PRIMARY KEY,
            at TEXT NOT NULL,
            command TEXT NOT NULL,
            args TEXT NOT NULL,
            -- Copied out of args so the summary can group by them without parsing JSON.
            gpu TEXT,
            model TEXT,
            guild_id INTEGER,
            user_id INTEGER,
            latency_ms REAL NOT NULL,
            cache_hit INTEGER NOT NULL,
            outcome TEXT NOT NULL
        )
        """,
        "CREATE INDEX query_log_guild_at ON query_log (guild_id, at)",
        "CREATE INDEX query_log_at ON query_log (at)",
        """
        CREATE TABLE catalog_snapshots (
            id INTEGER PRIMARY KEY,
            version TEXT NOT NULL,
            gpu_ids TEXT NOT NULL,
            model_ids TEXT NOT NULL,
            recorded_at TEXT NOT NULL
        )
        """,
        "CREATE INDEX catalog_snapshots_recorded_at ON catalog_snapshots (recorded_at)",
    ),

    # 3: a fleet of processes sharing one database. A delivery claim names its owner and carries a
    #    lease, so a claim left by a process that died is taken over once it expires; daily runs are
    #    recorded so any process can report on a run another one is carrying out.
    (
        "ALTER TABLE deliveries ADD COLUMN claimed_by TEXT",
        "ALTER TABLE deliveries ADD COLUMN lease_until TEXT",
        "CREATE INDEX deliveries_pending ON deliveries (status, lease_until)",
        """
        CREATE TABLE daily_runs (
            id TEXT PRIMARY KEY,
            day TEXT NOT NULL,
            guild_id INTEGER,
            dry_run INTEGER NOT NULL,
            forced INTEGER NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('running', 'done', 'failed')),
            started_by TEXT NOT NULL,
            total INTEGER,
            -- JSON: {"sent": 3, "skipped": 1, ...} while running, and every result at the end.
            counts TEXT NOT NULL,
            results TEXT,
            error TEXT,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL
        )
        """,
        "CREATE INDEX daily_runs_created_at ON daily_runs (created_at)",
    ),
    # 4: community speed reports (`/report`), the salt their reporters are hashed with, and the
    #    servers that opted out of them.
    (
        """
        CREATE TABLE reports (
            id INTEGER PRIMARY KEY,
            -- A salted hash of the Discord user id: enough to list and delete one's own, never shown.
            reporter TEXT NOT NULL,
            guild_id INTEGER,
            created_at TEXT NOT NULL,
            gpu_id TEXT NOT NULL,
            gpu_count INTEGER NOT NULL CHECK (gpu_count > 0),
            model_id TEXT NOT NULL,
            quant_id TEXT NOT NULL,
            engine TEXT NOT NULL,
            build TEXT,
            ctx INTEGER,
            decode_tps REAL NOT NULL CHECK (decode_tps > 0),
            prefill_tps REAL CHECK (prefill_tps > 0),
            prompt_tokens INTEGER,
            generated_tokens INTEGER,
            source TEXT NOT NULL,
            notes TEXT,
            -- The estimate when it was reported, so a later estimator can be judged against it.
            estimate_decode_tps REAL,
            estimate_decode_tps_low REAL,
            estimate_decode_tps_high REAL,
            estimate_prefill_tps REAL,
            estimator_version TEXT,
            status TEXT NOT NULL CHECK (status IN ('accepted', 'held', 'hidden')),
            status_reason TEXT,
            updated_at TEXT NOT NULL
        )
        """,
        "CREATE INDEX reports_combo ON reports (gpu_id, model_id, quant_id, engine, status)",
        "CREATE INDEX reports_reporter_at ON reports (reporter, created_at)",
        "CREATE INDEX reports_guild_at ON reports (guild_id, created_at)",
        """
        CREATE TABLE secrets (
            name TEXT PRIMARY KEY,
            value TEXT NOT NULL,
            created_at TEXT NOT NULL
        )
        """,
        """
        CREATE TABLE report_opt_outs (
            guild_id INTEGER PRIMARY KEY,
            created_at TEXT NOT NULL
        )
        """,
    ),
    # 5: commands deferred and not yet answered, so a crash between "thinking…" and the answer loses
    #    nothing. Rows live as long as the interaction token (15 minutes); a claim names its holder and
    #    carries a lease, so in a fleet one process finishes each.
    (
        """
        CREATE TABLE pending_interactions (
            interaction_id INTEGER NOT NULL,
            application_id INTEGER NOT NULL,
            -- The interaction token: a credential until the deadline, emptied once the answer is out.
            token TEXT NOT NULL,
            command TEXT NOT NULL,
            -- JSON: the render job and its arguments, enough to compute the answer again.
            request TEXT NOT NULL,
            locale TEXT NOT NULL,
            created_at TEXT NOT NULL,
            deadline TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('pending', 'done')),
            attempts INTEGER NOT NULL DEFAULT 0,
            claimed_by TEXT,
            lease_until TEXT,
            updated_at TEXT NOT NULL,
            PRIMARY KEY (interaction_id)
        )
        """,
        "CREATE INDEX pending_interactions_due ON pending_interactions (status, deadline)",
    ),
)

LATEST_VERSION = len(MIGRATIONS)

# Every table the steps create, parents before children (deliveries refer to subscriptions).
TABLES: tuple[str, ...] = (
    "settings",
    "subscriptions",
    "deliveries",
    "seen_signatures",
    "query_log",
    "catalog_snapshots",
    "daily_runs",
    "reports",
    "secrets",
    "report_opt_outs",
    "pending_interactions",
)
