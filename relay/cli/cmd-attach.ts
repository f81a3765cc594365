import type { RelayClient } from '../../provider/client/relay-client.js';
import type { PtyAttachResult, PtyExitInfo } from '../../provider/contract.js';
import { isPtyRelayError } from '../../provider/errors.js';
import { shellQuote } from '../deploy/shell-quote.js';
import { LocalPtyProvider } from '../local/local-pty-provider.js';
import { withHostKeyPrompt } from './cmd-hosts.js';
import { type Command, usageError } from './command.js';
import { connectRelay } from './relay-connect.js';
import { askNewShell, paintRestored } from './restored-view.js';
import { statusLine } from './status-line.js';
import { terminalArg } from './terminal-arg.js';
import { attachTty, type TtyAttachEnd } from './tty-attach.js';

/** After a detach, how long to wait for the relay to settle input still queued (to count what was lost). */
const DETACH_SETTLE_MS = 1000;

/** What an outage's cause means to the person at the keyboard. */
const CAUSE_WORDS: Record<string, string> = {
  network: 'network',
  sshd: 'sshd gone',
  auth: 'authentication',
  hostkey: 'host key',
  daemon: 'stub daemon',
  relay: 'relay',
  link: 'link',
};
/** Kept whole at the end of the status line, however narrow the terminal. */
const DETACH_HINT = 'Ctrl-] detaches';

/** Interactive commands need a terminal on stdin; a script gets pointed at send/read instead. */
function requireTty(command: string): void {
  if (process.stdin.isTTY) return;
  throw usageError(
    `${command} needs a terminal on stdin; from a script, type with \`ptyrelay send HOST/ID TEXT\` and read the screen with \`ptyrelay read HOST/ID\``,
  );
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
  opts: { signal: AbortSignal; onInputLost: (bytes: number, err: unknown) => void },
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
    opts,
  );
}

const attach: Command = {
  usage: 'attach HOST/ID',
  summary: 'Uses a terminal interactively in this tty. Detach with Ctrl-]; the terminal keeps running.',
  help: `The screen is restored on attach. If the connection to the relay drops, a status line
shows the reconnect attempts; typing continues to be accepted (queued, up to 64 KiB) and the
output resumes exactly where it stopped. Ctrl-] detaches at any time.`,
  positionals: [1, 1],
  async run(args) {
    requireTty('attach');
    const client = await connectRelay({ quiet: true });
    const id = await terminalArg(client, args.positionals[0]!).catch(async (err: unknown) => {
      await client.dispose();
      throw err;
    });
    const status = statusLine();
    const lost = new AbortController();
    const host = id.includes('/') ? id.slice(0, id.lastIndexOf('/')) : 'local';
    client.onLinkState((e) => {
      if (e.host !== 'relay' && e.host !== host) return;
      const s = e.state;
      const what = e.host === 'relay' ? 'the relay' : `host ${host}`;
      if (s.state === 'reconnecting') {
        const why = s.lastError ? `: ${s.lastError}` : '';
        const next = `next attempt in ${(s.nextInMs / 1000).toFixed(1)} s (attempt ${s.attempt})`;
        // Most important first: the status line shortens the message to fit and keeps the hint.
        if (e.host === 'relay')
          status.show(`ptyrelay: reconnecting to the relay, ${next}${why}`, DETACH_HINT);
        else {
          const cause = s.cause ?? 'link';
          status.show(
            `ptyrelay: ${what} unreachable (${CAUSE_WORDS[cause] ?? cause}), ${next}${why}`,
            DETACH_HINT,
          );
        }
      } else if (s.state === 'connected') status.clear(`ptyrelay: ${what} is back`);
      else if (s.state === 'lost' && e.host === 'relay') lost.abort();
    });
    // Keystrokes typed during an outage that were not sent (too old, or the attach ended).
    let unsent = 0;
    const onInputLost = (bytes: number, err: unknown) => {
      if (!isPtyRelayError(err, 'INPUT_EXPIRED')) return;
      unsent += bytes;
      status.show(`ptyrelay: ${unsent} bytes typed during the outage were not sent (too old)`);
    };
    // Reaching a host can mean connecting and deploying its stub first: show each step.
    client.onHostProgress((p) =>
      p.step === 'link' ? status.clear() : status.show(`ptyrelay: host ${p.host}: ${p.message}`, DETACH_HINT),
    );
    let result: AttachOutcome;
    try {
      result = await attachTty(
        client,
        () => withHostKeyPrompt(client, host, args.json, () => client.attach(id)),
        {
          signal: lost.signal,
          onInputLost,
        },
      );
      if (result.why === 'restored') {
        status.clear();
        result = await offerNewShell(client, result.attach, { signal: lost.signal, onInputLost });
      }
      if (result.why === 'detached') {
        // Input still queued for an outage is dropped with the detach; wait to hear how much.
        await client.detach(result.attach.id).catch(() => {});
        const until = Date.now() + DETACH_SETTLE_MS;
        while (client.pendingInputCount > 0 && Date.now() < until)
          await new Promise((r) => setTimeout(r, 20));
      }
    } finally {
      status.clear();
    }
    if (unsent > 0)
      process.stderr.write(`\r\nptyrelay: ${unsent} bytes typed during the outage were not sent\r\n`);
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
    requireTty('shell');
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
