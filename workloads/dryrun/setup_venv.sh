#!/usr/bin/env bash
# Makes .venv-dry: the libraries of the GPU machine on the CPU build of torch, for dry runs only
# (never a dependency of VRAM Lens). JAX 0.11 needs Python 3.12; with an older Python the last
# JAX release for it is taken (its preallocation setting is the same).
set -euo pipefail
cd "$(dirname "$0")/../.."
python=${PYTHON:-python3}
[ -x .venv-dry/bin/python ] || "$python" -m venv .venv-dry
pip() { .venv-dry/bin/pip install --quiet --disable-pip-version-check "$@"; }
pip torch==2.13.0 torchvision==0.28.0 "transformers==5.17.*" "accelerate==1.15.*" "lightning==2.6.*" timm numpy nvidia-ml-py
pip "jax[cpu]==0.11.*" 2>/dev/null || pip "jax[cpu]==0.10.*"
# torchvision's wheel is built for the CUDA torch: on the CPU build its compiled ops cannot load,
# and only the two fake-kernel registrations below are not guarded against that. The workloads use
# no torchvision op (ResNet-50 and timm's transforms are plain Python), so guard those two.
meta=$(.venv-dry/bin/python -c "import importlib.util as u; print(u.find_spec('torchvision').submodule_search_locations[0])")/_meta_registrations.py
if grep -q '^@torch.library.register_fake("torchvision::nms")' "$meta"; then
  sed -i 's/^@torch.library.register_fake("torchvision::\(q\?nms\)")/@(torch.library.register_fake("torchvision::\1") if torchvision.extension._has_ops() else (lambda fn: fn))/' "$meta"
fi
.venv-dry/bin/python -c "import torch, torchvision, transformers, lightning, timm, jax; print('dry venv ready: torch', torch.__version__, 'transformers', transformers.__version__)"
