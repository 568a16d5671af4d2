# The CUDA anchor of the WebGPU backward bench (`npm run bench:webgpu -- --pass backward`;
# engine/bench/backward-bench.ts launches it): PyTorch SDPA's FLASH backward, fp16, on the shapes
# in FLASHSCOPE_ANCHOR_SPEC ({"reps", "shapes": [{key, b, h, n, d, causal}]}). Prints JSON lines:
# one {"note"} (or {"error"} when PyTorch or CUDA is missing), then per shape {"key", "ms"}
# (the median of reps of autograd.grad with a fixed dO).
import json, os, sys
try:
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    import torch.nn.functional as F
except Exception as e:
    print(json.dumps({"error": "PyTorch is not importable: %s" % e})); sys.exit(0)
if not torch.cuda.is_available():
    print(json.dumps({"error": "PyTorch sees no CUDA device"})); sys.exit(0)
spec = json.loads(os.environ["FLASHSCOPE_ANCHOR_SPEC"])
dev = torch.device("cuda")
print(json.dumps({"note": "PyTorch %s, %s, SDPA FLASH backward, fp16" % (torch.__version__, torch.cuda.get_device_name(0))}), flush=True)
for s in spec["shapes"]:
    try:
        g = torch.Generator(device=dev).manual_seed(7)
        mk = lambda: torch.randn(s["b"], s["h"], s["n"], s["d"], device=dev, dtype=torch.float16, generator=g).requires_grad_(True)
        q, k, v = mk(), mk(), mk()
        do = torch.randn(s["b"], s["h"], s["n"], s["d"], device=dev, dtype=torch.float16, generator=g)
        with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
            out = F.scaled_dot_product_attention(q, k, v, is_causal=s["causal"])
            run = lambda: torch.autograd.grad(out, (q, k, v), do, retain_graph=True)
            run(); torch.cuda.synchronize()
            t0 = torch.cuda.Event(enable_timing=True); t1 = torch.cuda.Event(enable_timing=True)
            t0.record(); n = 0
            while True:
                run(); n += 1
                t1.record(); t1.synchronize()
                if n >= 3 and t0.elapsed_time(t1) > 400: break
            times = []
            for _ in range(spec["reps"]):
                a = torch.cuda.Event(enable_timing=True); b = torch.cuda.Event(enable_timing=True)
                a.record(); run(); b.record(); b.synchronize()
                times.append(a.elapsed_time(b))
        times.sort()
        print(json.dumps({"key": s["key"], "ms": times[len(times) // 2]}), flush=True)
    except Exception as e:
        print(json.dumps({"key": s["key"], "error": str(e).splitlines()[0][:300]}), flush=True)
    finally:
        q = k = v = out = do = None
        torch.cuda.empty_cache()
