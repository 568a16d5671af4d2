// `npm run -s engine -- <command> [options]`: the command-line entry to the engine.
// Each command lives in its own module and registers in commands.ts; dispatch.ts runs them.

import { runCli } from './dispatch.ts';

runCli(process.argv.slice(2)).then((code) => process.exit(code));
