"""`bot.lifeline`: a child started with RIGCHECK_PARENT_PID ends with that parent."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bot.lifeline import PARENT_PID_ENV, die_with_parent_from_env

ROOT = Path(__file__).resolve().parents[2]


def test_a_child_whose_named_parent_is_not_its_parent_carries_on(monkeypatch: pytest.MonkeyPatch) -> None:
    # A wrapper between them (`unshare --pid --fork` for the PID 1 image test, where the parent reads as 0): the
    # death signal would be tied to the wrapper, and the check that the parent still lives cannot be made.
    code = ("import os; os.environ['RIGCHECK_PARENT_PID'] = '999999999'\n"
            "from bot.lifeline import die_with_parent_from_env; die_with_parent_from_env(); raise SystemExit(3)")
    done = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=30,
                          check=False)
    assert done.returncode == 3


def test_a_child_of_a_live_parent_carries_on_and_does_not_pass_the_pid_on(monkeypatch: pytest.MonkeyPatch) -> None:
    code = ("import os\nfrom bot.lifeline import die_with_parent_from_env\ndie_with_parent_from_env()\n"
            "raise SystemExit(3 if 'RIGCHECK_PARENT_PID' not in os.environ else 4)")
    done = subprocess.run([sys.executable, "-c", code], timeout=30, check=False,
                          env={**os.environ, "PYTHONPATH": str(ROOT), PARENT_PID_ENV: str(os.getpid())})
    assert done.returncode == 3


def test_without_the_variable_nothing_happens(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(PARENT_PID_ENV, raising=False)
    die_with_parent_from_env()  # returns: a bot under systemd or docker lives on its own


def test_the_sandbox_names_the_variable_the_bot_reads() -> None:
    from bot import lifeline
    from bot.sandbox import harness

    assert harness.PARENT_PID_ENV == lifeline.PARENT_PID_ENV
