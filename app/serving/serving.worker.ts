// The serving-layouts page's worker: generates or reads the layout, steps the algorithm
// over it (engine/layouts) and sends back the reduced run the views draw.

import * as Comlink from 'comlink';
import { generateServing, ProblemError } from '../../engine/api.ts';
import {
  TensorFileError,
  BlobSource,
  readNpy,
  readSafetensor,
  type Tensor,
  pagedFromTensors,
  pagedShape,
  varlenFromTensors,
  varlenShape,
  runServing,
} from '../../engine/api-worker.ts';
import { PAGED_ROLES, servingFileRefusal, VARLEN_ROLES, type ServingApi } from './serving-api.ts';

async function read(role: string, f: File | undefined): Promise<Tensor> {
  if (!f) throw new ProblemError(role, 'no file chosen');
  const refused = servingFileRefusal(role, f);
  if (refused) throw new TensorFileError(refused);
  const src = new BlobSource(f, f.name);
  if (/\.safetensors$/i.test(f.name)) return readSafetensor(src);
  if (/\.npy$/i.test(f.name)) return readNpy(src);
  throw new TensorFileError(`${f.name} (${role}): unknown tensor file type (expected .npy or .safetensors)`);
}

const api: ServingApi = {
  async run(form) {
    return runServing(generateServing(form), form.algorithm, { splits: form.splits });
  },
  async runFiles(req) {
    const roles = req.layout === 'varlen' ? VARLEN_ROLES : PAGED_ROLES;
    const t = await Promise.all(roles.map((r) => read(r, req.files[r])));
    const opts = { splits: req.splits };
    if (req.layout === 'varlen') {
      const tensors = { q: t[0], k: t[1], v: t[2], cuSeqlensQ: t[3], cuSeqlensK: t[4] };
      const sh = varlenShape(tensors);
      const { vp, x } = varlenFromTensors(tensors, { hq: sh.hq, hk: sh.hk, d: sh.d, dv: sh.dv, dtype: sh.dtype, causal: req.causal });
      return runServing({ layout: 'varlen', vp, x }, req.algorithm, opts);
    }
    const tensors = { q: t[0], kCache: t[1], vCache: t[2], blockTable: t[3], cacheSeqlens: t[4] };
    const sh = pagedShape(tensors, req.qLayout);
    const { pp, x } = pagedFromTensors(
      tensors,
      { hq: sh.hq, hk: sh.hk, d: sh.d, dv: sh.dv, dtype: sh.dtype, causal: req.causal },
      req.qLayout,
    );
    return runServing({ layout: 'paged', pp, x }, req.algorithm, opts);
  },
};

Comlink.expose(api);
