"""docker-compose.yml, .env.example, the systemd units and the Kubernetes manifests: they parse, and they say
what the deployment relies on."""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.settings import Settings
from bot.sharding import ShardConfigError, resolve_shards

yaml = pytest.importorskip("yaml")

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
K8S = DEPLOY / "kubernetes"
SYSTEMD = DEPLOY / "systemd"
SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSW|API_?KEY|PRIVATE|CREDENTIAL", re.IGNORECASE)
SHARDING_KEYS = {"POD_NAME", "RIGCHECK_PODS", "RIGCHECK_SHARDS_PER_POD"}
# Read by the compose file's postgres service, not by the bot.
COMPOSE_KEYS = {"POSTGRES_PASSWORD"}
TRIGGER_URL = "http://127.0.0.1:8080/hooks/daily"


def load_all(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]


# --- docker compose ------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return yaml.safe_load((DEPLOY / "docker-compose.yml").read_text())


def test_compose_builds_the_image_from_the_repository(compose: dict[str, Any]) -> None:
    bot = compose["services"]["bot"]
    build = bot["build"]
    assert (DEPLOY / build["context"] / build["dockerfile"]).resolve() == (DEPLOY / "Dockerfile").resolve()
    assert bot["env_file"] in (".env", [".env"])
    assert bot["restart"] in ("always", "unless-stopped", "on-failure")


def test_compose_keeps_data_in_a_named_volume(compose: dict[str, Any]) -> None:
    bot = compose["services"]["bot"]
    mounts = dict(v.split(":", 1) for v in bot["volumes"])
    volume = next(name for name, target in mounts.items() if target.split(":")[0] == "/data")
    assert volume in compose["volumes"] and "/" not in volume
    assert bot["environment"]["RIGCHECK_DATA_DIR"] == "/data"


def test_compose_healthcheck_and_loopback_port(compose: dict[str, Any]) -> None:
    bot = compose["services"]["bot"]
    test = bot["healthcheck"]["test"]
    assert test[0] == "CMD" and "urllib.request" in test[-1] and "127.0.0.1:8080/livez" in test[-1]
    compile(test[-1], "<healthcheck>", "exec")
    assert all(str(p).startswith("127.0.0.1:") for p in bot["ports"])
    assert bot["environment"]["RIGCHECK_HTTP_HOST"] == "0.0.0.0"


def test_compose_has_no_inline_secrets(compose: dict[str, Any]) -> None:
    for service in compose["services"].values():
        env = service.get("environment") or {}
        items = env.items() if isinstance(env, dict) else (e.split("=", 1) for e in env)
        assert not [k for k, _ in items if SECRET_NAME.search(k)]


# --- .env.example ----------------------------------------------------------------------------------------

def env_example_lines() -> Iterator[tuple[bool, str, str]]:
    """(commented out, key, value) for every `KEY=value` line, commented or not."""
    for raw in (DEPLOY / ".env.example").read_text().splitlines():
        match = re.match(r"^(#\s*)?([A-Z][A-Z0-9_]*)=(.*)$", raw.strip())
        if match:
            yield bool(match.group(1)), match.group(2), match.group(3)


def test_env_example_lists_every_setting() -> None:
    keys = {key for _, key, _ in env_example_lines()}
    settings = {name.upper() for name in Settings.model_fields}
    assert settings | SHARDING_KEYS <= keys, sorted(settings | SHARDING_KEYS - keys)
    assert keys <= settings | SHARDING_KEYS | COMPOSE_KEYS, sorted(keys - settings - SHARDING_KEYS - COMPOSE_KEYS)


def test_env_example_has_an_empty_token_and_no_secret_values() -> None:
    active = {key: value for commented, key, value in env_example_lines() if not commented}
    assert active.get("DISCORD_TOKEN") == ""
    for commented, key, value in env_example_lines():
        if SECRET_NAME.search(key):
            assert value == "", f"{key} has an example value"
        # A blank number is a validation error at start-up, so blanks stay commented out.
        if not commented and key != "DISCORD_TOKEN":
            assert value, f"{key}= is blank; comment it out instead"


def test_env_example_values_are_valid_settings(tmp_path: Path) -> None:
    examples = {key: value for _, key, value in env_example_lines()}
    fields = {name.upper(): name for name in Settings.model_fields}
    chosen = {fields[k].lower(): v for k, v in examples.items() if k in fields and v}
    chosen.pop("rigcheck_shard_ids", None)
    Settings.model_validate(chosen)
    both = {k: v for k, v in examples.items() if k in {"RIGCHECK_SHARD_IDS", "RIGCHECK_SHARD_COUNT"}}
    assert resolve_shards(both)[0] is not None
    pods = {k: v for k, v in examples.items() if k in SHARDING_KEYS}
    assert resolve_shards(pods)[0] is not None


# --- systemd ---------------------------------------------------------------------------------------------

def unit(name: str) -> dict[str, list[tuple[str, str]]]:
    """Sections → (key, value) pairs; systemd keys repeat, so no configparser."""
    sections: dict[str, list[tuple[str, str]]] = {}
    current: list[tuple[str, str]] | None = None
    for raw in (SYSTEMD / name).read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], [])
            continue
        assert current is not None and "=" in line, f"{name}: stray line {line!r}"
        key, _, value = line.partition("=")
        current.append((key.strip(), value.strip()))
    return sections


def values(section: list[tuple[str, str]], key: str) -> list[str]:
    return [v for k, v in section if k == key]


def test_bot_unit_is_hardened_and_keeps_state() -> None:
    service = unit("rigcheck.service")["Service"]
    assert values(service, "DynamicUser") == ["yes"] or values(service, "User")
    assert values(service, "StateDirectory") == ["rigcheck"]
    assert "RIGCHECK_DATA_DIR=/var/lib/rigcheck" in values(service, "Environment")
    assert values(service, "EnvironmentFile") == ["/etc/rigcheck/rigcheck.env"]
    assert values(service, "Restart") == ["on-failure"]
    assert values(service, "ExecStart")[0].endswith("python -m bot")
    for key, wanted in {"NoNewPrivileges": "yes", "ProtectSystem": "strict", "ProtectHome": "yes",
                        "PrivateTmp": "yes", "CapabilityBoundingSet": ""}.items():
        assert values(service, key) == [wanted], key
    assert "multi-user.target" in values(unit("rigcheck.service")["Install"], "WantedBy")


def test_daily_unit_and_timer() -> None:
    service = unit("rigcheck-daily.service")["Service"]
    assert values(service, "Type") == ["oneshot"]
    (exec_start,) = values(service, "ExecStart")
    assert f"rigcheck trigger-daily --url {TRIGGER_URL} --secret-file " in exec_start
    credential = dict(v.split(":", 1) for v in values(service, "LoadCredential"))
    secret_arg = exec_start.split("--secret-file ", 1)[1].split()[0]
    assert secret_arg.startswith("%d/") and credential[secret_arg[3:]] == "/etc/rigcheck/webhook-secret"
    timer = unit("rigcheck-daily.timer")
    assert values(timer["Timer"], "OnCalendar") == ["daily"]
    assert values(timer["Timer"], "Unit") == ["rigcheck-daily.service"]
    assert values(timer["Install"], "WantedBy") == ["timers.target"]


def test_systemd_analyze_accepts_the_units() -> None:
    tool = shutil.which("systemd-analyze")
    if tool is None:
        pytest.skip("systemd-analyze is not installed")
    names = ["rigcheck.service", "rigcheck-daily.service", "rigcheck-daily.timer"]
    done = subprocess.run([tool, "verify", "--man=no", *names], cwd=SYSTEMD, capture_output=True, text=True,
                          timeout=120, check=False)
    # The install paths do not exist on the test machine; anything else is a real complaint.
    complaints = [ln for ln in (done.stdout + done.stderr).splitlines()
                  if ln.strip() and "is not executable: No such file or directory" not in ln]
    assert not complaints, complaints


# --- Kubernetes ------------------------------------------------------------------------------------------

BOT_NAMES = ("rigcheck", "rigcheck-daily")
K8S_VERSION = "1.32.0"


def _key(doc: dict[str, Any]) -> str:
    name = (doc.get("metadata") or {}).get("name")
    return doc["kind"] if name is None or name in BOT_NAMES else f"{doc['kind']}/{name}"


@pytest.fixture(scope="module")
def manifests() -> dict[str, dict[str, Any]]:
    """The bot's own objects by kind ("StatefulSet"), the others by kind and name ("Service/rigcheck-http")."""
    found: dict[str, dict[str, Any]] = {}
    for path in sorted(K8S.glob("*.yaml")):
        for doc in load_all(path):
            assert doc.get("kind"), f"{path.name}: a document without kind"
            assert _key(doc) not in found, f"a second {_key(doc)}"
            found[_key(doc)] = doc
    return found


@pytest.fixture(scope="module")
def built() -> list[dict[str, Any]]:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed")
    done = subprocess.run([kubectl, "kustomize", str(K8S)], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return [d for d in yaml.safe_load_all(done.stdout) if d]


def containers(pod_spec: dict[str, Any]) -> list[dict[str, Any]]:
    return list(pod_spec.get("initContainers") or []) + list(pod_spec["containers"])


def test_manifest_kinds_and_kustomization(manifests: dict[str, dict[str, Any]]) -> None:
    assert set(manifests) == {"Kustomization", "ConfigMap", "Service", "Service/rigcheck-http", "StatefulSet",
                              "PodDisruptionBudget", "CronJob", "Service/rigcheck-postgres",
                              "StatefulSet/rigcheck-postgres"}
    listed = set(manifests["Kustomization"]["resources"])
    assert listed == {p.name for p in K8S.glob("*.yaml")} - {"kustomization.yaml"}


def test_services_match_the_statefulset(manifests: dict[str, dict[str, Any]]) -> None:
    service, sts = manifests["Service"], manifests["StatefulSet"]
    assert service["spec"]["clusterIP"] == "None"
    # Stable names even while a pod is not ready, for reaching its metrics and probes.
    assert service["spec"]["publishNotReadyAddresses"] is True
    assert sts["spec"]["serviceName"] == service["metadata"]["name"]
    labels = sts["spec"]["template"]["metadata"]["labels"]
    for svc in (service, manifests["Service/rigcheck-http"]):
        assert svc["spec"]["selector"].items() <= labels.items()
        assert [p["port"] for p in svc["spec"]["ports"]] == [8080]
    # The trigger's Service balances over ready pods only.
    assert "clusterIP" not in manifests["Service/rigcheck-http"]["spec"]
    assert sts["spec"]["selector"]["matchLabels"].items() <= labels.items()


def test_statefulset_volume_probes_and_identity(manifests: dict[str, dict[str, Any]]) -> None:
    spec = manifests["StatefulSet"]["spec"]
    # The state is in PostgreSQL; a pod keeps only disposable caches and needs no volume of its own.
    assert "volumeClaimTemplates" not in spec
    (bot,) = spec["template"]["spec"]["containers"]
    volumes = {v["name"]: v for v in spec["template"]["spec"]["volumes"]}
    mounts = {m["mountPath"]: m["name"] for m in bot["volumeMounts"]}
    assert "emptyDir" in volumes[mounts["/data"]]
    env = {e["name"]: e for e in bot["env"]}
    assert env["POD_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"
    assert env["RIGCHECK_DATA_DIR"]["value"] == "/data"
    assert env["RIGCHECK_HTTP_HOST"]["value"] == "0.0.0.0"
    assert env["RIGCHECK_DATABASE_URL"]["valueFrom"]["secretKeyRef"] == {"name": "rigcheck", "key": "database-url"}
    workers = env["RIGCHECK_RENDER_WORKERS"]["valueFrom"]["resourceFieldRef"]
    assert workers == {"containerName": bot["name"], "resource": "limits.cpu", "divisor": "1"}
    assert "cpu" in bot["resources"]["limits"] and bot["resources"]["requests"]["memory"]
    ports = {p["name"]: p["containerPort"] for p in bot["ports"]}
    assert ports["http"] == 8080
    # Liveness never depends on Discord or the databases; readiness does.
    for probe, path in (("startupProbe", "/livez"), ("livenessProbe", "/livez"), ("readinessProbe", "/readyz")):
        get = bot[probe]["httpGet"]
        assert get["path"] == path and get["port"] in ("http", 8080)
    # Neither command nor args: the image's init entrypoint stays PID 1 and runs the bot.
    assert "command" not in bot and "args" not in bot
    pod_security = spec["template"]["spec"]["securityContext"]
    assert pod_security["runAsNonRoot"] is True and pod_security["runAsUser"] != 0
    assert bot["securityContext"]["allowPrivilegeEscalation"] is False


def test_disruption_budget_covers_the_bot_pods(manifests: dict[str, dict[str, Any]]) -> None:
    pdb = manifests["PodDisruptionBudget"]["spec"]
    labels = manifests["StatefulSet"]["spec"]["template"]["metadata"]["labels"]
    assert pdb["selector"]["matchLabels"].items() <= labels.items()
    assert pdb.get("maxUnavailable") == 1 or pdb.get("minAvailable")


def test_replicas_have_one_source(manifests: dict[str, dict[str, Any]], built: list[dict[str, Any]]) -> None:
    (count,) = [r["count"] for r in manifests["Kustomization"]["replicas"] if r["name"] == "rigcheck"]
    sts = next(d for d in built if d["kind"] == "StatefulSet" and d["metadata"]["name"] == "rigcheck")
    config = next(d for d in built if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "rigcheck")
    assert sts["spec"]["replicas"] == count and config["data"]["RIGCHECK_PODS"] == str(count)


def test_every_shard_has_exactly_one_pod(built: list[dict[str, Any]]) -> None:
    sts = next(d for d in built if d["kind"] == "StatefulSet" and d["metadata"]["name"] == "rigcheck")
    config = next(d for d in built if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "rigcheck")["data"]
    replicas = sts["spec"]["replicas"]
    name = sts["metadata"]["name"]
    owned: list[int] = []
    count = None
    for k in range(replicas):
        ids, count = resolve_shards({**config, "POD_NAME": f"{name}-{k}"})
        assert ids
        owned += ids
    assert count is not None and sorted(owned) == list(range(count))
    with pytest.raises(ShardConfigError):
        resolve_shards({**config, "POD_NAME": f"{name}-{replicas}"})


def test_secrets_only_by_reference(manifests: dict[str, dict[str, Any]]) -> None:
    assert not [k for k in manifests if k.startswith("Secret")]
    assert not [k for k in manifests["ConfigMap"]["data"] if SECRET_NAME.search(k)]
    pods = [manifests["StatefulSet"]["spec"]["template"]["spec"],
            manifests["StatefulSet/rigcheck-postgres"]["spec"]["template"]["spec"],
            manifests["CronJob"]["spec"]["jobTemplate"]["spec"]["template"]["spec"]]
    refs = set()
    for pod in pods:
        for container in containers(pod):
            for env in container.get("env") or []:
                if SECRET_NAME.search(env["name"]) or env["name"] == "RIGCHECK_DATABASE_URL":
                    assert "value" not in env, f"{env['name']} is inline"
                    refs.add(env["valueFrom"]["secretKeyRef"]["key"])
    assert refs == {"discord-token", "webhook-secret", "database-url", "postgres-password"}


def test_cronjob_triggers_once_through_any_ready_pod(manifests: dict[str, dict[str, Any]]) -> None:
    cron, service = manifests["CronJob"], manifests["Service/rigcheck-http"]
    fields = cron["spec"]["schedule"].split()
    assert len(fields) == 5 and all(re.fullmatch(r"[\d*/,-]+", f) for f in fields)
    assert cron["spec"]["concurrencyPolicy"] == "Forbid"
    pod = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    (trigger,) = pod["containers"]
    script = trigger["command"][-1]
    assert f"http://{service['metadata']['name']}:8080/hooks/daily" in script
    assert "rigcheck trigger-daily --url" in script and "--secret-file /etc/rigcheck/webhook-secret" in script
    # It follows the run for less time than the Job may live.
    wait = int(re.search(r"--wait (\d+)", script).group(1))  # type: ignore[union-attr]
    assert wait < cron["spec"]["jobTemplate"]["spec"]["activeDeadlineSeconds"]
    mount = next(m for m in trigger["volumeMounts"] if m["mountPath"] == "/etc/rigcheck")
    volume = next(v for v in pod["volumes"] if v["name"] == mount["name"])
    assert volume["secret"]["items"] == [{"key": "webhook-secret", "path": "webhook-secret"}]


def _stub(bin_dir: Path, name: str, body: str) -> None:
    path = bin_dir / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def _run_cron_script(manifests: dict[str, dict[str, Any]], tmp_path: Path, failures: int) -> tuple[int, list[str]]:
    sh = shutil.which("sh")
    if sh is None:
        pytest.skip("no POSIX shell")
    (trigger,) = manifests["CronJob"]["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    calls = tmp_path / "calls"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _stub(bin_dir, "rigcheck", f'echo "$*" >> "{calls}"\n[ "$(wc -l < "{calls}")" -gt {failures} ]\n')
    _stub(bin_dir, "sleep", "exit 0\n")
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run([sh, "-c", trigger["command"][-1]], env=env, capture_output=True, text=True,
                          timeout=60, check=False)
    return done.returncode, calls.read_text().splitlines()


def test_cronjob_script_calls_once_when_it_works(manifests: dict[str, dict[str, Any]], tmp_path: Path) -> None:
    status, calls = _run_cron_script(manifests, tmp_path, failures=0)
    assert status == 0 and len(calls) == 1
    assert calls[0].split()[:3] == ["trigger-daily", "--url", "http://rigcheck-http:8080/hooks/daily"]


def test_cronjob_script_retries_then_fails(manifests: dict[str, dict[str, Any]], tmp_path: Path) -> None:
    (tmp_path / "once").mkdir()
    status, calls = _run_cron_script(manifests, tmp_path / "once", failures=1)
    assert status == 0 and len(calls) == 2
    (tmp_path / "never").mkdir()
    status, calls = _run_cron_script(manifests, tmp_path / "never", failures=99)
    assert status != 0 and len(calls) == 3


def test_kustomize_builds_objects_valid_for_kubernetes(built: list[dict[str, Any]]) -> None:
    kinds = sorted(d["kind"] for d in built)
    assert kinds == ["ConfigMap", "CronJob", "PodDisruptionBudget", "Service", "Service", "Service", "StatefulSet",
                     "StatefulSet"]
    validator = pytest.importorskip("kubernetes_validate")
    for doc in built:
        # strict: an unknown or misspelt field is an error, not silently dropped by the API server.
        validator.validate(doc, K8S_VERSION, strict=True)
    # The validator does catch a mistake of the kind it is here for.
    broken = {**built[0], "spec": {"replica": 2}}
    with pytest.raises(validator.ValidationError):
        validator.validate(broken, K8S_VERSION, strict=True)


def test_compose_postgres_profile_is_wired_like_the_bot() -> None:
    compose = yaml.safe_load((DEPLOY / "docker-compose.yml").read_text())
    postgres, bot = compose["services"]["postgres"], compose["services"]["bot"]
    assert postgres["profiles"] == ["postgres"] and "ports" not in postgres
    assert postgres["env_file"] == bot["env_file"]
    assert bot["depends_on"]["postgres"] == {"condition": "service_healthy", "required": False}
    assert "pg_isready" in postgres["healthcheck"]["test"]
    volume = postgres["volumes"][0].split(":")[0]
    assert volume in compose["volumes"]
    example = (DEPLOY / ".env.example").read_text()
    assert "# RIGCHECK_DATABASE_URL=postgresql://rigcheck:PASSWORD@postgres:5432/rigcheck" in example
