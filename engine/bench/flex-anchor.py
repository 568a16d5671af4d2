# The CUDA anchor of the mask timings (engine/bench/mask-bench.ts --time): PyTorch's compiled
# flex_attention with a block mask built by create_block_mask (128×128 blocks), and SDPA with
# only the FLASH backend on the unmasked problem, fp16, B 4, H 16, on the shapes and masks of
# the WebGPU table. Prints JSON lines {"n", "d", "mask", "flexMs", "density"} and
# {"n", "d", "mask": "none", "sdpaMs"}; times are medians of CUDA-event timings after a warm-up.
# `flex-anchor.py REPS decode`: the decoding table's anchors instead.
import json, sys
try:
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention
except Exception as e:
    print(json.dumps({"error": "PyTorch or flex_attention is not importable: %s" % e})); sys.exit(0)
if not torch.cuda.is_available():
    print(json.dumps({"error": "PyTorch sees no CUDA device"})); sys.exit(0)

reps = int(sys.argv[1]) if len(sys.argv) > 1 else 20
dev = torch.device("cuda")
print(json.dumps({"note": "PyTorch %s, %s, compiled flex_attention and SDPA FLASH, fp16" % (torch.__version__, torch.cuda.get_device_name(0))}), flush=True)
# Each mask_mod compiles its own kernel: 16 in all, past dynamo's default recompile limit.
for name in ("cache_size_limit", "recompile_limit", "accumulated_cache_size_limit", "accumulated_recompile_limit"):
    if hasattr(torch._dynamo.config, name):
        setattr(torch._dynamo.config, name, 256)
flex = torch.compile(flex_attention, dynamic=False)


def median_ms(fn):
    fn(); torch.cuda.synchronize()
    t0 = torch.cuda.Event(enable_timing=True); t1 = torch.cuda.Event(enable_timing=True)
    t0.record(); n = 0
    while True:
        fn(); n += 1
        t1.record(); t1.synchronize()
        if n >= 3 and t0.elapsed_time(t1) > 300: break
    times = []
    for _ in range(reps):
        a = torch.cuda.Event(enable_timing=True); b = torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record(); b.synchronize()
        times.append(a.elapsed_time(b))
    times.sort()
    return times[len(times) // 2]


def masks(n):
    # The same masks as the WebGPU table (engine/core/mask-presets.ts with nq == nk).
    doc = (torch.arange(n, device=dev) // (n // 8)).to(torch.int32)
    prefix = n // 4
    return [
        ("causal", lambda b, h, q, kv: kv <= q),
        ("sliding window 256", lambda b, h, q, kv: (kv <= q) & (q - kv <= 256)),
        ("document (8 docs)", lambda b, h, q, kv: doc[q] == doc[kv]),
        ("prefix-LM (n/4)", lambda b, h, q, kv: (kv < prefix) | (kv <= q)),
    ]


def window_mod(pos, w):
    return lambda b, h, qi, kv: (kv <= qi + pos) & (qi + pos - kv <= w)


def decode_anchors():
    # The decoding table (mask-bench.ts --decode-time): B 4, one query row at the end of an nk-key
    # cache, d 128; SDPA FLASH on the dense problem, compiled flex_attention with a block mask over
    # every key, the last nk/2 and the last nk/10 keys.
    for hq, hk in ((32, 8), (16, 16)):
        for nk in (8192, 32768):
            g = torch.Generator(device=dev).manual_seed(7)
            q = torch.randn(4, hq, 1, 128, device=dev, dtype=torch.float16, generator=g)
            k = torch.randn(4, hk, nk, 128, device=dev, dtype=torch.float16, generator=g)
            v = torch.randn(4, hk, nk, 128, device=dev, dtype=torch.float16, generator=g)
            with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
                ms = median_ms(lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=hq != hk))
            print(json.dumps({"hq": hq, "hk": hk, "nk": nk, "mask": "none", "sdpaMs": ms}), flush=True)
            pos = nk - 1
            for name, w in (("every key", nk), ("sliding window %d" % (nk // 2), nk // 2), ("sliding window %d" % round(nk / 10), round(nk / 10))):
                try:
                    bm = create_block_mask(window_mod(pos, w), None, None, 1, nk, device=dev)
                    ms = median_ms(lambda: flex(q, k, v, block_mask=bm, enable_gqa=hq != hk))
                    print(json.dumps({"hq": hq, "hk": hk, "nk": nk, "mask": name, "flexMs": ms, "density": 1.0 - bm.sparsity() / 100.0}), flush=True)
                except Exception as e:
                    print(json.dumps({"hq": hq, "hk": hk, "nk": nk, "mask": name, "error": str(e).splitlines()[0][:300]}), flush=True)


if len(sys.argv) > 2 and sys.argv[2] == "decode":
    decode_anchors()
    sys.exit(0)

for n in (4096, 8192):
    for d in (64, 128):
        g = torch.Generator(device=dev).manual_seed(7)
        q = torch.randn(4, 16, n, d, device=dev, dtype=torch.float16, generator=g)
        k = torch.randn(4, 16, n, d, device=dev, dtype=torch.float16, generator=g)
        v = torch.randn(4, 16, n, d, device=dev, dtype=torch.float16, generator=g)
        with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
            ms = median_ms(lambda: F.scaled_dot_product_attention(q, k, v))
        print(json.dumps({"n": n, "d": d, "mask": "none", "sdpaMs": ms}), flush=True)
        for name, mod in masks(n):
            try:
                bm = create_block_mask(mod, None, None, n, n, device=dev)
                ms = median_ms(lambda: flex(q, k, v, block_mask=bm))
                density = 1.0 - bm.sparsity() / 100.0
                print(json.dumps({"n": n, "d": d, "mask": name, "flexMs": ms, "density": density}), flush=True)
            except Exception as e:
                print(json.dumps({"n": n, "d": d, "mask": name, "error": str(e).splitlines()[0][:300]}), flush=True)
        q = k = v = None
        torch.cuda.empty_cache()
