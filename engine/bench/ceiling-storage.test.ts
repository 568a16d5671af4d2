import { describe, expect, it } from 'vitest';
import { storageStudyKernel, storageStudySet } from './ceiling-storage.ts';

describe('storage study kernels', () => {
  const mib = 1 << 20;

  it('a copy moves every byte once each way; a read counts its bytes once and writes one vector per lane', () => {
    const copy = storageStudyKernel(mib, { op: 'copy', type: 'u32', threads: 64, perThread: 4 });
    expect(copy.work).toBe(2 * mib);
    expect(copy.workgroups).toBe(mib / 16 / (64 * 4));
    expect(copy.buffers).toEqual([mib, mib]);
    expect(copy.wgsl).toContain('array<vec4<u32>>');
    expect(copy.wgsl.match(/ = src\[/g)?.length).toBe(4);
    const read = storageStudyKernel(mib, { op: 'read', type: 'f32', threads: 256, perThread: 4 });
    expect(read.work).toBe(mib);
    expect(read.buffers[0]).toBe(read.workgroups * 256 * 16);
  });

  it('a resident grid loops over the whole buffer; buffer options reach the kernel', () => {
    const k = storageStudyKernel(mib, { op: 'read', type: 'u32', threads: 128, perThread: 2, workgroups: 8, mapped: true });
    expect(k.workgroups).toBe(8);
    expect(k.wgsl).toContain(`base < ${mib / 16}u; base += ${8 * 128 * 2}u`);
    expect(k.mapped).toBe(true);
    expect(storageStudyKernel(mib, { ...storageStudySet()[0], allUsages: true }).allUsages).toBe(true);
    // each variant's row label tells it apart
    const names = storageStudySet().map((s) => storageStudyKernel(mib, s).name);
    expect(new Set(names).size).toBe(names.length);
  });
});
