// The CLI minus the process: picks the command, prints help, turns a thrown error into
// one `error:` line and an exit status. main.ts runs it on process.argv; the hostile-input
// suite calls it in-process.

import { COMMANDS } from './commands.ts';

function usage(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length));
  return [
    'FlashScope engine CLI',
    '',
    'usage: npm run -s engine -- <command> [options]',
    '',
    'commands:',
    ...COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    "Run 'npm run -s engine -- <command> --help' for a command's options.",
  ].join('\n');
}

export async function runCli(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    console.log(usage());
    return name ? 0 : 2;
  }
  const cmd = COMMANDS.find((c) => c.name === name);
  if (!cmd) {
    console.error(`unknown command '${name}'\n\n${usage()}`);
    return 2;
  }
  if (rest.includes('--help') || rest.includes('-h')) {
    console.log(cmd.help);
    return 0;
  }
  try {
    return await cmd.run(rest);
  } catch (e) {
    console.error(`error: ${e instanceof Error ? e.message : String(e)}`);
    return 1;
  }
}
