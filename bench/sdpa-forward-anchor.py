# The CUDA anchor of `npm run bench:webgpu` (engine/bench/sdpa-anchor.ts launches it): PyTorch's
# scaled_dot_product_attention with only the FLASH backend (FlashAttention-2's CUDA kernels),
# fp16, on the shapes in FLASHSCOPE_ANCHOR_SPEC ({"reps", "shapes": [{key, b, hq, hk, nq, nk, d,
# causal}]}). Prints JSON lines: one {"note"} (or {"error"} when PyTorch or CUDA is missing), then
# per shape {"key", "ms" (median of reps), "err" (worst |SDPA - float64| over 3 sampled rows)}.
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
reps = spec["reps"]
dev = torch.device("cuda")
print(json.dumps({"note": "PyTorch %s, %s, SDPA FLASH backend, fp16" % (torch.__version__, torch.cuda.get_device_name(0))}), flush=True)
for s in spec["shapes"]:
    key = s["key"]
    try:
        g = torch.Generator(device=dev).manual_seed(7)
        q = torch.randn(s["b"], s["hq"], s["nq"], s["d"], device=dev, dtype=torch.float16, generator=g)
        k = torch.randn(s["b"], s["hk"], s["nk"], s["d"], device=dev, dtype=torch.float16, generator=g)
        v = torch.randn(s["b"], s["hk"], s["nk"], s["d"], device=dev, dtype=torch.float16, generator=g)
        gqa = s["hq"] != s["hk"]
        # FlashAttention aligns a causal mask to the top left; with nq == nk (every causal
        # shape timed here) that is the engine's bottom-right alignment too.
        run = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=s["causal"], enable_gqa=gqa)
        with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
            out = run()
            torch.cuda.synchronize()
            t0 = torch.cuda.Event(enable_timing=True); t1 = torch.cuda.Event(enable_timing=True)
            t0.record()
            n = 0
            while True:
                run(); n += 1
                t1.record(); t1.synchronize()
                if n >= 3 and t0.elapsed_time(t1) > 400: break
            times = []
            for _ in range(reps):
                a = torch.cuda.Event(enable_timing=True); b = torch.cuda.Event(enable_timing=True)
                a.record(); run(); b.record(); b.synchronize()
                times.append(a.elapsed_time(b))
        times.sort()
        err = 0.0
        group = s["hq"] // s["hk"]
        for (bi, hi, i) in [(0, 0, 0), (s["b"] - 1, s["hq"] - 1, s["nq"] - 1), (s["b"] // 2, s["hq"] // 2, s["nq"] // 2)]:
            qq = q[bi, hi, i].double(); kk = k[bi, hi // group].double(); vv = v[bi, hi // group].double()
            sc = (kk @ qq) / (s["d"] ** 0.5)
            if s["causal"]:
                sc[i + 1:] = float("-inf")
            ref = torch.softmax(sc, 0) @ vv
            err = max(err, (out[bi, hi, i].double() - ref).abs().max().item())
        print(json.dumps({"key": key, "ms": times[len(times) // 2], "err": err}), flush=True)
    except Exception as e:
        print(json.dumps({"key": key, "error": str(e).splitlines()[0][:300]}), flush=True)
    finally:
        q = k = v = out = None
        torch.cuda.empty_cache()
