#!/usr/bin/env bash
# GPU checks of libxpool-vgpu.so and the agent (ctest label "gpu"). Exits 77 (skipped) when there is no GPU.
#   run_gpu_checks.sh <libxpool-vgpu.so> <gpu_check binary> [<xpool binary>]
# Checks: (1) a raw driver-API program stops at the memory limit with CUDA_ERROR_OUT_OF_MEMORY; (2) PyTorch does,
# with and without expandable segments (skipped without torch); (3) two processes limited to 30 % and 70 % of the
# SMs get shares within +-5 points (XPOOL_GPU_SHARE_SECONDS, default 30 s); with the xpool binary, (4) NVML
# discovery finds every GPU nvidia-smi lists, and (5) MIG: the agent partitions GPU 0 into two of its smallest
# instances and a task is given one by uuid, takes the placed form a --mig-dynamic agent is sent (keeping the
# task's instance) and "0=" (no instance), then GPU 0 is put back as it was. (5) changes the GPU's MIG mode, so
# it runs only as root with XPOOL_GPU_MIG=1 and says why it skipped otherwise. (6) MPS: the agent runs GPU 0's MPS
# control daemon and a task given 4096 MiB and 30 % gets CUDA_MPS_PINNED_DEVICE_MEM_LIMIT and
# CUDA_MPS_ACTIVE_THREAD_PERCENTAGE, and (without the runtime library) runs out of memory by 4096 MiB; skipped
# without nvidia-cuda-mps-control.
set -u
lib=$1
check=$2
xpool=${3:-}
here=$(cd "$(dirname "$0")" && pwd)
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "no GPU: skipped"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

echo "== raw driver API: 4096 MiB limit, 256 MiB context charge"
LD_PRELOAD=$lib XPOOL_DEVICE_MEMORY_LIMIT_0=4096 XPOOL_VGPU_CONTEXT_RESERVE_MIB=256 \
  XPOOL_SHARED_REGION=$tmp/raw XPOOL_JOB_ID=raw "$check" memory 4096 256 || fail=1

for conf in "" "expandable_segments:True"; do
  echo "== PyTorch: 4096 MiB limit ${conf:+($conf)}"
  LD_PRELOAD=$lib XPOOL_DEVICE_MEMORY_LIMIT_0=4096 XPOOL_SHARED_REGION=$tmp/torch$RANDOM XPOOL_JOB_ID=torch \
    PYTORCH_CUDA_ALLOC_CONF=$conf python3 "$here/torch_limit_check.py"
  rc=$?
  if [ $rc -eq 77 ]; then echo "(skipped)"; elif [ $rc -ne 0 ]; then fail=1; fi
done

seconds=${XPOOL_GPU_SHARE_SECONDS:-30}
kernel_ms=$("$check" calibrate | awk '/^kernel_ms/ {print $2}')
echo "== compute shares 30 % / 70 % for ${seconds}s (spin kernel ${kernel_ms} ms alone)"
LD_PRELOAD=$lib XPOOL_DEVICE_CORE_LIMIT_0=30 XPOOL_SHARED_REGION=$tmp/a XPOOL_JOB_ID=a \
  "$check" spin "$seconds" "$kernel_ms" >"$tmp/a.out" 2>&1 &
a=$!
LD_PRELOAD=$lib XPOOL_DEVICE_CORE_LIMIT_0=70 XPOOL_SHARED_REGION=$tmp/b XPOOL_JOB_ID=b \
  "$check" spin "$seconds" "$kernel_ms" >"$tmp/b.out" 2>&1 &
b=$!
wait $a $b
cat "$tmp/a.out" "$tmp/b.out"
share_a=$(awk '/^share/ {print $2}' "$tmp/a.out")
share_b=$(awk '/^share/ {print $2}' "$tmp/b.out")
if ! awk -v a="${share_a:-0}" -v b="${share_b:-0}" 'BEGIN { exit !((a-30)^2 <= 25 && (b-70)^2 <= 25) }'; then
  echo "FAIL shares ${share_a:-?} / ${share_b:-?}, want 30 / 70 +-5"
  fail=1
else
  echo "shares ${share_a} / ${share_b}: within +-5 points"
fi
[ -n "$xpool" ] && . "$here/agent_gpu_checks.sh"
exit $fail
