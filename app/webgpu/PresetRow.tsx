// The benchmark's shapes, one pick away: a preset replaces the form's shape and modifiers and,
// where this adapter offers it, its kernel path.

import { PRESETS, type Preset } from './webgpu-form.ts';

export function PresetRow({ busy, onPick }: { busy: boolean; onPick(preset: Preset): void }) {
  return (
    <div className="wg-row">
      <label className="wg-field">
        <span>preset</span>
        <select
          value=""
          disabled={busy}
          aria-label="preset"
          onChange={(e) => {
            const preset = PRESETS[Number(e.target.value)];
            if (preset) onPick(preset);
          }}
        >
          <option value="" disabled>
            a shape from the benchmark…
          </option>
          {PRESETS.map((p, i) => (
            <option key={p.name} value={i}>
              {p.name}
            </option>
          ))}
        </select>
      </label>
    </div>
  );
}
