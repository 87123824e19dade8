"""The composition root: the one module that knows every feature of the language server.

Each feature answers its own requests and commands and hears the server's hooks (feature.py) in
the order listed here: lint's diagnostics come before the capture's, which then add the measured
growth to lint's findings.
"""

from __future__ import annotations

from vramlens.lsp.capture_commands import CaptureCommands
from vramlens.lsp.capture_features import CaptureFeature
from vramlens.lsp.compare import CompareCaptures
from vramlens.lsp.confirm import ConfirmDiagnosis
from vramlens.lsp.diagnose import Diagnose
from vramlens.lsp.experiments import CompareInterventions
from vramlens.lsp.interpreter_health import InterpreterHealth
from vramlens.lsp.lint_features import LintFeature
from vramlens.lsp.server import VramLensServer
from vramlens.lsp.stdio import serve_stdio


def features():
    return (LintFeature(), CaptureFeature(), CaptureCommands(), CompareCaptures(), Diagnose(), CompareInterventions(),
            ConfirmDiagnosis(), InterpreterHealth())


def create_server() -> VramLensServer:
    server = VramLensServer()
    for feature in features():
        server.add(feature)
    return server


def serve() -> int:
    return serve_stdio(create_server())
