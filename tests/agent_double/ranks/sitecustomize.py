"""Gives torchrun's ranks the stand-in torch while torchrun itself keeps the real one.

Put this folder on PYTHONPATH: torchrun (real torch, no LOCAL_RANK) starts each rank with
LOCAL_RANK set, and only there is the stand-in put first on sys.path, before anything imports torch.
"""

import os
import sys

if "LOCAL_RANK" in os.environ:
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
