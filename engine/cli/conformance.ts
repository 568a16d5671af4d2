// Writes docs/conformance.md: the configuration table of engine/hw/conformance.ts.
import { writeFileSync } from 'node:fs';
import { conformanceMarkdown } from '../hw/conformance.ts';
import { scheduleOf } from '../algorithms/schedule-registry.ts';

const path = new URL('../../docs/conformance.md', import.meta.url);
writeFileSync(path, conformanceMarkdown(scheduleOf));
console.log(`wrote ${path.pathname}`);
