"""The supervisor takes the user's signals before the agent exists and passes them on once it does."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from vramlens.runner.supervise import Supervisor

CHILD = ("import signal, sys, time\n"
         "signal.signal(signal.SIGINT, lambda *args: sys.exit(7))\n"
         "print('ready', flush=True)\n"
         "time.sleep(30)\n")


def test_a_ctrl_c_while_the_agent_starts_reaches_it_once_it_exists():
    supervisor = Supervisor(timeout_s=20, cancel=None)
    with supervisor.signals():
        os.kill(os.getpid(), signal.SIGINT)  # before any child: kept, not lost, and no KeyboardInterrupt here
        child = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, text=True,
                                 start_new_session=True)
        assert child.stdout.readline().strip() == "ready"
        supervisor.attach(child)
        assert supervisor.wait() == 7
    assert supervisor.interrupted


def test_a_termination_request_before_the_start_ends_the_agent_once_it_exists():
    supervisor = Supervisor(timeout_s=20, cancel=None)
    with supervisor.signals():
        os.kill(os.getpid(), signal.SIGTERM)
        child = subprocess.Popen([sys.executable, "-c", "import time; print('ready', flush=True); time.sleep(30)"],
                                 stdout=subprocess.PIPE, text=True, start_new_session=True)
        assert child.stdout.readline().strip() == "ready"
        supervisor.attach(child)
        assert supervisor.wait() == -signal.SIGTERM
    assert supervisor.ending == "terminated"
