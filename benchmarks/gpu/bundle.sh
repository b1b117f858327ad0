#!/usr/bin/env bash
# Run from the project's root on the development machine, before a `device` run: the shared
# bundle (../shared/gpu/bundle.sh: wheels, the project, the Llama-3 vocabulary, in .dev/) plus
# what this project needs beyond it on the GPU machine: numba for domino's compiled walk, and
# its llvmlite, whose 170 MB library is stripped and packed (about 38 MB; the carry limit is
# 64 MiB in all). Then `device run` with carry [".dev"] and timeout_s 560:
#   source .dev/gpu-setup.sh; bash /tmp/proj/benchmarks/gpu/check.sh all
# (one call; benchmarks/README.md, "On a GPU")
set -euo pipefail
root=$(git rev-parse --show-toplevel); cd "$root"
bash ../shared/gpu/bundle.sh
plat="--platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64
      --platform manylinux_2_27_x86_64 --platform manylinux_2_28_x86_64"
numba=numba==0.68.1 llvmlite=llvmlite==0.50.0  # (a pair: numba pins its llvmlite)
if [ ! -f .dev/.numba-done ]; then
  # shellcheck disable=SC2086
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp $plat -d .dev/whl $numba
  tmp=$(mktemp -d)
  # shellcheck disable=SC2086
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp $plat -d "$tmp" $llvmlite
  mkdir "$tmp/x" && (cd "$tmp/x" && unzip -q ../llvmlite-*.whl && find . -name '*.so*' -exec strip --strip-unneeded {} \;)
  tar cJf .dev/llvmlite.tar.xz -C "$tmp/x" . && rm -rf "$tmp"
  touch .dev/.numba-done
fi
cp benchmarks/gpu/setup.sh .dev/gpu-setup.sh
du -sh .dev
