import type { RelayClient } from '../../provider/client/relay-client.js';
import type { ScreenSnapshot } from '../../provider/contract.js';
import { PtyRelayError } from '../../provider/errors.js';
import { MAX_HISTORY_PAGE_BYTES } from '../../provider/wire/history-messages.js';
import { trustHost, withHostKeyPrompt } from './cmd-hosts.js';
import { type Command, type CommandArgs, output, table } from './command.js';
import { withTimeouts } from './one-shot-timeout.js';
import { reportUnavailable } from './partial-listing.js';
import { connectRelay, describeLink, withAdoption } from './relay-connect.js';
import { terminalArg } from './terminal-arg.js';

/** Runs `fn` with a connected client and disposes it afterwards. */
async function withClient<T>(args: CommandArgs, fn: (c: RelayClient) => Promise<T>): Promise<T> {
  const client = await connectRelay({ quiet: args.json });
  try {
    return await fn(client);
  } finally {
    await client.dispose();
  }
}

/**
 * The screen of a snapshot as plain text: scrollback and screen rows, trailing blanks removed.
 * The terminal emulator is loaded here, not with the CLI (`serve` never needs it).
 */
export async function snapshotText(s: ScreenSnapshot): Promise<string> {
  const { Terminal } = (await import('@xterm/headless')).default;
  const term = new Terminal({ cols: s.cols, rows: s.rows, scrollback: 100_000, allowProposedApi: true });
  await new Promise<void>((r) => term.write(s.data, r));
  const buf = term.buffer.active;
  const lines: string[] = [];
  for (let i = 0; i < buf.length; i++) lines.push(buf.getLine(i)?.translateToString(true) ?? '');
  term.dispose();
  while (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
  return lines.join('\n');
}

/** `SIGINT`, `INT`, `int` → `SIGINT`. */
function signalName(s: string): string {
  const up = s.toUpperCase();
  return up.startsWith('SIG') ? up : `SIG${up}`;
}

const hosts: Command = {
  usage: 'hosts [trust NAME [--replace] [--yes]]',
  summary: "The relay's hosts and the state of its link to each; `hosts trust NAME` records a host's key.",
  help: `  trust NAME   show the key NAME presents and record it in known_hosts once confirmed
  --replace    replace a changed key (both fingerprints are shown first)
  --yes        do not ask (check the fingerprint first)`,
  positionals: [0, 2],
  completions: [['trust'], ['@hosts']],
  options: { replace: { type: 'boolean' }, yes: { type: 'boolean' } },
  run: (args) =>
    withClient(args, async (c) => {
      if (args.positionals.length > 0) {
        const [sub, name] = args.positionals;
        if (sub !== 'trust' || !name)
          throw new PtyRelayError('INVALID_ARGUMENT', `usage: ptyrelay ${hosts.usage}`);
        return trustHost(c, args, name);
      }
      const list = await c.hosts();
      output(args, { hosts: list }, () =>
        table([['HOST', 'LINK'], ...list.map((h) => [h.name, describeLink(h.state)])]),
      );
      return 0;
    }),
};

const ls: Command = {
  usage: 'ls [HOST]',
  summary: 'Terminals of every host (or of HOST): id, pid, owner, size, title.',
  positionals: [0, 1],
  run: (args) =>
    withClient(args, async (c) => {
      const { terminals: terms, unavailable } = await c.listing(args.positionals[0]);
      output(args, { terminals: terms, unavailable, partial: unavailable.length > 0 }, () =>
        terms.length === 0
          ? 'no terminals'
          : table([
              ['ID', 'PID', 'OWNER', 'SIZE', 'STATUS', 'TITLE'],
              ...terms.map((t) => [
                t.id,
                String(t.pid),
                t.owner ?? '-',
                `${t.cols}x${t.rows}`,
                t.exited ? `exited ${t.exited.exitCode}` : 'running',
                t.title || t.name || '',
              ]),
            ]),
      );
      return reportUnavailable(unavailable, args.json);
    }),
};

const open: Command = {
  usage: 'open HOST [--cwd DIR] [--name NAME] [--cols N] [--rows N] [-- CMD ARGS…]',
  summary: 'Starts a terminal on HOST (the login shell, or CMD) and prints its id.',
  help: `  --cwd DIR    working directory (default: home)
  --name NAME  display name
  --cols/--rows size (default: this terminal's, or 80x24)
The terminal keeps running after this command returns; \`ptyrelay attach ID\` to use it.`,
  positionals: [1, 1],
  options: {
    cwd: { type: 'string' },
    name: { type: 'string' },
    cols: { type: 'string' },
    rows: { type: 'string' },
  },
  run: (args) =>
    withClient(args, async (c) => {
      const host = args.positionals[0];
      const [command, ...cmdArgs] = args.rest;
      const size = (v: unknown, tty: number | undefined, d: number) => Number(v ?? 0) || tty || d;
      const r = await withHostKeyPrompt(c, host, args.json, () =>
        c.spawn({
          host,
          cols: size(args.values.cols, process.stdout.columns, 80),
          rows: size(args.values.rows, process.stdout.rows, 24),
          ...(args.values.cwd ? { cwd: args.values.cwd as string } : {}),
          ...(args.values.name ? { name: args.values.name as string } : {}),
          ...(command ? { command, args: cmdArgs } : {}),
        }),
      );
      output(
        args,
        { id: r.id, pid: r.pid, incarnationId: r.incarnationId, cols: r.cols, rows: r.rows },
        r.id,
      );
      return 0;
    }),
};

const read: Command = {
  usage: 'read HOST/ID [--raw] [--bytes N]',
  summary: "Prints a terminal's screen (with scrollback) as text; --raw prints its recent output bytes.",
  help: `  --raw      the output ring from the oldest byte still held (at most --bytes, default 65536);
             when the ring no longer reaches back, the screen as VT sequences followed by the
             output since (attaching adopts a terminal this relay had not published yet)`,
  positionals: [1, 1],
  options: { raw: { type: 'boolean' }, bytes: { type: 'string' } },
  run: (args) =>
    withClient(args, async (c) => {
      const id = await terminalArg(c, args.positionals[0]);
      if (!args.values.raw) {
        const text = await snapshotText(await c.getBufferSnapshot(id));
        output(args, { id, text }, text);
        return 0;
      }
      const limit = Number(args.values.bytes ?? 65536) || 65536;
      const tail = await historyTail(c, id, limit);
      if (tail) {
        if (args.json) output(args, { id, seq: tail.headSeq, data: tail.data.toString('utf8') }, '');
        else process.stdout.write(tail.data);
        return 0;
      }
      const a = await c.attach(id, { fromSeq: 0 });
      await c.detach(id);
      const all = Buffer.concat([
        Buffer.from(a.snapshot?.data ?? '', 'utf8'),
        Buffer.from(a.replay ?? new Uint8Array()),
      ]);
      const data = all.subarray(Math.max(0, all.length - limit));
      if (args.json) output(args, { id, seq: a.providerSequence.value, data: data.toString('utf8') }, '');
      else process.stdout.write(data);
      return 0;
    }),
};

/** The last `limit` bytes of a terminal's history, or `undefined` when it no longer reaches back that far. */
async function historyTail(
  c: RelayClient,
  id: string,
  limit: number,
): Promise<{ data: Buffer; headSeq: number } | undefined> {
  const probe = await c.readHistory(id, { fromSeq: Number.MAX_SAFE_INTEGER, maxBytes: 1 });
  const from = Math.max(0, probe.headSeq - limit);
  if (probe.startSeq > from) return undefined;
  const parts: Buffer[] = [];
  let seq = from;
  while (seq < probe.headSeq) {
    const page = await c.readHistory(id, {
      fromSeq: seq,
      maxBytes: Math.min(MAX_HISTORY_PAGE_BYTES, probe.headSeq - seq),
    });
    if (page.fromSeq !== seq) return undefined; // dropped meanwhile
    if (page.data.length === 0) break;
    parts.push(Buffer.from(page.data));
    seq += page.data.length;
  }
  return { data: Buffer.concat(parts), headSeq: seq };
}

const history: Command = {
  usage: 'history ID [--from SEQ]',
  summary: "Writes a terminal's raw output history (as the host still holds it) to stdout.",
  help: `  --from SEQ  start at this seq (default 0); the export ends at the output's head when it began.
             When the host no longer holds SEQ, the export starts at the oldest byte it holds
             and says so on stderr (exit code 0; --json reports it as startSeq).`,
  positionals: [1, 1],
  options: { from: { type: 'string' } },
  run: (args) =>
    withClient(args, async (c) => {
      const id = args.positionals[0];
      const from = Number(args.values.from ?? 0);
      if (!Number.isSafeInteger(from) || from < 0)
        throw new PtyRelayError(
          'INVALID_ARGUMENT',
          `--from must be a seq (an integer ≥ 0), got ${args.values.from}`,
        );
      let seq = from;
      let end: number | undefined;
      let written = 0;
      let first: number | undefined;
      while (end === undefined || seq < end) {
        const page = await c.readHistory(id, { fromSeq: seq, maxBytes: MAX_HISTORY_PAGE_BYTES });
        end ??= page.headSeq;
        if (page.fromSeq > seq) {
          // Older bytes were dropped (the history's caps) before we reached them.
          process.stderr.write(
            `ptyrelay: ${id}: bytes ${seq}-${page.fromSeq} are no longer held; continuing at ${page.fromSeq}\n`,
          );
        }
        first ??= page.fromSeq;
        if (page.data.length === 0) break;
        const data = Buffer.from(page.data).subarray(0, Math.max(0, end - page.fromSeq));
        if (!args.json && !process.stdout.write(data))
          await new Promise((r) => process.stdout.once('drain', r));
        written += data.length;
        seq = page.fromSeq + page.data.length;
      }
      if (args.json)
        output(args, { id, fromSeq: from, startSeq: first ?? from, endSeq: seq, bytes: written }, '');
      return 0;
    }),
};

const signal: Command = {
  usage: 'signal HOST/ID SIG',
  summary: "Sends a signal (INT, TERM, HUP, KILL, …) to the terminal's foreground process group.",
  positionals: [2, 2],
  run: (args) =>
    withClient(args, async (c) => {
      const [arg, sig] = args.positionals;
      const id = await terminalArg(c, arg);
      await withAdoption(c, id, () => c.sendSignal(id, signalName(sig)));
      output(args, { ok: true, id, signal: signalName(sig) }, '');
      return 0;
    }),
};

const kill: Command = {
  usage: 'kill HOST/ID [--now]',
  summary: 'Ends a terminal: SIGHUP, then SIGKILL after 2 s (--now: SIGKILL at once).',
  positionals: [1, 1],
  options: { now: { type: 'boolean' } },
  run: (args) =>
    withClient(args, async (c) => {
      const id = await terminalArg(c, args.positionals[0]);
      await withAdoption(c, id, () => c.shutdown(id, { immediate: args.values.now === true }));
      output(args, { ok: true, id }, `killed ${id}`);
      return 0;
    }),
};

/** The commands that act on the relay's hosts and terminals (one-shot: each takes --timeout). */
export const terminalCommands: Record<string, Command> = withTimeouts({
  hosts,
  ls,
  open,
  read,
  history,
  signal,
  kill,
});
