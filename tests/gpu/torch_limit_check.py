"""PyTorch under libxpool-vgpu.so: allocating past XPOOL_DEVICE_MEMORY_LIMIT_0 must fail at the limit.

Run by run_gpu_checks.sh with the library preloaded. Exit 0: passed, 1: failed, 77: PyTorch or CUDA unavailable.
Works with the default caching allocator and with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (VMM path).
"""
import os
import sys

try:
    import torch
except ImportError:
    print("torch not installed")
    sys.exit(77)
if not torch.cuda.is_available():
    print("torch sees no CUDA device")
    sys.exit(77)

limit = int(os.environ["XPOOL_DEVICE_MEMORY_LIMIT_0"]) << 20
free, total = torch.cuda.mem_get_info(0)
print(f"mem_get_info: free {free >> 20} MiB total {total >> 20} MiB")
if total != limit:
    print(f"FAIL total {total} != limit {limit}")
    sys.exit(1)

chunk = 128 << 20
held = []
try:
    while True:
        held.append(torch.empty(chunk, dtype=torch.uint8, device="cuda"))
except torch.cuda.OutOfMemoryError:
    pass
got = len(held) * chunk
print(f"allocated {got >> 20} MiB before OOM (limit {limit >> 20} MiB)")
if got > limit or got < limit // 2:
    print("FAIL allocation did not stop at the limit")
    sys.exit(1)
print("torch check passed")
