// The chapters, in teaching order.
import { chapter1 } from './ch1-standard.ts';
import { chapter2 } from './ch2-online-softmax.ts';
import { chapter3 } from './ch3-one-pass.ts';
import { chapter4 } from './ch4-fa1.ts';
import { chapter5 } from './ch5-fa2.ts';
import { chapter6 } from './ch6-ampere.ts';
import { chapter7 } from './ch7-fa3.ts';
import { chapter8 } from './ch8-fa4.ts';
import { chapter9 } from './ch9-flash-decoding.ts';
import { chapter10 } from './ch10-backward.ts';
import { chapter11 } from './ch11-serving.ts';
import { chapter12 } from './ch12-low-precision.ts';
import { chapter13 } from './ch13-low-precision-int8.ts';
import { chapter14 } from './ch14-masks.ts';
import type { Chapter } from './types.ts';

export const CHAPTERS: readonly Chapter[] = [
  chapter1,
  chapter2,
  chapter3,
  chapter4,
  chapter5,
  chapter6,
  chapter7,
  chapter8,
  chapter9,
  chapter10,
  chapter11,
  chapter12,
  chapter13,
  chapter14,
];

export function chapterByNumber(n: number): Chapter | undefined {
  return CHAPTERS.find((c) => c.number === n);
}
