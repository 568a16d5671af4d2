# Backward TFLOP/s of PyTorch's SDPA kernels on the machine's GPU, for the hardware model's
# calibration (engine/hw/CALIBRATION.md, "The backward schedules"). FLOPs as the
# FlashAttention papers count them: 2.5 x the forward's 4*B*H*N^2*d, halved when causal.
# The backward alone is timed: O is computed once, then autograd.grad of O with a fixed dO
# is called repeatedly (5 warm-up calls, the mean of 20 timed with CUDA events).
# Usage: python3 bench/sdpa-backward.py
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

def bwd_tflops(backend, b, h, n, d, causal):
    g = torch.Generator(device="cuda").manual_seed(0)
    q, k, v = (torch.randn(b, h, n, d, device="cuda", dtype=torch.float16, generator=g).requires_grad_() for _ in range(3))
    do = torch.randn(b, h, n, d, device="cuda", dtype=torch.float16, generator=g)
    with sdpa_kernel([backend]):
        o = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        step = lambda: torch.autograd.grad(o, (q, k, v), do, retain_graph=True)
        for _ in range(5):
            step()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(20):
            step()
        end.record()
        torch.cuda.synchronize()
    sec = start.elapsed_time(end) / 20 / 1e3
    flops = 2.5 * 4 * b * h * n * n * d / (2 if causal else 1)
    return flops / sec / 1e12

print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
for name, backend in (("FLASH", SDPBackend.FLASH_ATTENTION), ("CUDNN", SDPBackend.CUDNN_ATTENTION)):
    for (b, h, n, d) in ((2, 16, 8192, 128), (1, 16, 16384, 128), (4, 16, 4096, 128), (4, 16, 4096, 64)):
        for causal in (False, True):
            try:
                t = bwd_tflops(backend, b, h, n, d, causal)
                print(f"{name} B={b} H={h} N={n} d={d} causal={causal}: {t:.0f} TFLOP/s")
            except Exception as e:  # a backend without a kernel for this shape
                print(f"{name} B={b} H={h} N={n} d={d} causal={causal}: unavailable ({type(e).__name__}: {str(e)[:80]})")
