#!/usr/bin/env node
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot, stubBuildId } from '../core/stub-bundle.js';
import { agentCommands } from './cmd-agent.js';
import { attachCommands } from './cmd-attach.js';
import { completionCommands } from './cmd-completion.js';
import { daemonCommands } from './cmd-daemons.js';
import { mcpCommands } from './cmd-mcp.js';
import { navCommands } from './cmd-nav.js';
import { serveCommands } from './cmd-serve.js';
import { terminalCommands } from './cmd-terminals.js';
import { tokenCommands } from './cmd-token.js';
import { type Command, commandHelp, parseCommand, reportError } from './command.js';

/** Every command: adding one is one entry here (its flags, usage and completion come with it). */
const COMMANDS: Record<string, Command> = {
  ...serveCommands,
  ...terminalCommands,
  ...agentCommands,
  ...attachCommands,
  ...mcpCommands,
  ...tokenCommands,
  ...daemonCommands,
  ...navCommands,
  ...completionCommands(() => COMMANDS),
};

function usage(): string {
  const width = Math.max(...Object.values(COMMANDS).map((c) => c.usage.split(' [')[0].length));
  const lines = Object.entries(COMMANDS).map(
    ([, c]) => `  ${c.usage.split(' [')[0].padEnd(width)}  ${c.summary}`,
  );
  return `usage: ptyrelay <command> [options]

commands:
${lines.join('\n')}

Every command takes --help and --json; \`ptyrelay --version\` prints the version.
Client commands reach the relay at $PTYRELAY_URL (default ws://127.0.0.1:7681) with
$PTYRELAY_TOKEN or ~/.config/ptyrelay/token. Terminal ids are HOST/ID (e.g. local/pty-3).
Detach from \`attach\`/\`shell\` with Ctrl-]. See docs/cli.md.
`;
}

/** `ptyrelay <version> (stub build <id>)`: the package version and the stub build it deploys. */
function version(json: boolean): string {
  const root = packageRoot();
  const pkg: unknown = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  const v = typeof pkg === 'object' && pkg !== null && 'version' in pkg ? String(pkg.version) : 'unknown';
  const stub = stubBuildId();
  return json
    ? `${JSON.stringify({ version: v, stubBuild: stub, node: process.version })}\n`
    : `ptyrelay ${v} (stub build ${stub}, node ${process.version})\n`;
}

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    (name === undefined ? process.stderr : process.stdout).write(usage());
    return name === undefined ? 2 : 0;
  }
  if (name === '--version' || name === '-V' || name === 'version') {
    process.stdout.write(version(rest.includes('--json')));
    return 0;
  }
  const cmd = COMMANDS[name];
  if (!cmd) {
    process.stderr.write(`ptyrelay: unknown command ${JSON.stringify(name)}\n\n${usage()}`);
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
    return reportError(err, json, cmd);
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => process.exit(reportError(err, false)),
);
