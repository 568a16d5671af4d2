// The tile CuTe FA2's SM80 forward runs at every head dim, which the stepper and the hardware
// model both use: flash_attn/cute/interface.py@0251105a lines 326-327 (`FwdConfig(128, 64, …)`
// for arch 8x), 775-777 (128 threads: 4 warps) and 1256-1258 (one K/V stage).

export const CUTE_FA2_TILE = { blockM: 128, blockN: 64, warps: 4, kvStages: 1 } as const;
