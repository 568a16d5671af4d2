// How the Counters view prints a count or a byte total (4.1 k, 2.05 M), and which exact
// values print the same way, so a question read off that view accepts what it shows.

interface Scale {
  at: number;
  unit: number;
  digits: number;
  suffix: string;
}

const SCALES: readonly Scale[] = [
  { at: 1e9, unit: 1e9, digits: 2, suffix: ' G' },
  { at: 1e6, unit: 1e6, digits: 2, suffix: ' M' },
  { at: 1e3, unit: 1e3, digits: 1, suffix: ' k' },
];

/** The figure as the Counters view shows it. */
export function counterFigure(n: number): string {
  const s = SCALES.find((x) => n >= x.at);
  return s ? `${(n / s.unit).toFixed(s.digits)}${s.suffix}` : String(n);
}

/** Whether `given` (a number typed by a student) reads as `exact` does in the Counters view. */
export function sameCounterFigure(given: number, exact: number): boolean {
  return given === exact || counterFigure(given) === counterFigure(exact);
}
