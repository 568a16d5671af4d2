// The serving page's part of the share link: whether it is open, its form and step. Read
// field by field; anything unreadable falls back to the default with a notice line, so a
// damaged link still opens. Pure TS (tested with vitest).

import { ALGORITHMS, DEFAULT_SERVING_FORM, SERVING_LIMITS, type ServingForm } from '../../engine/api.ts';
import { isRecord, own, pick } from '../store/untrusted.ts';

export interface ServingShare {
  form: ServingForm;
  step: number;
  /** The run used files, which a link cannot carry. */
  files: boolean;
}

export function encodeServing(s: ServingShare): Record<string, unknown> {
  return { f: s.form, st: s.step, ...(s.files ? { fl: 1 } : {}) };
}

const intIn = (x: unknown, lo: number, hi: number): x is number => typeof x === 'number' && Number.isInteger(x) && x >= lo && x <= hi;
const lens = (x: unknown): x is number[] =>
  Array.isArray(x) && x.length >= 1 && x.length <= SERVING_LIMITS.sequences && x.every((v) => intIn(v, 0, SERVING_LIMITS.seqlen));

const shortKey = (k: string) => JSON.stringify(k.length > 40 ? `${k.slice(0, 40)}…` : k);

export function decodeServing(x: unknown, notices: string[]): ServingShare | undefined {
  if (!isRecord(x)) {
    notices.push('the serving-layouts part of the link is not an object; ignored');
    return undefined;
  }
  const form: ServingForm = structuredClone(DEFAULT_SERVING_FORM);
  const raw = pick(x, ['f', 'st', 'fl']);
  for (const k of Object.keys(x)) if (!['f', 'st', 'fl'].includes(k)) notices.push(`serving: unknown part ${shortKey(k)} ignored`);
  const f = isRecord(raw.f) ? raw.f : {};
  const take = <K extends keyof ServingForm>(k: K, ok: (x: unknown) => boolean) => {
    const v = own(f, k);
    if (v === undefined) return;
    if (ok(v)) form[k] = v as ServingForm[K];
    else notices.push(`serving ${k} ${JSON.stringify(v)?.slice(0, 40)} is not valid; using ${JSON.stringify(DEFAULT_SERVING_FORM[k])}`);
  };
  take('layout', (x) => x === 'varlen' || x === 'paged');
  take('algorithm', (x) => typeof x === 'string' && ALGORITHMS.some((a) => a.id === x));
  take('seqlensQ', lens);
  take('seqlensK', lens);
  take('nq', (x) => intIn(x, 1, SERVING_LIMITS.nq));
  take('pageSize', (x) => intIn(x, 1, SERVING_LIMITS.pageSize));
  take('hq', (x) => intIn(x, 1, SERVING_LIMITS.heads));
  take('hk', (x) => intIn(x, 1, SERVING_LIMITS.heads));
  take('d', (x) => intIn(x, 1, SERVING_LIMITS.d));
  take('causal', (x) => typeof x === 'boolean');
  take('seed', (x) => intIn(x, 0, 2 ** 31 - 1));
  take('splits', (x) => intIn(x, 0, 64));
  for (const k of Object.keys(f))
    if (!Object.hasOwn(DEFAULT_SERVING_FORM, k)) notices.push(`serving: unknown setting ${shortKey(k)} ignored`);
  if (form.hq % form.hk !== 0) {
    notices.push(`serving Hq ${form.hq} is not a multiple of Hk ${form.hk}; using Hk = 1`);
    form.hk = 1;
  }
  if (form.layout === 'varlen' && form.seqlensQ.length !== form.seqlensK.length) {
    notices.push('serving query and key lengths differ in number; using the default lengths');
    form.seqlensQ = [...DEFAULT_SERVING_FORM.seqlensQ];
    form.seqlensK = [...DEFAULT_SERVING_FORM.seqlensK];
  }
  const step = intIn(raw.st, 0, Number.MAX_SAFE_INTEGER) ? raw.st : 0;
  if (raw.st !== undefined && step !== raw.st) notices.push('serving step is not a step number; starting at step 1');
  const files = raw.fl === 1;
  if (files)
    notices.push("the serving run used tensors from files, which a link cannot carry; generated inputs with the link's settings are shown");
  return { form, step, files };
}
