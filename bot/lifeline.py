"""Child processes that end with the process that started them, even when it is killed with SIGKILL."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import sys

PR_SET_PDEATHSIG = 1  # linux/prctl.h
# Set by whoever starts `python -m bot` as its child (the sandbox harness, `rigcheck run`): the bot then
# ends with that process. Unset, as under systemd, docker or a shell's `nohup`, the bot lives on its own.
PARENT_PID_ENV = "RIGCHECK_PARENT_PID"


def die_with_parent(parent_pid: int) -> None:
    """SIGTERM this process when `parent_pid`, its direct parent, exits (nothing when it is not the direct parent).

    The parent's pid is handed over rather than guessed: in a container the parent is often PID 1 itself,
    so "my parent is 1" says nothing about whether it is gone. Linux only; elsewhere only the check runs.
    The kernel ties the signal to the parent's *thread* that started this process, so start children from
    a thread that lives as long as the parent (the event loop's).
    """
    if os.getppid() != parent_pid:
        # Started through a wrapper (`unshare --pid --fork`, where the parent outside the namespace reads as 0) or
        # already orphaned: the signal would be tied to the wrong process, and an orphan cannot be told from a
        # wrapped child, so the parent's own cleanup has to do.
        return
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent_pid:  # the parent died between the check and prctl (we were re-parented)
        os._exit(0)


def die_with_parent_from_env() -> None:
    """`die_with_parent` for the pid in RIGCHECK_PARENT_PID, if the parent set one."""
    value = os.environ.pop(PARENT_PID_ENV, "")
    if value.isdigit():
        die_with_parent(int(value))
