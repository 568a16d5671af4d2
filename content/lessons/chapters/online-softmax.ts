// Safe softmax and online softmax on one vector, element by element: the numbers chapter 2's
// widget draws. Float64 throughout; the recurrences are the ones the step algorithms use
// tile-wise (m = running max, ℓ = running sum of e^(x − m), rescaled when m grows).

export interface OnlineSoftmaxStep {
  i: number;
  x: number;
  /** Running max after element i. */
  m: number;
  /** Running sum after element i, against m. */
  l: number;
  /** e^(m_{i−1} − m_i): the factor the old sum was multiplied by (1 when the max held). */
  factor: number;
  /** The term e^(x_i − m_i) added at this element. */
  term: number;
}

export function onlineSoftmaxSteps(x: readonly number[]): OnlineSoftmaxStep[] {
  const out: OnlineSoftmaxStep[] = [];
  let m = -Infinity;
  let l = 0;
  x.forEach((xi, i) => {
    const mNew = Math.max(m, xi);
    // From −∞ the old sum is 0, and e^(−∞ − m) would be 0 anyway; avoid (−∞) − (−∞) = NaN.
    const factor = m === -Infinity ? (l === 0 ? 1 : 0) : Math.exp(m - mNew);
    const term = Math.exp(xi - mNew);
    l = l * factor + term;
    m = mNew;
    out.push({ i, x: xi, m, l, factor, term });
  });
  return out;
}

/** Softmax the three-pass way: max, then the sum against it, then the quotients. */
export function safeSoftmax(x: readonly number[]): number[] {
  const m = Math.max(...x);
  const e = x.map((v) => Math.exp(v - m));
  const l = e.reduce((a, b) => a + b, 0);
  return e.map((v) => v / l);
}

/** The same probabilities from the online pass's final m and ℓ (a second pass over x). */
export function softmaxFromOnline(x: readonly number[]): number[] {
  const steps = onlineSoftmaxSteps(x);
  const last = steps[steps.length - 1];
  return x.map((v) => Math.exp(v - last.m) / last.l);
}
