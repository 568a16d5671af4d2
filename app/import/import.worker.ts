// Tensor files are parsed here, never on the main thread: the File handles arrive by
// reference and only headers and the chosen head's slices are read (engine/import).

import * as Comlink from 'comlink';
import { BlobSource, importRun, listTensors } from '../../engine/api-worker.ts';
import type { ImportApi, InspectedFile } from './import-api.ts';

const api: ImportApi = {
  async inspect(files) {
    const out: InspectedFile[] = [];
    for (const f of files) {
      try {
        out.push({ ok: true, listing: await listTensors(new BlobSource(f, f.name)) });
      } catch (e) {
        out.push({ ok: false, name: f.name, size: f.size, message: e instanceof Error ? e.message : String(e) });
      }
    }
    return out;
  },
  async check(files, choice, base) {
    const sources = files.map((f) => new BlobSource(f, f.name));
    const listings = await Promise.all(sources.map(listTensors));
    const run = await importRun(sources, listings, choice, base);
    return { problem: run.problem, full: run.full };
  },
};

Comlink.expose(api);
