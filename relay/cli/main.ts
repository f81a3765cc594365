#!/usr/bin/env node
import { agentCommands } from './cmd-agent.js';
import { attachCommands } from './cmd-attach.js';
import { mcpCommands } from './cmd-mcp.js';
import { serveCommands } from './cmd-serve.js';
import { terminalCommands } from './cmd-terminals.js';
import { tokenCommands } from './cmd-token.js';
import { type Command, commandHelp, parseCommand, reportError } from './command.js';

const COMMANDS: Record<string, Command> = {
  ...serveCommands,
  ...terminalCommands,
  ...agentCommands,
  ...attachCommands,
  ...mcpCommands,
  ...tokenCommands,
};

function usage(): string {
  const width = Math.max(...Object.values(COMMANDS).map((c) => c.usage.split(' [')[0].length));
  const lines = Object.entries(COMMANDS).map(
    ([, c]) => `  ${c.usage.split(' [')[0].padEnd(width)}  ${c.summary}`,
  );
  return `usage: ptyrelay <command> [options]

commands:
${lines.join('\n')}

Every command takes --help and --json. Client commands reach the relay at $PTYRELAY_URL
(default ws://127.0.0.1:7681) with $PTYRELAY_TOKEN or ~/.config/ptyrelay/token.
Detach from \`attach\`/\`shell\` with Ctrl-]. See docs/cli.md.
`;
}

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(usage());
    return name === undefined ? 2 : 0;
  }
  const cmd = COMMANDS[name];
  if (!cmd) {
    process.stderr.write(`ptyrelay: unknown command ${name}\n\n${usage()}`);
    return 2;
  }
  const json = rest.includes('--json');
  try {
    const args = parseCommand(cmd, rest);
    if (args.values.help) {
      process.stdout.write(commandHelp(cmd));
      return 0;
    }
    return await cmd.run(args);
  } catch (err) {
    return reportError(err, json);
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => process.exit(reportError(err, false)),
);
