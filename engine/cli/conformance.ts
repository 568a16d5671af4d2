// Writes docs/conformance.md: the configuration table of engine/hw/conformance.ts.
import { writeFileSync } from 'node:fs';
import { conformanceMarkdown } from '../hw/conformance.ts';

const path = new URL('../../docs/conformance.md', import.meta.url);
writeFileSync(path, conformanceMarkdown());
console.log(`wrote ${path.pathname}`);
