// The shared inputs' distribution, chosen from compare mode: every pane sees the same Q, K
// and V, so changing it reloads the shared problem (the Debugger tab's) and then every
// pane. The FA3 paper's outlier mix and the attention-sink pattern are the FP8 cases.

import type { InputDistribution } from '../../engine/api.ts';
import { useImport } from '../import/import-store.ts';
import { useApp } from '../store/store.ts';
import { SHARED_PANE } from './shared-request.ts';
import { reloadShared } from './shared-reload.ts';

export const DISTRIBUTION_LABELS: Record<InputDistribution, string> = {
  normal: 'normal N(0,1)',
  'large-logits': 'large logits',
  'outlier-row': 'planted outlier row',
  'fa3-outliers': 'FA3 outliers (N(0,1) + N(0,100) at 0.1%)',
  sink: 'attention sink (first keys)',
};

export function SharedInputs() {
  const applied = useApp((s) => s.problem[SHARED_PANE]?.applied);
  const imported = useImport((s) => s.imported[SHARED_PANE]);
  if (!applied || imported) return null;
  return (
    <label className="field">
      <span>Inputs</span>
      <select
        aria-label="Shared input distribution"
        value={applied.distribution}
        onChange={(e) => {
          const distribution = e.target.value as InputDistribution;
          reloadShared({ distribution }, (prev) => {
            const req = { ...prev, distribution };
            // A planted row belongs to 'outlier-row' only.
            if (distribution !== 'outlier-row') delete req.outlierRow;
            return req;
          });
        }}
      >
        {(Object.keys(DISTRIBUTION_LABELS) as InputDistribution[]).map((d) => (
          <option key={d} value={d}>
            {DISTRIBUTION_LABELS[d]}
          </option>
        ))}
      </select>
    </label>
  );
}
