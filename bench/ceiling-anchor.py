# The CUDA side of `npm run bench:webgpu -- --ceiling` (engine/bench/ceiling-bench.ts launches it):
# PyTorch fp16 matmul 8192^3 (fp32 accumulate) and a 1 GiB device-to-device copy on the same GPU,
# timed with CUDA events after a warm-up (median of reps). Prints one {"note"} (or {"error"}),
# then {"key", "ms", "rate", "unit"} per figure.
import json, os, sys
try:
    import torch
except Exception as e:
    print(json.dumps({"error": "PyTorch is not importable: %s" % e})); sys.exit(0)
if not torch.cuda.is_available():
    print(json.dumps({"error": "PyTorch sees no CUDA device"})); sys.exit(0)
reps = json.loads(os.environ["FLASHSCOPE_ANCHOR_SPEC"])["reps"]
dev = torch.device("cuda")
print(json.dumps({"note": "PyTorch %s, %s" % (torch.__version__, torch.cuda.get_device_name(0))}), flush=True)

def timed(fn):
    for _ in range(3): fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(max(reps, 5)):
        a = torch.cuda.Event(enable_timing=True); b = torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record(); b.synchronize()
        times.append(a.elapsed_time(b))
    times.sort()
    return times[len(times) // 2]

n = 8192
g = torch.Generator(device=dev).manual_seed(3)
x = torch.randn(n, n, device=dev, dtype=torch.float16, generator=g)
y = torch.randn(n, n, device=dev, dtype=torch.float16, generator=g)
ms = timed(lambda: x @ y)
print(json.dumps({"key": "fp16 matmul 8192^3 (cuBLAS)", "ms": ms, "rate": 2 * n ** 3 / (ms / 1e3), "unit": "FLOP"}), flush=True)
x = y = None
src = torch.empty(1 << 28, device=dev, dtype=torch.float32).normal_()
dst = torch.empty_like(src)
ms = timed(lambda: dst.copy_(src))
print(json.dumps({"key": "device copy 1 GiB (read + write)", "ms": ms, "rate": 2 * (1 << 30) / (ms / 1e3), "unit": "byte"}), flush=True)
