#!/usr/bin/env bash
# The memory instructions of the sweeps' edge loops as nvcc compiles them, for BFS, SSSP and CC
# (tuner/measure/kernels.cu's bfs_sweep, sssp_sweep, cc_sweep, sssp_wl) and the independent
# SSSP kernels' (bench/gpu/independent/sssp.cu's topo_sweep, wl_step): per kernel instance,
# its global loads, atomics, stores and branches in program order, with the register each
# load writes, to read how many index loads the loop issues before a dependent access and
# whether its atomicMin waits (ATOMG) or not (RED). Needs nvcc and cuobjdump; run from the
# repository root on a GPU machine:
#   bash bench/gpu/edge_loop_sass.sh [ARCH]        (ARCH: default sm_90)
set -euo pipefail
arch=${1:-sm_90}
work=$(mktemp -d)
{
  echo '#include "tuner/measure/kernels.cu"'
  for wc in "1,1" "8,1" "32,1" "8,4"; do
    echo "template __global__ void sssp_sweep<$wc,false,false,false>(const int*, const int*, const float*, float*, int*, int*, int, int, int*, int, int*);"
    echo "template __global__ void cc_sweep<$wc,false,false,false>(const int*, const int*, int*, int*, int*, int, int, int*, int, int*);"
    echo "template __global__ void bfs_sweep<$wc,false,false,false>(const int*, const int*, int*, int, int, int, int*, int, int*);"
  done
  echo "template __global__ void sssp_sweep<8,1,true,false,false>(const int*, const int*, const float*, float*, int*, int*, int, int, int*, int, int*);"
  for wv in "1,0" "8,1" "32,1"; do
    echo "template __global__ void sssp_wl<$wv,false>(const int*, const int*, const float*, float*, int, const int*, int, int*, int*, int*);"
  done
} > "$work/ours.cu"
{
  echo '#include "bench/gpu/independent/sssp.cu"'
  for w in 1 8 32; do
    echo "template __global__ void topo_sweep<$w,0>(int, const int*, const int*, const float*, float*, int*, int*, u64*, int, int);"
  done
  for wp in "1,0,0,0,0" "8,0,0,1,0" "32,0,0,1,0"; do
    echo "template __global__ void wl_step<$wp>(const int*, int, int*, u64*, int, u64, const int*, const int*, const float*, float*, int*);"
  done
} > "$work/independent.cu"
for part in ours independent; do
  nvcc -std=c++17 -arch="$arch" -cubin -I. -o "$work/$part.cubin" "$work/$part.cu"
  cuobjdump -sass "$work/$part.cubin" | python3 -c '
import re, sys
for part in re.split(r"\n\s*Function : ", sys.stdin.read())[1:]:
    name = part.splitlines()[0].strip()
    print("==", name)
    for line in part.splitlines():
        m = re.search(r"/\*([0-9a-f]{4})\*/\s+(.*?);", line)
        if m and re.search(r"\b(LDG|ATOMG|REDG|RED|STG|BRA|EXIT|LDS|ATOM|ATOMS)", m.group(2)):
            print("  ", m.group(1), re.sub(r"\s+", " ", m.group(2)))
'
done
rm -rf "$work"
