import { PtyRelayError } from '../../provider/errors.js';
import { DEFAULT_COMMANDS_COUNT, MAX_COMMAND_RECORDS } from '../../provider/wire/command-messages.js';
import { sendMeaning } from '../agents/end-reason-text.js';
import { commandsText } from '../agents/tool-result-text.js';
import { typedText } from '../agents/typed-text.js';
import { type Command, output } from './command.js';
import { connectRelay, withAdoption } from './relay-connect.js';
import { terminalArg } from './terminal-arg.js';

/** A CLI send waits this long unless --timeout says otherwise. */
const DEFAULT_CLI_SEND_TIMEOUT_MS = 30_000;
/** Exit code of `send` when the wait did not end at a prompt (inferred_idle, timeout). */
const EXIT_NOT_DONE = 3;

function timeoutMs(v: unknown): number {
  if (v === undefined) return DEFAULT_CLI_SEND_TIMEOUT_MS;
  const s = Number(v);
  if (!Number.isFinite(s) || s <= 0)
    throw new PtyRelayError('INVALID_ARGUMENT', `--wait wants seconds, got ${v}`);
  return Math.round(s * 1000);
}

const send: Command = {
  usage: 'send HOST/ID TEXT [--raw] [--wait SECONDS] [--no-wait]',
  summary: 'Types TEXT (and Enter) into a terminal, waits for it, prints the output and the end reason.',
  help: `  --raw           type TEXT exactly (no Enter, newlines unchanged)
  --wait SECONDS  longest wait (default 30)
  --no-wait       type and return at once (no end reason)
The end reason goes to stderr: stdin_read (waiting for input, with what for: prompt, password,
pager, program or unknown; the command's exit code when shell integration reported it), inferred_idle or timeout (the command may still run: exit code 3),
session_exit (the terminal's shell exited). See docs/agents.md.`,
  positionals: [2, 2],
  options: { raw: { type: 'boolean' }, wait: { type: 'string' }, 'no-wait': { type: 'boolean' } },
  async run(args) {
    const [arg, text] = args.positionals;
    const data = args.values.raw ? text : typedText(text);
    const client = await connectRelay({ quiet: args.json });
    try {
      const id = await terminalArg(client, arg);
      if (args.values['no-wait']) {
        await withAdoption(client, id, () => client.write(id, data));
        output(args, { ok: true, id, bytes: Buffer.byteLength(data) }, '');
        return 0;
      }
      const r = await withAdoption(client, id, () =>
        client.agentSend(id, data, { timeoutMs: timeoutMs(args.values.wait) }),
      );
      if (args.json) output(args, { ok: true, id, ...r }, '');
      else {
        if (r.output) process.stdout.write(`${r.output}\n`);
        const code = r.exitCode !== undefined ? ` (exit code ${r.exitCode})` : '';
        const left =
          r.omittedFromLine !== undefined
            ? ` (log lines ${r.omittedFromLine}+${r.omittedLines} left out)`
            : '';
        process.stderr.write(
          `ptyrelay: ${r.reason}${code}${r.awaiting ? `, awaiting ${r.awaiting}` : ''}${r.truncated ? `, output truncated${left}` : ''}: ${sendMeaning(r)}\n`,
        );
      }
      return r.reason === 'inferred_idle' || r.reason === 'timeout' ? EXIT_NOT_DONE : 0;
    } finally {
      await client.dispose();
    }
  },
};

const run: Command = {
  usage: 'run HOST [--cwd DIR] -- CMD ARGS…',
  summary:
    "Runs one command in a fresh terminal on HOST, streams its output, exits with the command's exit code.",
  help: `  --cwd DIR  working directory (default: home)
The terminal is closed when the command ends; Ctrl-C is passed on as SIGINT.`,
  positionals: [1, 1],
  options: { cwd: { type: 'string' } },
  async run(args) {
    const host = args.positionals[0];
    const [command, ...cmdArgs] = args.rest;
    if (!command) throw new PtyRelayError('INVALID_ARGUMENT', `usage: ptyrelay ${run.usage}`);
    const client = await connectRelay({ quiet: true });
    let id: string | undefined;
    const early: { data: Uint8Array[]; exit?: number } = { data: [] };
    let exited: (code: number) => void = () => {};
    const exit = new Promise<number>((resolve) => {
      exited = resolve;
    });
    client.onData((e) =>
      id === undefined ? early.data.push(e.data) : e.id === id && process.stdout.write(e.data),
    );
    client.onExit((e) => {
      if (id === undefined) early.exit = e.exitCode;
      else if (e.id === id) exited(e.exitCode);
    });
    const onSigint = () => id !== undefined && void client.sendSignal(id, 'SIGINT').catch(() => {});
    process.on('SIGINT', onSigint);
    try {
      const r = await client.spawn({
        host,
        cols: process.stdout.columns || 120,
        rows: process.stdout.rows || 40,
        command,
        args: cmdArgs,
        ...(args.values.cwd ? { cwd: args.values.cwd as string } : {}),
      });
      id = r.id;
      if (r.replay && r.replay.length > 0) process.stdout.write(r.replay);
      for (const d of early.data) process.stdout.write(d);
      if (r.exited) exited(r.exited.exitCode);
      else if (early.exit !== undefined) exited(early.exit);
      const code = await exit;
      await client.shutdown(r.id, { immediate: true }).catch(() => {});
      return code;
    } finally {
      process.off('SIGINT', onSigint);
      await client.dispose();
    }
  },
};

function countArg(v: unknown): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1 || n > MAX_COMMAND_RECORDS)
    throw new PtyRelayError('INVALID_ARGUMENT', `--count wants 1-${MAX_COMMAND_RECORDS}, got ${v}`);
  return n;
}

const commands: Command = {
  usage: 'commands HOST/ID [--count N]',
  summary: "Lists the commands a terminal's shell ran (shell integration), newest first, with exit codes.",
  help: `  --count N  newest N commands (default ${DEFAULT_COMMANDS_COUNT})
Each line: id (c1, c2, …), exit code and duration (or running), the output's lines in the
terminal's log, start time, cwd and the command line. Shells without ptyrelay's shell
integration (other than bash and zsh) report none. See docs/agents.md.`,
  positionals: [1, 1],
  options: { count: { type: 'string' } },
  async run(args) {
    const client = await connectRelay({ quiet: args.json });
    try {
      const id = await terminalArg(client, args.positionals[0]);
      const r = await client.commands(id, { count: countArg(args.values.count) });
      output(args, { id, ...r }, commandsText(id, r));
      return 0;
    } finally {
      await client.dispose();
    }
  },
};

/** Agent-style commands: `send` with end reasons, `run`, `commands`. */
export const agentCommands: Record<string, Command> = { send, run, commands };
