"""The editor's interpreter check on a real CUDA machine: torch and CUDA seen, the GPUs counted, no problem."""

import sys

import pytest

from vramlens.lsp.interpreter_health import health, probe

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")]


def test_a_cuda_interpreter_is_healthy():
    answer = health(sys.executable, probe(sys.executable))
    assert answer["ok"] is True and answer["canRun"] is True and answer["problem"] is None, answer
    assert answer["devices"] == torch.cuda.device_count() >= 1
    assert answer["summary"] == (f"torch {torch.__version__} · CUDA {torch.version.cuda} · {answer['devices']} "
                                 f"GPU{'' if answer['devices'] == 1 else 's'}")


def test_hiding_the_gpus_is_seen_as_no_cuda():
    answer = health(sys.executable, probe(sys.executable, extra_env={"CUDA_VISIBLE_DEVICES": ""}))
    assert answer["ok"] is False and answer["cuda"] is False
    assert answer["problem"].startswith("Choose an interpreter whose torch sees a GPU to diagnose runs")
    assert "no CUDA device or driver is visible" in answer["problem"]
