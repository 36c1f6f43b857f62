# Sourced by run_gpu_checks.sh with $xpool (the xpool binary), $tmp and $fail set: the agent's checks on a real
# GPU, one summary line each.

echo "== NVML discovery"
want=$(nvidia-smi -L | grep -c '^GPU ')
if "$xpool" agent --discovery nvml --print-devices >"$tmp/devices" 2>&1; then
  found=$(grep -c 'GPU-' "$tmp/devices")
  if [ "$found" -eq "$want" ]; then echo "discovery: $found GPU(s), as nvidia-smi lists"; else
    echo "FAIL discovery: $found GPU(s), nvidia-smi lists $want"; cat "$tmp/devices"; fail=1
  fi
else
  echo "FAIL discovery:"; cat "$tmp/devices"; fail=1
fi

echo "== MIG"
mig_mode=$(nvidia-smi -i 0 --query-gpu=mig.mode.current --format=csv,noheader 2>/dev/null)
gpu_name=$(nvidia-smi -i 0 --query-gpu=name --format=csv,noheader 2>/dev/null)
case "$gpu_name" in
  *H200*) profile=1g.18gb ;;
  *H100*NVL* | *H100*94GB*) profile=1g.12gb ;;
  *H100* | *A100*80GB*) profile=1g.10gb ;;
  *A100*) profile=1g.5gb ;;
  *A30*) profile=1g.6gb ;;
  *) profile= ;;
esac
if [ -z "$mig_mode" ] || [ "$mig_mode" = "[N/A]" ] || [ -z "$profile" ]; then
  echo "MIG: skipped ($gpu_name has no MIG mode or no profile table)"
elif [ "${XPOOL_GPU_MIG:-0}" != 1 ]; then
  echo "MIG: skipped (it repartitions GPU 0 and changes its MIG mode: set XPOOL_GPU_MIG=1 to allow)"
elif [ "$(id -u)" != 0 ]; then
  echo "MIG: skipped (changing MIG mode needs root)"
else
  "$xpool" agent --discovery nvml --mig-geometry "0=2x$profile" --print-devices >"$tmp/mig" 2>&1
  rc=$?
  if [ $rc -ne 0 ] && grep -qE 'needs root|pending until the GPU is reset|In use' "$tmp/mig"; then
    echo "MIG: skipped ($(grep -oE 'needs root|pending until the GPU is reset|In use[^)]*' "$tmp/mig" | head -1))"
  elif [ $rc -ne 0 ] || [ "$(grep -c "MIG $profile" "$tmp/mig")" -ne 2 ]; then
    echo "FAIL MIG: two $profile instances on GPU 0 expected:"; cat "$tmp/mig"; fail=1
  else
    "$xpool" agent --discovery nvml --run --devices 0 --state-dir "$tmp/mig-tasks" \
      -- sh -c 'echo visible=$CUDA_VISIBLE_DEVICES' >"$tmp/mig-run" 2>&1
    uuid=$(sed -n 's/^visible=\(MIG-[^ ]*\)$/\1/p' "$tmp/mig-run")
    if [ -n "$uuid" ] && nvidia-smi -L | grep -q "$uuid"; then
      echo "MIG: MIG mode on, two $profile instances created, a task given $uuid"
    else
      echo "FAIL MIG: the task did not get a MIG instance nvidia-smi lists:"; cat "$tmp/mig-run"; fail=1
    fi
    # The form the server sends a --mig-dynamic agent: every instance at its start. The one at slot 0 (the task's)
    # stays, the one at slot 1 goes, one is made at slot 3; then "0=" leaves MIG mode on with no instance.
    "$xpool" agent --discovery nvml --mig-geometry "0=$profile@0,$profile@3" --print-devices >"$tmp/mig-placed" 2>&1
    rc=$?
    if [ $rc -eq 0 ] && [ "$(grep -c "MIG $profile" "$tmp/mig-placed")" -eq 2 ] && nvidia-smi -L | grep -q "$uuid"; then
      echo "MIG: placed geometry $profile@0,$profile@3 taken, the instance at slot 0 kept"
    else
      echo "FAIL MIG: placed geometry $profile@0,$profile@3:"; cat "$tmp/mig-placed"; nvidia-smi -L; fail=1
    fi
    "$xpool" agent --discovery nvml --mig-geometry "0=" --print-devices >"$tmp/mig-empty" 2>&1
    rc=$?
    if [ $rc -eq 0 ] && ! grep -q "MIG $profile" "$tmp/mig-empty"; then
      echo "MIG: 0= leaves MIG mode on with no instance"
    else
      echo "FAIL MIG: 0= should leave no instance:"; cat "$tmp/mig-empty"; fail=1
    fi
  fi
  nvidia-smi mig -i 0 -dci >/dev/null 2>&1
  nvidia-smi mig -i 0 -dgi >/dev/null 2>&1
  [ "$mig_mode" = "Disabled" ] && nvidia-smi -i 0 -mig 0 >/dev/null 2>&1
fi

echo "== MPS"
if ! command -v nvidia-cuda-mps-control >/dev/null 2>&1; then
  echo "MPS: skipped (nvidia-cuda-mps-control not on PATH)"
else
  # The agent runs GPU 0's MPS control daemon; the task (without the runtime library, so MPS alone limits it)
  # prints the MPS variables it was given, then allocates 64 MiB chunks until the driver refuses.
  "$xpool" agent --discovery nvml --mps 0 --run --devices 0 --gpumem 4096 --gpucores 30 \
    --state-dir "$tmp/mps-tasks" -- sh -c 'echo "mps threads=$CUDA_MPS_ACTIVE_THREAD_PERCENTAGE" \
      "mem=$CUDA_MPS_PINNED_DEVICE_MEM_LIMIT pipe=$CUDA_MPS_PIPE_DIRECTORY"; unset LD_PRELOAD; \
      exec "$0" memory 4096 0' "$check" >"$tmp/mps-run" 2>&1
  threads=$(sed -n 's/^mps threads=\([0-9]*\) .*/\1/p' "$tmp/mps-run")
  mem=$(sed -n 's/^mps .* mem=\([^ ]*\) .*/\1/p' "$tmp/mps-run")
  allocated=$(sed -n 's/^allocated \([0-9]*\) MiB, then error \([0-9]*\)$/\1 \2/p' "$tmp/mps-run")
  if grep -q 'MPS refused' "$tmp/mps-run"; then
    echo "MPS: skipped ($(grep -o 'MPS refused[^)]*' "$tmp/mps-run" | head -1))"
  elif [ "$threads" != 30 ] || [ "$mem" != "0=4096M" ]; then
    echo "FAIL MPS: the task's MPS limits (want 30 % and 0=4096M):"; cat "$tmp/mps-run"; fail=1
  elif ! awk -v r="$allocated" 'BEGIN { split(r, a, " "); exit !(a[2] == 2 && a[1] <= 4096 && a[1] >= 3072) }'; then
    echo "FAIL MPS: allocations past CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=4096M (want out of memory at 3072-4096 MiB):"
    cat "$tmp/mps-run"; fail=1
  else
    echo "MPS: daemon started, task limited to 30 % of threads and 4096 MiB (out of memory after ${allocated% *} MiB)"
  fi
fi
