import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { encodeNpy } from '../io/npy.ts';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { traceCommand } from './trace-command.ts';
import { fromJsonLine } from '../trace/jsonl.ts';
import type { MemoryEvent, TimelineEvent } from '../hw/events.ts';
import { isHardwareAlgorithm } from '../algorithms/schedule-registry.ts';
import { hardwareTraceLines } from './hw-trace-options.ts';
import { describeCommand } from './hw-describe.ts';
import { parseHwOptions } from './hw-options.ts';
import { simulateCommand } from './hw-simulate.ts';

function capture(): { out: string[]; err: string[] } {
  const out: string[] = [];
  const err: string[] = [];
  vi.spyOn(console, 'log').mockImplementation((s: unknown) => void out.push(String(s)));
  vi.spyOn(console, 'error').mockImplementation((s: unknown) => void err.push(String(s)));
  return { out, err };
}

afterEach(() => vi.restoreAllMocks());

describe('describe / simulate commands', () => {
  it('describe prints the FA4 sheet with SMEM offsets and TMEM columns', async () => {
    const c = capture();
    const code = await describeCommand.run([
      '--algo',
      'fa4',
      '--gpu',
      'b200',
      '--d',
      '192',
      '--dv',
      '128',
      '--dtype',
      'bf16',
      '--nq',
      '256',
    ]);
    expect(code).toBe(0);
    const sheet = JSON.parse(c.out.join('\n'));
    expect(sheet.fits).toBe(true);
    expect(sheet.cta_group).toBe(1);
    expect(sheet.tmem.used_columns).toBe(512);
    expect(sheet.tiles).toEqual({ block_m: 128, block_n: 128 });
    expect(sheet.smem.buffers.find((b: { name: string; stage: number }) => b.name === 'sKV' && b.stage === 1).bytes).toBe(32768);
  });

  it('describe prints cta_group 2 where upstream picks 2-CTA mode (non-causal, seqlen_q > 256) and 1 otherwise', async () => {
    const run = async (...extra: string[]) => {
      const c = capture();
      await describeCommand.run(['--algo', 'fa4', '--gpu', 'b200', '--d', '128', '--dtype', 'bf16', ...extra]);
      return JSON.parse(c.out.join('\n')) as { cta_group: number; kv_stage: number; q_stage: number };
    };
    expect(await run('--nq', '4096')).toMatchObject({ cta_group: 2, kv_stage: 6, q_stage: 2 });
    expect(await run('--nq', '4096', '--causal')).toMatchObject({ cta_group: 1, kv_stage: 3, q_stage: 2 });
    expect(await run('--nq', '256')).toMatchObject({ cta_group: 1, kv_stage: 3, q_stage: 2 });
    expect(await run('--nq', '128')).toMatchObject({ cta_group: 1, q_stage: 1 });
  });

  it('describe prints the dedicated d = dv = 256 kernel (sm100_hd256_2cta_fmha_forward.py) as a fitting CTA pair, causal or not', async () => {
    for (const extra of [[], ['--causal']]) {
      const c = capture();
      const code = await describeCommand.run(['--algo', 'fa4', '--gpu', 'b200', '--nq', '8192', '--d', '256', '--dv', '256', ...extra]);
      expect(code).toBe(0);
      expect(JSON.parse(c.out.join('\n'))).toMatchObject({ fits: true, cta_group: 2, tiles: { block_m: 128, block_n: 128 }, kv_stage: 4 });
    }
    // One consumer: the softmax warpgroup of the CTA's one Q tile.
    const c = capture();
    await describeCommand.run(['--algo', 'fa4', '--gpu', 'b200', '--nq', '8192', '--d', '256', '--dv', '256']);
    const sheet = JSON.parse(c.out.join('\n')) as { roles: { name: string; kernel_name?: string; registers: number }[] };
    expect(sheet.roles.filter((r) => r.name.startsWith('consumer')).map((r) => [r.name, r.kernel_name, r.registers])).toEqual([
      ['consumer0', 'softmax0', 256],
    ]);
  });

  it('describe names one consumerN role per consumer warpgroup: FA3 block_m / 64, FA4 one softmax warpgroup per Q stage (kernel_name keeps softmaxN)', async () => {
    type Role = { name: string; kernel_name?: string; warps: number[] };
    const roles = async (...a: string[]) => {
      const c = capture();
      await describeCommand.run(a);
      return (JSON.parse(c.out.join('\n')) as { roles: Role[] }).roles;
    };
    const fa4 = await roles('--algo', 'fa4', '--gpu', 'b200', '--d', '128', '--dtype', 'bf16', '--nq', '4096');
    expect(fa4.map((r) => [r.name, r.kernel_name])).toEqual([
      ['consumer0', 'softmax0'],
      ['consumer1', 'softmax1'],
      ['correction', undefined],
      ['mma', undefined],
      ['epilogue', undefined],
      ['load', undefined],
      ['empty', undefined],
    ]);
    expect(fa4[1].warps).toEqual([4, 5, 6, 7]);
    // q_stage 1 (seqlen_q ≤ 128): one softmax warpgroup, so one consumer.
    const one = await roles('--algo', 'fa4', '--gpu', 'b200', '--d', '128', '--dtype', 'bf16', '--nq', '128');
    expect(one.filter((r) => r.name.startsWith('consumer')).map((r) => [r.name, r.kernel_name])).toEqual([['consumer0', 'softmax0']]);
    // FA3 as before: producer and block_m / 64 consumers (192-row tiles at d 64), no kernel_name.
    const fa3 = await roles('--algo', 'fa3', '--gpu', 'h100', '--d', '64', '--dtype', 'bf16');
    expect(fa3.map((r) => r.name)).toEqual(['producer', 'consumer0', 'consumer1', 'consumer2']);
    expect(fa3.every((r) => r.kernel_name === undefined)).toBe(true);
  });

  it('describe exits 1 and lists need and capacity when it does not fit', async () => {
    const c = capture();
    const code = await describeCommand.run(['--algo', 'fa3', '--gpu', 'h100', '--d', '256', '--stages', '4']);
    expect(code).toBe(1);
    const sheet = JSON.parse(c.out.join('\n'));
    expect(sheet.fits).toBe(false);
    expect(sheet.does_not_fit[0]).toMatch(/^smem: needs \d+ bytes per CTA/);
  });

  it('simulate prints time, TFLOP/s (4·B·H·N²·d) and unit utilization', async () => {
    const c = capture();
    const code = await simulateCommand.run([
      '--algo',
      'cute-fa2',
      '--gpu',
      'a100',
      '--b',
      '1',
      '--hq',
      '4',
      '--nq',
      '2048',
      '--d',
      '64',
      '--causal',
    ]);
    expect(code).toBe(0);
    const r = JSON.parse(c.out.join('\n'));
    expect(r.flops).toBe((4 * 1 * 4 * 2048 * 2048 * 64) / 2);
    expect(r.tflops).toBeCloseTo(r.flops / (r.time_us * 1e-6) / 1e12, 2);
    for (const u of ['tensor', 'mufu', 'fma', 'cpasync', 'sm']) expect(r.utilization[u]).toBeGreaterThan(0);
    for (const v of Object.values(r.utilization) as number[]) expect(v).toBeLessThanOrEqual(1);
  });

  it('simulate --backward: FA3 on H100 counts 2.5 × the forward FLOPs; describe --backward prints the ring of Q/dO/LSE/D', async () => {
    const c = capture();
    expect(
      await simulateCommand.run([
        '--algo',
        'fa3',
        '--gpu',
        'h100',
        '--b',
        '1',
        '--hq',
        '2',
        '--nq',
        '1024',
        '--d',
        '128',
        '--backward',
        '--causal',
      ]),
    ).toBe(0);
    const r = JSON.parse(c.out.join('\n'));
    expect(r.pass).toBe('backward');
    expect(r.flops).toBe((2.5 * 4 * 2 * 1024 * 1024 * 128) / 2);
    expect(r.extra_kernel_us).toBeGreaterThan(0);
    c.out.length = 0;
    expect(await describeCommand.run(['--algo', 'cute-fa2', '--gpu', 'a100', '--backward'])).toBe(0);
    const sheet = JSON.parse(c.out.join('\n'));
    expect(sheet.algo).toBe('fa2');
    expect(sheet.roles.length).toBe(8);
    c.out.length = 0;
    expect(await describeCommand.run(['--algo', 'fa3', '--gpu', 'h200', '--backward'])).toBe(0);
    const names = JSON.parse(c.out.join('\n')).smem.buffers.map((b: { name: string }) => b.name);
    for (const n of ['sQ', 'sdO', 'sLSE', 'sD', 'sdS', 'sdQaccum', 'sK', 'sV']) expect(names).toContain(n);
    c.out.length = 0;
    expect(await describeCommand.run(['--algo', 'fa4', '--gpu', 'b200', '--backward', '--causal'])).toBe(0);
    const fa4 = JSON.parse(c.out.join('\n'));
    expect(fa4.upstream.config).toMatchObject({ mask: 'causal', tile_m: 128, tile_n: 128, cta_group: 2, pack_gqa: false });
    expect(fa4.upstream.why.every((w: string) => /@0251105a l\. \d/.test(w))).toBe(true);
    expect(fa4.roles.map((r: { name: string }) => r.name)).toEqual(['reduce', 'compute0', 'compute1', 'mma', 'load', 'relay', 'empty']);
    c.out.length = 0;
    expect(await simulateCommand.run(['--algo', 'fa4', '--gpu', 'b200', '--backward', '--deterministic'])).toBe(0);
    expect(JSON.parse(c.out.join('\n')).pass).toBe('backward');
    await expect(simulateCommand.run(['--algo', 'fmha-v2', '--gpu', 'h100', '--backward'])).rejects.toThrow(
      /no backward hardware schedule for 'fmha-v2'/,
    );
  });

  it("takes run's serving-layout files: the lengths and page size they hold give upstream's configuration", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hw-layout-'));
    const at = (name: string) => join(dir, name);
    const values = (n: number) => Array.from({ length: n }, (_, i) => Math.sin(i));
    writeFileSync(at('q.npy'), encodeNpy(values(912 * 8 * 128), [912, 8, 128], 'float16'));
    writeFileSync(at('k.npy'), encodeNpy(values(912 * 2 * 128), [912, 2, 128], 'float16'));
    writeFileSync(at('cu.npy'), encodeNpy([0, 512, 612, 912], [4], 'int32'));
    writeFileSync(at('pq.npy'), encodeNpy(values(4 * 8 * 128), [4, 1, 8, 128], 'float16'));
    writeFileSync(at('kc.npy'), encodeNpy(values(16 * 64 * 2 * 128), [16, 64, 2, 128], 'float16'));
    writeFileSync(
      at('bt.npy'),
      encodeNpy(
        values(16).map((_, i) => i),
        [4, 4],
        'int32',
      ),
    );
    writeFileSync(at('cs.npy'), encodeNpy([256, 100, 200, 30], [4], 'int32'));
    const config = async (...args: string[]) => {
      const c = capture();
      expect(await describeCommand.run(['--algo', 'fa3', '--gpu', 'h100', '--causal', ...args])).toBe(0);
      return JSON.parse(c.out.join('\n')).upstream.config;
    };
    const varlen = [
      '--q',
      at('q.npy'),
      '--k',
      at('k.npy'),
      '--v',
      at('k.npy'),
      '--cu-seqlens-q',
      at('cu.npy'),
      '--cu-seqlens-k',
      at('cu.npy'),
    ];
    expect(await config(...varlen)).toEqual(
      await config('--hq', '8', '--hk', '2', '--seqlens-q', '512,100,300', '--seqlens-k', '512,100,300', '--dtype', 'fp16'),
    );
    const paged = ['--q', at('pq.npy'), '--k-cache', at('kc.npy'), '--v-cache', at('kc.npy'), '--block-table', at('bt.npy')];
    const fromFiles = await config(...paged, '--cache-seqlens', at('cs.npy'));
    // Page 64 is not a multiple of kBlockN 128: paged KV by cp.async (flash_api.cpp l. 415-424).
    expect(fromFiles).toMatchObject({ paged_kv_non_tma: true });
    expect(fromFiles).toEqual(
      await config(
        ...['--b', '4', '--hq', '8', '--hk', '2', '--nq', '1', '--nk', '256', '--dtype', 'fp16'],
        '--page-size',
        '64',
        '--seqlens-k',
        '256,100,200,30',
        '--seqused',
      ),
    );
    await expect(
      describeCommand.run(['--algo', 'fa3', '--gpu', 'h100', ...paged, '--cache-seqlens', at('cs.npy'), '--page-size', '64']),
    ).rejects.toThrow(/--page-size gives what the layout files already hold/);
  });

  it('rejects bad input with a message naming the flag', async () => {
    const bad = (...args: string[]) => parseHwOptions(['--algo', 'fa3', '--gpu', 'h100', ...args]);
    await expect(parseHwOptions(['--algo', 'fa3'])).rejects.toThrow(/--gpu is required/);
    await expect(bad('--nq', '0')).rejects.toThrow(/--nq must be an integer from 1/);
    await expect(bad('--dtype', 'fp8')).rejects.toThrow(/--dtype/);
    await expect(bad('--hq', '3', '--hk', '2')).rejects.toThrow(/hk/);
    await expect(bad('--frobnicate')).rejects.toThrow(/unknown option --frobnicate/);
    await expect(bad('--block-m', '64')).rejects.toThrow(/--block-m sets how the numeric engine steps/);
    await expect(parseHwOptions(['--algo', 'fa3,fa4', '--gpu', 'h100'])).rejects.toThrow(/--algo takes one id/);
    await expect(bad('--seqlens-q', '5,6', '--b', '3')).rejects.toThrow(/--seqlens-q gives 2 lengths for a batch of 3/);
    await expect(parseHwOptions(['--algo', 'cute-fa2', '--gpu', 'a100', '--attention-chunk', '1024'])).rejects.toThrow(
      /--attention-chunk: cute-fa2 has no attention chunk \(FA3's hopper\/ kernels take attention_chunk\)/,
    );
    await expect(bad('--attention-chunk', '1024', '--backward')).rejects.toThrow(
      /--attention-chunk: the backward pass has no attention chunk/,
    );
    await expect(bad('--attention-chunk', '1024')).resolves.toBeDefined();
  });
});

describe('hardware trace lines', () => {
  it('emit a header, timeline and memory events as JSONL', async () => {
    const lines = await hardwareTraceLines(['--algo', 'fa3', '--gpu', 'h100', '--nq', '128', '--nk', '384']);
    const rows = lines.map((l) => fromJsonLine<{ type: string }>(l));
    expect(rows[0].type).toBe('hw.header');
    const tl = rows.filter((r) => r.type === 'hw.timeline') as unknown as TimelineEvent[];
    const mem = rows.filter((r) => r.type === 'hw.memory') as unknown as MemoryEvent[];
    expect(tl.some((e) => e.op === 'tma K2' && e.role === 'producer')).toBe(true);
    expect(mem.some((m) => m.action === 'fill' && m.buffer === 'sK' && m.tile === 'K2' && m.ready! > m.t)).toBe(true);
    expect(mem.some((m) => m.action === 'release' && m.buffer === 'sV' && m.tile === 'V0')).toBe(true);
    expect(isHardwareAlgorithm('fa4')).toBe(true);
    expect(isHardwareAlgorithm('fa2')).toBe(false);
  });

  it('trace --attention-chunk steps the chunked problem its schedule runs (one problem for both)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hw-chunk-'));
    const args = ['--algo', 'fa3', '--nq', '128', '--nk', '128', '--d', '64', '--dtype', 'fp16', '--causal', '--gpu', 'h100'];
    const numeric = async (extra: string[], name: string) => {
      const out = join(dir, name);
      expect(await traceCommand.run([...args, ...extra, '--out', out])).toBe(0);
      const lines = readFileSync(out, 'utf8').trim().split('\n');
      return lines.filter((l) => !fromJsonLine<{ type?: string }>(l).type?.startsWith('hw.'));
    };
    const chunked = await numeric(['--attention-chunk', '32'], 'chunk.jsonl');
    const plain = await numeric([], 'plain.jsonl');
    expect(chunked).not.toEqual(plain);
    const opts = await parseHwOptions([...args, '--attention-chunk', '32']);
    expect(opts.problem.attentionChunk).toBe(32);
    expect(opts.shape.attentionChunk).toBe(32);
    await expect(parseHwOptions([...args, '--attention-chunk', '0'])).rejects.toThrow(
      /--attention-chunk: attention chunk: must be at least 1, got 0/,
    );
  });

  it('trace --gpu appends the schedule of the same problem after the numeric steps', async () => {
    const out = join(mkdtempSync(join(tmpdir(), 'hw-trace-')), 't.jsonl');
    const code = await traceCommand.run([
      '--algo',
      'fa3',
      '--nq',
      '128',
      '--nk',
      '256',
      '--d',
      '64',
      '--dtype',
      'fp16',
      '--gpu',
      'h100',
      '--no-intra-overlap',
      '--out',
      out,
    ]);
    expect(code).toBe(0);
    const rows = readFileSync(out, 'utf8')
      .trim()
      .split('\n')
      .map((l) => fromJsonLine<{ algo: string; type?: string; kind?: string; op?: string }>(l));
    expect(rows.every((r) => r.algo === 'fa3')).toBe(true);
    const firstHw = rows.findIndex((r) => r.type === 'hw.header');
    expect(firstHw).toBeGreaterThan(0);
    expect(rows.slice(0, firstHw).every((r) => typeof r.kind === 'string')).toBe(true);
    // --no-intra-overlap reached the schedule: GEMM1 of block 1 is issued before GEMM0 of block 0.
    const gemms = rows
      .filter((r) => r.type === 'hw.timeline' && (r as { role?: string }).role === 'consumer0' && r.op?.startsWith('gemm'))
      .map((r) => r.op);
    // d = 64 without a causal mask: tile_size.h gives MmaPV_is_RS = false, so P·V reads P from sP.
    expect(gemms.slice(0, 3)).toEqual(['gemm0 S=Q·K1ᵀ', 'gemm1 O+=P·V1 (P from sP)', 'gemm0 S=Q·K0ᵀ']);
  });

  it("trace --gpu takes run's layout files: the layout's own steps, then the schedule of the same varlen or paged problem", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hw-trace-layout-'));
    const at = (name: string) => join(dir, name);
    const values = (n: number) => Array.from({ length: n }, (_, i) => Math.sin(i));
    // Three sequences of 40, 0 and 70 query rows (80, 0, 70 keys); Hq 4, Hk 2, d 64.
    writeFileSync(at('q.npy'), encodeNpy(values(110 * 4 * 64), [110, 4, 64], 'float16'));
    writeFileSync(at('k.npy'), encodeNpy(values(150 * 2 * 64), [150, 2, 64], 'float16'));
    writeFileSync(at('cq.npy'), encodeNpy([0, 40, 40, 110], [4], 'int32'));
    writeFileSync(at('ck.npy'), encodeNpy([0, 80, 80, 150], [4], 'int32'));
    // Two decode rows per sequence over a pool of 8 pages of 16 tokens; lengths 50 and 9.
    writeFileSync(at('pq.npy'), encodeNpy(values(2 * 2 * 4 * 64), [2, 2, 4, 64], 'float16'));
    writeFileSync(at('kc.npy'), encodeNpy(values(8 * 16 * 2 * 64), [8, 16, 2, 64], 'float16'));
    writeFileSync(at('bt.npy'), encodeNpy([5, 2, 7, 0, 3, 1, 4, 6], [2, 4], 'int32'));
    writeFileSync(at('cs.npy'), encodeNpy([50, 9], [2], 'int32'));
    type Row = { algo: string; type?: string; kind?: string; b?: number; packed?: unknown; pages?: number[] };
    const trace = async (...args: string[]) => {
      const out = join(mkdtempSync(join(tmpdir(), 'hw-trace-')), 't.jsonl');
      expect(await traceCommand.run(['--algo', 'fa3', '--gpu', 'h100', '--causal', ...args, '--out', out])).toBe(0);
      const rows = readFileSync(out, 'utf8')
        .trim()
        .split('\n')
        .map((l) => fromJsonLine<Row>(l));
      const h = rows.findIndex((r) => r.type === 'hw.header');
      const header = rows[h] as unknown as { resources: { upstream: { config: Record<string, unknown> } } };
      return { steps: rows.slice(0, h), config: header.resources.upstream.config };
    };
    const describeConfig = async (...args: string[]) => {
      const c = capture();
      expect(await describeCommand.run(['--algo', 'fa3', '--gpu', 'h100', '--causal', ...args])).toBe(0);
      return JSON.parse(c.out.join('\n')).upstream.config;
    };
    const varlen = [
      '--q',
      at('q.npy'),
      '--k',
      at('k.npy'),
      '--v',
      at('k.npy'),
      '--cu-seqlens-q',
      at('cq.npy'),
      '--cu-seqlens-k',
      at('ck.npy'),
    ];
    const v = await trace(...varlen);
    // The numeric steps are the packed batch's: every step of a sequence with rows carries its packed range; none for the empty one.
    expect(v.steps.length).toBeGreaterThan(0);
    expect(v.steps.every((r) => typeof r.kind === 'string' && r.b !== 1)).toBe(true);
    expect(new Set(v.steps.map((r) => r.b))).toEqual(new Set([0, 2]));
    expect(v.steps.filter((r) => r.kind === 'qk').every((r) => r.packed !== undefined)).toBe(true);
    // The schedule is of the varlen problem, as describe takes it from the same files and from the lengths.
    expect(v.config).toEqual(await describeConfig(...varlen));
    expect(v.config).toEqual(
      await describeConfig('--hq', '4', '--hk', '2', '--d', '64', '--dtype', 'fp16', '--seqlens-q', '40,0,70', '--seqlens-k', '80,0,70'),
    );
    expect(v.config.scheduler).toBe('varlen-dynamic-persistent');
    const paged = ['--q', at('pq.npy'), '--k-cache', at('kc.npy'), '--v-cache', at('kc.npy'), '--block-table', at('bt.npy')];
    const p = await trace(...paged, '--cache-seqlens', at('cs.npy'));
    // K/V loads name the physical pages the block table points at; sequence 1 (9 tokens) reads page 3 only.
    const loads = p.steps.filter((r) => r.kind === 'load' && r.pages);
    expect(loads.length).toBeGreaterThan(0);
    expect([...new Set(loads.filter((r) => r.b === 1).flatMap((r) => r.pages!))]).toEqual([3]);
    // Page 16 is not a multiple of kBlockN: paged KV by cp.async (hopper/flash_api.cpp@0251105a l. 415-424).
    expect(p.config).toMatchObject({ paged_kv_non_tma: true });
    expect(p.config).toEqual(await describeConfig(...paged, '--cache-seqlens', at('cs.npy')));
    await expect(traceCommand.run(['--algo', 'fa3', ...varlen, '--backward', '--gpu', 'h100'])).rejects.toThrow(
      /trace steps a serving layout forward only/,
    );
    await expect(traceCommand.run(['--algo', 'fa3', ...varlen, '--nq', '64'])).rejects.toThrow(
      /--nq sets a random problem; the layout files give the problem/,
    );
  });

  it("trace --gpu steps FA4 at the kernel's tile_n 64 where the dispatch drops to it, unless --block-n says otherwise", async () => {
    const args = [
      '--algo',
      'fa4',
      '--nq',
      '8',
      '--nk',
      '8192',
      '--d',
      '192',
      '--dv',
      '128',
      '--dtype',
      'bf16',
      '--gpu',
      'b200',
      '--splits',
      '4',
    ];
    const widths = async (...more: string[]) => {
      const out = join(mkdtempSync(join(tmpdir(), 'hw-trace-')), 't.jsonl');
      expect(await traceCommand.run([...args, ...more, '--out', out])).toBe(0);
      const rows = readFileSync(out, 'utf8')
        .trim()
        .split('\n')
        .map((l) =>
          fromJsonLine<{ type?: string; kind?: string; tile?: { cols: [number, number] }; resources?: { tiles: { block_n: number } } }>(l),
        );
      const cols = new Set(rows.filter((r) => r.kind === 'qk').map((r) => r.tile!.cols[1] - r.tile!.cols[0]));
      return { cols: [...cols], kernel: rows.find((r) => r.type === 'hw.header')!.resources!.tiles.block_n };
    };
    // d 192 ≠ dv 128 with 4 splits over 64 N blocks: tile_n 64 (flash_attn/cute/interface.py@0251105a l. 373-381).
    expect(await widths()).toEqual({ cols: [64], kernel: 64 });
    expect(await widths('--block-n', '128')).toEqual({ cols: [128], kernel: 64 });
  });

  it("trace --backward --gpu appends the backward kernel's schedule after the backward steps", async () => {
    const out = join(mkdtempSync(join(tmpdir(), 'hw-trace-')), 't.jsonl');
    const code = await traceCommand.run([
      '--algo',
      'fa2',
      '--nq',
      '128',
      '--nk',
      '256',
      '--d',
      '64',
      '--dtype',
      'fp16',
      '--backward',
      '--gpu',
      'a100',
      '--out',
      out,
    ]);
    expect(code).toBe(0);
    const rows = readFileSync(out, 'utf8')
      .trim()
      .split('\n')
      .map((l) => fromJsonLine<{ type?: string; kind?: string; pass?: string; op?: string; role?: string }>(l));
    const firstHw = rows.findIndex((r) => r.type === 'hw.header');
    expect(firstHw).toBeGreaterThan(0);
    expect(rows.slice(0, firstHw).every((r) => r.pass === 'backward')).toBe(true);
    expect(rows[firstHw].pass).toBe('backward');
    // Two column blocks of 128 keys, one CTA each; the first visits the single row block (atomicAdd dQ0 per warp).
    expect(rows.filter((r) => r.type === 'hw.timeline' && r.role === 'warp0' && r.op?.startsWith('atomicAdd dQ')).map((r) => r.op)).toEqual(
      ['atomicAdd dQ0'],
    );
    await expect(traceCommand.run(['--algo', 'fa1', '--nq', '64', '--backward', '--gpu', 'a100'])).rejects.toThrow(
      /no backward hardware schedule for 'fa1'/,
    );
  });

  it('trace --gpu refuses before writing when there is no schedule', async () => {
    await expect(traceCommand.run(['--algo', 'fa2', '--nq', '64', '--gpu', 'h100'])).rejects.toThrow(/unknown hardware algorithm 'fa2'/);
  });
});
