import { describe, expect, it } from 'vitest';
import { splitDecision } from './UpstreamChoice.tsx';

describe('a dispatch decision splits into what upstream decides and where', () => {
  it('one file with its lines', () => {
    expect(splitDecision('hopper/flash_api.cpp@0251105a l. 429: pack_gqa always on with split KV')).toEqual({
      decision: 'pack_gqa always on with split KV',
      source: 'hopper/flash_api.cpp@0251105a l. 429',
    });
  });
  it('two files, the decision after the first colon', () => {
    const s = splitDecision(
      'hopper/flash_api.cpp@0251105a l. 442-471 with hopper/heuristics.h@0251105a l. 25-59: 64 M blocks for 132 SMs → num_splits 2',
    );
    expect(s.source).toBe('hopper/flash_api.cpp@0251105a l. 442-471 with hopper/heuristics.h@0251105a l. 25-59');
    expect(s.decision).toBe('64 M blocks for 132 SMs → num_splits 2');
  });
  it('a check with no words of its own keeps its source; a line without a source is all decision', () => {
    expect(splitDecision('flash_attn/cute/interface.py@0251105a l. 682')).toEqual({
      decision: '',
      source: 'flash_attn/cute/interface.py@0251105a l. 682',
    });
    expect(splitDecision('model note: no source here')).toEqual({ decision: 'model note: no source here', source: null });
  });
});
