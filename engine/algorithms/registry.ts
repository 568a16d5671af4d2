// Every algorithm FlashScope knows, as descriptors (descriptor.ts). Adding an algorithm = one
// folder engine/algorithms/<id>/ with its descriptor + one line in BUILT_IN below. Tests
// register variants of their own at run time (registerAlgorithm); the built-in ids form the
// AlgorithmId union, so a table keyed by Record<AlgorithmId, …> names a missing entry.

import { cuteFa2Algorithm } from './cute-fa2/descriptor.ts';
import type { AlgorithmDescriptor } from './descriptor.ts';
import { fa1Algorithm } from './fa1/descriptor.ts';
import { fa2Algorithm } from './fa2/descriptor.ts';
import { fa3Algorithm } from './fa3/descriptor.ts';
import { fa4Algorithm } from './fa4/descriptor.ts';
import { flashDecodingAlgorithm } from './flash-decoding/descriptor.ts';
import { fmhaV2Algorithm } from './fmha-v2/descriptor.ts';
import { sageAlgorithm } from './sage/descriptor.ts';
import { standardAlgorithm } from './standard/descriptor.ts';
import type { StepAlgorithm } from './types.ts';

const BUILT_IN = [
  standardAlgorithm,
  fa1Algorithm,
  fa2Algorithm,
  cuteFa2Algorithm,
  fmhaV2Algorithm,
  fa3Algorithm,
  fa4Algorithm,
  flashDecodingAlgorithm,
  sageAlgorithm,
] as const;

export type AlgorithmId = (typeof BUILT_IN)[number]['id'];

/** The built-in descriptors by id: the typed way to name one algorithm in code. */
export const BUILT_IN_ALGORITHMS = Object.fromEntries(BUILT_IN.map((d) => [d.id, d])) as {
  readonly [K in AlgorithmId]: Extract<(typeof BUILT_IN)[number], { id: K }>;
};

/** What the debugger opens on, and what the compare page sets against it (the paper's step from FA1 to FA2). */
export const DEFAULT_ALGORITHM: AlgorithmId = fa2Algorithm.id;
export const DEFAULT_COMPARISON: readonly AlgorithmId[] = [fa1Algorithm.id, fa2Algorithm.id];

const registered: AlgorithmDescriptor[] = [...BUILT_IN];
const steppers: StepAlgorithm[] = registered.map((d) => d.forward);

/** Every registered descriptor, built-ins first, in menu order. */
export const DESCRIPTORS: readonly AlgorithmDescriptor[] = registered;

/** Every registered forward stepper, in menu order. */
export const ALGORITHMS: readonly StepAlgorithm[] = steppers;

/** Adds a descriptor (tests define variants this way); its id must be new. */
export function registerAlgorithm(d: AlgorithmDescriptor): void {
  if (registered.some((x) => x.id === d.id)) throw new Error(`algorithm '${d.id}' is already registered`);
  registered.push(d);
  steppers.push(d.forward);
}

/** Removes a descriptor a test registered; built-ins stay. */
export function unregisterAlgorithm(id: string): void {
  if (BUILT_IN.some((x) => x.id === id)) throw new Error(`'${id}' is built in`);
  const i = registered.findIndex((x) => x.id === id);
  if (i < 0) return;
  registered.splice(i, 1);
  steppers.splice(i, 1);
}

export function isBuiltIn(id: string): id is AlgorithmId {
  return BUILT_IN.some((x) => x.id === id);
}

export function findDescriptor(id: string): AlgorithmDescriptor | undefined {
  return registered.find((x) => x.id === id);
}

export function descriptorOf(id: string): AlgorithmDescriptor {
  const d = findDescriptor(id);
  if (!d) throw new Error(`unknown algorithm '${id}'; known: ${registered.map((x) => x.id).join(', ')}`);
  return d;
}

export function algorithmById(id: string): StepAlgorithm {
  return descriptorOf(id).forward;
}
