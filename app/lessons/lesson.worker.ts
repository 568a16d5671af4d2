// The lesson worker: runs the engine for question checks, step targets, the FA1 IO sweep
// and the hardware tables, so the page never computes anything heavy itself.

import * as Comlink from 'comlink';
import type { LoadRequest } from '../../engine/api.ts';
import {
  chapterFacts,
  checkAnswer,
  hardwareTable,
  liveBlock,
  locateBlock,
  locateTarget,
  needChapter,
  revealAnswer,
  RunCache,
} from '../../content/lessons/chapters/evaluate.ts';
import { fa1IoSweep, standardIoBytes } from '../../content/lessons/chapters/io-sweep.ts';

const cache = new RunCache();

const api = {
  locate: (chapter: number, pane: number, req: LoadRequest) => locateTarget(needChapter(chapter), pane, req, cache),
  locateBlock: (chapter: number, block: number, req: LoadRequest) => locateBlock(needChapter(chapter), block, req, cache),
  check: (chapter: number, qid: string, req: LoadRequest, text: string) => checkAnswer(needChapter(chapter), qid, req, text, cache),
  reveal: (chapter: number, qid: string, req: LoadRequest) => revealAnswer(needChapter(chapter), qid, req, cache),
  facts: (chapter: number) => chapterFacts(needChapter(chapter), cache),
  live: (chapter: number, block: number) => liveBlock(needChapter(chapter), block, cache),
  hardware: (chapter: number) => hardwareTable(needChapter(chapter)),
  ioSweep: () => ({ points: fa1IoSweep(), standardBytes: standardIoBytes() }),
};

export type LessonApi = typeof api;

Comlink.expose(api);
