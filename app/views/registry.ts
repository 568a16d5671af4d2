// The views a debugger pane can show, in display order. Adding a view = one component file
// + one line here; `when` hides views that do not apply to the loaded algorithm.

import { lazy, type ComponentType } from 'react';
import { type LoadSummary, hasHardwareModel, findDescriptor } from '../../engine/api.ts';
import { CountersView } from './CountersView.tsx';
import { HeatmapsView } from './HeatmapsView.tsx';
import { PseudoCodeView } from './PseudoCodeView.tsx';
import { StatsView } from './StatsView.tsx';
import { TileZoomView } from './TileZoomView.tsx';
import { HbmTrafficView } from '../hardware/HbmTrafficView.tsx';

export type ViewColumn = 'main' | 'side';

export interface ViewDef {
  id: string;
  title: string;
  column: ViewColumn;
  component: ComponentType;
  when?: (s: LoadSummary) => boolean;
}

// KaTeX is only fetched once a formula is on screen.
const FormulaView = lazy(() => import('./FormulaView.tsx'));
const HardwareNotesView = lazy(() => import('../hardware/HardwareNotesView.tsx'));
const PrecisionView = lazy(() => import('../precision/PrecisionView.tsx'));
// Views the default page does not show (other algorithms, the backward) load when first shown.
const HbmStateView = lazy(() => import('./HbmStateView.tsx').then((m) => ({ default: m.HbmStateView })));
const TimelineView = lazy(() => import('../hardware/TimelineView.tsx').then((m) => ({ default: m.TimelineView })));
const MemoryMapView = lazy(() => import('../hardware/MemoryMapView.tsx').then((m) => ({ default: m.MemoryMapView })));
const BlockMaskView = lazy(() => import('./BlockMaskView.tsx').then((m) => ({ default: m.BlockMaskView })));
const DqAccumulationView = lazy(() => import('../backward/DqAccumulationView.tsx').then((m) => ({ default: m.DqAccumulationView })));
// The backward has schedules of its own (fa4, fa3, fa2: engine/hw/step-map-bwd.ts); the notes stay forward-only.
const hw = (s: LoadSummary) => hasHardwareModel(s.algorithm, s.pass === 'backward' ? 'backward' : 'forward');
const hwForward = (s: LoadSummary) => s.pass !== 'backward' && hasHardwareModel(s.algorithm);
const forward = (s: LoadSummary) => s.pass !== 'backward';

export const VIEWS: readonly ViewDef[] = [
  { id: 'heatmaps', title: 'Tile heatmaps', column: 'main', component: HeatmapsView },
  { id: 'zoom', title: 'Tile numbers', column: 'main', component: TileZoomView },
  {
    id: 'dq-accum',
    title: 'dQ accumulation',
    column: 'main',
    component: DqAccumulationView,
    when: (s) => s.pass === 'backward' && findDescriptor(s.algorithm)?.backward?.dqAccumulation === true,
  },
  { id: 'precision', title: 'Precision', column: 'main', component: PrecisionView, when: forward },
  {
    id: 'hbm',
    title: 'HBM m and ℓ',
    column: 'main',
    component: HbmStateView,
    when: (s) => forward(s) && findDescriptor(s.algorithm)?.rowStats === 'hbm',
  },
  { id: 'stats', title: 'Running statistics', column: 'side', component: StatsView, when: forward },
  { id: 'formula', title: 'Formula', column: 'side', component: FormulaView },
  { id: 'pseudo', title: 'Pseudo-code', column: 'side', component: PseudoCodeView },
  { id: 'counters', title: 'Counters', column: 'side', component: CountersView },
  { id: 'block-mask', title: 'Block mask', column: 'side', component: BlockMaskView, when: forward },
  { id: 'hw-timeline', title: 'Warp-role timeline', column: 'main', component: TimelineView, when: hw },
  { id: 'hw-memory', title: 'Memory map', column: 'main', component: MemoryMapView, when: hw },
  { id: 'hw-hbm', title: 'HBM traffic', column: 'side', component: HbmTrafficView, when: forward },
  { id: 'hw-notes', title: 'On the hardware', column: 'side', component: HardwareNotesView, when: hwForward },
];

export const DEFAULT_VIEWS = VIEWS.map((v) => v.id);
