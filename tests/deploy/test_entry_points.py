"""How the entry points start and stop: `rigcheck run` passes SIGTERM/SIGINT on to its bot and exits,
`--prompt` ends with its input, and a bot that cannot reach Discord says so in one line."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
RIGCHECK = [sys.executable, "-m", "bot.cli"]


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DISCORD_", "RIGCHECK_"))}
    # Chart worker processes are not what these tests are about (tests/deploy/test_pid1.py starts them).
    env.update({"PYTHONPATH": str(ROOT), "RIGCHECK_DATA_DIR": str(tmp_path / "data"), "PYTHONUNBUFFERED": "1",
                "NO_PROXY": "127.0.0.1,localhost", "RIGCHECK_RENDER_WORKERS": "0"})
    env.update(extra)
    return env


def _children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def _alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "zombie" not in status


def _wait_for_line(proc: subprocess.Popen[str], needle: str, timeout: float) -> list[str]:
    assert proc.stdout is not None
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        seen.append(line)
        if needle in line:
            return seen
    raise AssertionError(f"{needle!r} not printed within {timeout}s: {''.join(seen)[-2000:]}")


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs /proc to find the bot child")
# SIGTERM is what a service manager sends; Ctrl-C takes the same path and runs with the long tests.
@pytest.mark.parametrize("sig", [signal.SIGTERM, pytest.param(signal.SIGINT, marks=pytest.mark.long)])
def test_run_forwards_the_signal_to_the_bot_and_exits(tmp_path: Path, sig: signal.Signals) -> None:
    proc = subprocess.Popen([*RIGCHECK, "run", "--port", "0"], cwd=tmp_path, env=_env(tmp_path),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        _wait_for_line(proc, "Playground:", 90)
        bots = _children(proc.pid)
        assert bots, "no bot child"
        proc.send_signal(sig)
        assert proc.wait(timeout=20) == 0
        deadline = time.monotonic() + 5
        while any(_alive(b) for b in bots) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(_alive(b) for b in bots), "the bot child outlived `rigcheck run`"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_run_prompt_exits_at_end_of_input(tmp_path: Path) -> None:
    done = subprocess.run([*RIGCHECK, "run", "--port", "0", "--prompt", "--save", str(tmp_path / "charts")],
                          cwd=tmp_path, env=_env(tmp_path), input="/gpus vendor:amd\n", capture_output=True,
                          text=True, timeout=90, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "RX 7900 XTX" in done.stdout


def test_token_without_a_reachable_discord_is_one_line(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound but not listening: connections are refused
        done = subprocess.run([*RIGCHECK, "run"], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                              check=False, env=_env(tmp_path, DISCORD_TOKEN="x",
                                                    DISCORD_API_BASE=f"http://127.0.0.1:{port}/api/v10",
                                                    RIGCHECK_LOG_LEVEL="WARNING"))
    assert done.returncode == 1
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("rigcheck: cannot reach Discord at http://127.0.0.1:") and "network" in lines[0]
    assert not (tmp_path / "data" / "state.sqlite3").exists(), "no state is created before Discord is reached"


def test_a_database_url_that_is_not_postgres_is_one_line(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "bot"], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                          check=False, env=_env(tmp_path, DISCORD_TOKEN="x",
                                                RIGCHECK_DATABASE_URL="mysql://root:hunter2@db/rigcheck"))
    assert done.returncode == 2
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "RIGCHECK_DATABASE_URL" in lines[0] and "postgresql://" in lines[0], done.stderr
    assert "hunter2" not in done.stderr
    assert not (tmp_path / "data").exists()


async def test_an_unreachable_database_is_one_line_and_writes_no_state(tmp_path: Path) -> None:
    from bot.sandbox import Sandbox
    from bot.sandbox.harness import BotStartError

    url = f"postgresql://rigcheck:hunter2@/rigcheck?host={tmp_path}/no-server-here"
    async with Sandbox() as sb:
        try:
            process = await sb.start_bot([sys.executable, "-m", "bot"], ready_timeout=60, env={
                "RIGCHECK_DATA_DIR": str(tmp_path / "data"), "RIGCHECK_DATABASE_URL": url,
                "RIGCHECK_HTTP_ENABLED": "false", "RIGCHECK_LOG_LEVEL": "WARNING"})
        except BotStartError as exc:
            output = str(exc)
        else:
            await sb.stop_bot(process)
            raise AssertionError("the bot started without its database")
    lines = [ln for ln in output.split("--- its output ---", 1)[1].splitlines() if ln.strip()]
    assert "exited with status 2" in output
    assert len(lines) == 1 and lines[0].startswith("rigcheck: cannot use the PostgreSQL database"), output
    assert "hunter2" not in output and "Traceback" not in output
    data = tmp_path / "data"
    assert not (data / "state.sqlite3").exists() and not (data / "cache.sqlite3").exists()


def test_run_reads_the_token_from_dotenv_in_the_current_directory(tmp_path: Path) -> None:
    # README "Going live": DISCORD_TOKEN may sit in `.env`; `run` then goes live instead of opening the sandbox.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound but not listening: connections are refused
        (tmp_path / ".env").write_text(f"DISCORD_TOKEN=x\nDISCORD_API_BASE=http://127.0.0.1:{port}/api/v10\n")
        done = subprocess.run([*RIGCHECK, "run", "--port", "0"], cwd=tmp_path, capture_output=True, text=True,
                              timeout=60, check=False, env=_env(tmp_path, RIGCHECK_LOG_LEVEL="WARNING"))
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr.startswith("rigcheck: cannot reach Discord at http://127.0.0.1:"), done.stderr


def _group_gone(pgid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


@pytest.mark.long
@pytest.mark.parametrize("delay", [0.5, 1.5, 2.5])
def test_ctrl_c_while_run_starts_is_quiet_and_leaves_no_process(tmp_path: Path, delay: float) -> None:
    proc = subprocess.Popen([*RIGCHECK, "run", "--port", "0"], cwd=tmp_path, env=_env(tmp_path),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        time.sleep(delay)
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: the whole foreground group
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, err
        assert len(err.splitlines()) <= 1, err
        assert _group_gone(proc.pid, 10), "a process of `rigcheck run` outlived it"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)


def _hangup_by_default() -> None:
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


@pytest.mark.long
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGHUP])
def test_children_die_with_a_killed_run(tmp_path: Path, sig: signal.Signals) -> None:
    # As a terminal would start it: a runner launched under nohup hands its children an ignored SIGHUP.
    proc = subprocess.Popen([*RIGCHECK, "run", "--port", "0"], cwd=tmp_path,
                            env=_env(tmp_path, RIGCHECK_RENDER_WORKERS="1"), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
                            preexec_fn=_hangup_by_default)
    try:
        _wait_for_line(proc, "Playground:", 90)
        proc.send_signal(sig)  # the parent alone: its bot, the bot's chart worker and resource tracker must follow
        proc.wait(timeout=10)
        assert _group_gone(proc.pid, 15), "the bot or a render worker outlived a killed `rigcheck run`"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)


@pytest.mark.parametrize("command", [["ask", "/help"], ["run", "--port", "0"]])
def test_a_sandbox_bot_that_cannot_start_says_why_without_a_traceback(tmp_path: Path, command: list[str]) -> None:
    done = subprocess.run([*RIGCHECK, *command], cwd=tmp_path, capture_output=True, text=True, timeout=90,
                          check=False, stdin=subprocess.DEVNULL,
                          env=_env(tmp_path, RIGCHECK_DATABASE_URL="mysql://root:hunter2@db/rigcheck"))
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert lines[0] == "rigcheck: the bot did not start (exit status 2); it said:", done.stderr
    assert any("RIGCHECK_DATABASE_URL" in ln and "postgresql://" in ln for ln in lines[1:]), done.stderr
    assert "hunter2" not in done.stderr


def test_commands_on_a_pipe_without_prompt_get_a_hint(tmp_path: Path) -> None:
    proc = subprocess.Popen([*RIGCHECK, "run", "--port", "0"], cwd=tmp_path, env=_env(tmp_path),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        lines = _wait_for_line(proc, "only with --prompt", timeout=60)
        assert any("rigcheck run --prompt" in line for line in lines)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
