#!/usr/bin/env node
import { LocalPtyProvider } from '../local/local-pty-provider.js';
import { attachTty } from './tty-attach.js';

const USAGE = `usage: ptyrelay <command>

commands:
  shell [--name NAME]   open (or reattach to) a shell on the built-in local host.
                        Detach with Ctrl-]; run it again to come back to the same shell.
  --help                this text
`;

/** Shell on the `local` host, keyed so a second run reattaches to the same PTY (paneKey). */
async function shell(args: string[]): Promise<number> {
  const i = args.indexOf('--name');
  const name = i >= 0 ? args[i + 1] : 'default';
  const provider = new LocalPtyProvider();
  const stdout = process.stdout;
  const { why, attach } = await attachTty(provider, async () => {
    const r = await provider.spawn({
      cols: stdout.columns || 80,
      rows: stdout.rows || 24,
      paneKey: `cli-shell:${name}`,
      name: `ptyrelay shell ${name}`,
    });
    process.stderr.write(
      `${r.reused ? 'reattached to' : 'started'} ${r.id} (pid ${r.pid}); detach with Ctrl-]\r\n`,
    );
    // A reattach repaints from the screen model rather than replaying the whole history.
    return r.reused ? provider.attach(r.id) : r;
  });
  process.stderr.write(
    why === 'detached'
      ? `\r\ndetached from ${attach.id}; run the same command to reattach\r\n`
      : `\r\n${attach.id} exited\r\n`,
  );
  await provider.dispose();
  return 0;
}

async function main(argv: string[]): Promise<number> {
  const [cmd, ...rest] = argv;
  if (cmd === undefined || cmd === '--help' || cmd === '-h' || cmd === 'help') {
    process.stdout.write(USAGE);
    return cmd === undefined ? 2 : 0;
  }
  if (cmd === 'shell') return shell(rest);
  process.stderr.write(`unknown command ${cmd}\n${USAGE}`);
  return 2;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`ptyrelay: ${err?.code ? `${err.code}: ` : ''}${err?.message ?? err}\n`);
    process.exit(1);
  },
);
