# Sourced on the GPU machine from the repository root: `source .dev/gpu-setup.sh`. The shared
# set-up (the carried wheels and the project installed under /tmp, PYTHONPATH and
# CONSTRAIN_SHARED exported), then llvmlite unpacked beside the wheels (numba is one of them).
source .dev/device-setup.sh
tar xJf .dev/llvmlite.tar.xz -C /tmp/site
python3 -c "import numba, triton, constrain_domino.kernels" 2>&1 | tail -1
