import type { RelayClient } from '../../provider/client/relay-client.js';
import type { PtyAttachResult, PtyExitInfo } from '../../provider/contract.js';
import { shellQuote } from '../deploy/shell-quote.js';
import { LocalPtyProvider } from '../local/local-pty-provider.js';
import type { Command } from './command.js';
import { connectRelay } from './relay-connect.js';
import { askNewShell, paintRestored } from './restored-view.js';
import { attachTty, type TtyAttachEnd } from './tty-attach.js';

/** A status message wait this long before it is shown (a quick reconnect stays invisible). */
const STATUS_DELAY_MS = 300;

/**
 * One status line on stderr while the relay is unreachable. On a tty it is drawn on the bottom
 * row (cursor saved and restored) and erased once the link is back; otherwise it is a plain line.
 */
export function statusLine(stderr: NodeJS.WriteStream = process.stderr) {
  let shown = false;
  let timer: NodeJS.Timeout | undefined;
  const draw = (msg: string) => {
    if (stderr.isTTY && stderr.rows) {
      stderr.write(
        `\x1b7\x1b[${stderr.rows};1H\x1b[2K\x1b[7m${msg.slice(0, (stderr.columns || 80) - 1)}\x1b[0m\x1b8`,
      );
    } else stderr.write(`\r\n${msg}\r\n`);
    shown = true;
  };
  return {
    show(msg: string): void {
      clearTimeout(timer);
      if (shown) draw(msg);
      else timer = setTimeout(() => draw(msg), STATUS_DELAY_MS);
    },
    clear(msg?: string): void {
      clearTimeout(timer);
      if (!shown) return;
      shown = false;
      if (stderr.isTTY && stderr.rows) stderr.write(`\x1b7\x1b[${stderr.rows};1H\x1b[2K\x1b8`);
      else if (msg) stderr.write(`\r\n${msg}\r\n`);
    },
  };
}

function ending(why: TtyAttachEnd, id: string, exit: PtyExitInfo | undefined, again: string): string {
  if (why === 'detached') return `\r\ndetached from ${id}; ${again} to come back\r\n`;
  if (why === 'restored') return '';
  if (why === 'lost') return `\r\nlost the relay; ${id} keeps running — ${again} when it is back\r\n`;
  const how = exit ? ` (exit code ${exit.exitCode}${exit.signal ? `, ${exit.signal}` : ''})` : '';
  return `\r\n${id} exited${how}\r\n`;
}

type AttachOutcome = { why: TtyAttachEnd; attach: PtyAttachResult; exit?: PtyExitInfo };

/**
 * A terminal lost with its host (cold restore): shows its saved screen marked as restored, then
 * offers a new shell in its last cwd on the same host and attaches to it when accepted.
 */
async function offerNewShell(
  client: RelayClient,
  restored: PtyAttachResult,
  signal: AbortSignal,
): Promise<AttachOutcome> {
  const cr = restored.coldRestore!;
  const host = restored.id.slice(0, restored.id.lastIndexOf('/'));
  paintRestored(process.stdout, restored.id, cr);
  const cwdArg = cr.cwd ? ` --cwd ${shellQuote(cr.cwd)}` : '';
  if (!cr.cwd || !(await askNewShell(process.stdin, process.stdout, cr.cwd))) {
    process.stderr.write(`open a new shell there with: ptyrelay open ${host}${cwdArg}\r\n`);
    return { why: 'restored', attach: restored };
  }
  const stdout = process.stdout;
  return attachTty(
    client,
    async () => {
      const r = await client.spawn({
        host,
        cwd: cr.cwd,
        cols: stdout.columns || 80,
        rows: stdout.rows || 24,
      });
      process.stderr.write(`started ${r.id} in ${cr.cwd}; detach with Ctrl-]\r\n`);
      return r;
    },
    { signal },
  );
}

const attach: Command = {
  usage: 'attach ID',
  summary: 'Uses a terminal interactively in this tty. Detach with Ctrl-]; the terminal keeps running.',
  help: `The screen is restored on attach. If the connection to the relay drops, a status line
shows the reconnect attempts; typing continues to be accepted (queued, up to 64 KiB) and the
output resumes exactly where it stopped. Ctrl-] detaches at any time.`,
  positionals: [1, 1],
  async run(args) {
    const id = args.positionals[0];
    const client = await connectRelay({ quiet: true });
    const status = statusLine();
    const lost = new AbortController();
    client.onLinkState((e) => {
      if (e.host !== 'relay') return;
      const s = e.state;
      if (s.state === 'reconnecting') {
        const why = s.lastError ? ` — ${s.lastError}` : '';
        status.show(`ptyrelay: reconnecting to the relay (attempt ${s.attempt})… Ctrl-] detaches${why}`);
      } else if (s.state === 'connected') status.clear('ptyrelay: reconnected');
      else if (s.state === 'lost') lost.abort();
    });
    // Reaching a host can mean connecting and deploying its stub first: show each step.
    client.onHostProgress((p) =>
      p.step === 'link' ? status.clear() : status.show(`ptyrelay: host ${p.host}: ${p.message}`),
    );
    let result: AttachOutcome;
    try {
      result = await attachTty(client, () => client.attach(id), { signal: lost.signal });
    } finally {
      status.clear();
    }
    if (result.why === 'restored') result = await offerNewShell(client, result.attach, lost.signal);
    process.stderr.write(
      ending(result.why, result.attach.id, result.exit, `ptyrelay attach ${result.attach.id}`),
    );
    await client.dispose();
    return result.why === 'lost' ? 1 : 0;
  },
};

const shell: Command = {
  usage: 'shell [--name NAME]',
  summary: 'Opens (or reattaches to) a shell on the built-in local host, without a relay.',
  help: `Detach with Ctrl-]; run it again with the same --name to come back to the same shell.`,
  options: { name: { type: 'string' } },
  async run(args) {
    const name = (args.values.name as string | undefined) ?? 'default';
    const provider = new LocalPtyProvider();
    const stdout = process.stdout;
    const {
      why,
      attach: a,
      exit,
    } = await attachTty(provider, async () => {
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
        ? `\r\ndetached from ${a.id}; run the same command to reattach\r\n`
        : ending(why, a.id, exit, 'ptyrelay shell'),
    );
    await provider.dispose();
    return 0;
  },
};

/** Interactive commands: `attach` (through the relay) and `shell` (local, no relay). */
export const attachCommands: Record<string, Command> = { attach, shell };
