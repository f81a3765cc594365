import type { RelayDaemonInfo } from '../../provider/client/relay-protocol.js';
import { PtyRelayError } from '../../provider/errors.js';
import { askYesNo } from './cmd-hosts.js';
import { type Command, output, table, usageError } from './command.js';
import { DEFAULT_ONE_SHOT_TIMEOUT_S, parseTimeout, withDeadline } from './one-shot-timeout.js';
import { reportUnavailable } from './partial-listing.js';
import { connectRelay } from './relay-connect.js';

type Running = Extract<RelayDaemonInfo, { pid: number }>;

const isRunning = (d: RelayDaemonInfo): d is Running => 'pid' in d;

function daemonTable(list: RelayDaemonInfo[]): string {
  if (list.length === 0) return 'no daemons';
  return table([
    ['HOST', 'BUILD', 'PID', 'SESSIONS', 'RELAYS', 'STARTED'],
    ...list.map((d) =>
      isRunning(d)
        ? [
            d.host,
            `${d.build}${d.current ? '' : ' (old)'}`,
            String(d.pid),
            String(d.sessions),
            String(d.connections),
            new Date(d.startedAt).toISOString().replace(/\.\d+Z$/, 'Z'),
          ]
        : [d.host, '-', '-', '-', '-', `unreachable: ${d.error}`],
    ),
  ]);
}

/** The daemon `stop` means: the current build's, or the one of `--build`. */
function pick(list: RelayDaemonInfo[], host: string, build: string | undefined): Running {
  const running = list.filter(isRunning);
  const d = build === undefined ? running.find((x) => x.current) : running.find((x) => x.build === build);
  if (!d) {
    const builds = running.map((x) => x.build).join(', ') || 'none';
    throw new PtyRelayError(
      'NOT_FOUND',
      `no daemon${build ? ` of build ${build}` : ''} on ${host} (running: ${builds})`,
    );
  }
  return d;
}

const daemons: Command = {
  usage: 'daemons [HOST] | daemons stop HOST [--build B] [--yes]',
  summary:
    'Per-user daemons on every host (or HOST): build, pid, sessions, relays attached; `stop` ends one.',
  help: `  daemons [HOST]                 lists the daemons (an old build is kept while it has sessions)
  daemons stop HOST [--build B]  stops HOST's current daemon (or build B's): its sessions end.
                                 Asks first when it has sessions; --yes skips the question
                                 (required when stdin is not a terminal).
  --timeout S                    give up on the relay after S seconds (default ${DEFAULT_ONE_SHOT_TIMEOUT_S})`,
  positionals: [0, 2],
  completions: [['stop', '@hosts'], ['@hosts']],
  options: { build: { type: 'string' }, yes: { type: 'boolean', short: 'y' }, timeout: { type: 'string' } },
  async run(args) {
    const [first, second] = args.positionals;
    const stopping = first === 'stop';
    if (stopping && second === undefined) throw usageError('missing HOST');
    if (!stopping && second !== undefined) throw usageError(`unexpected argument ${JSON.stringify(second)}`);
    if (!stopping && args.values.build !== undefined) throw usageError('--build goes with daemons stop');
    // The deadline bounds each call to the relay, not the time a person takes to answer.
    const ms = parseTimeout(args.values.timeout);
    const client = await connectRelay({ quiet: args.json });
    try {
      if (!stopping) {
        const { daemons: list, unavailable } = await withDeadline('daemons', ms, client.daemonListing(first));
        output(args, { daemons: list, unavailable, partial: unavailable.length > 0 }, () =>
          daemonTable(list),
        );
        return reportUnavailable(unavailable, args.json);
      }
      const host = second!;
      const build = args.values.build as string | undefined;
      const d = pick(await withDeadline('daemons stop', ms, client.daemons(host)), host, build);
      if (d.sessions > 0 && args.values.yes !== true) {
        const what = `the daemon on ${host} (build ${d.build}, pid ${d.pid}) has ${d.sessions} session${d.sessions === 1 ? '' : 's'}; they will end`;
        if (!process.stdin.isTTY) throw usageError(`${what}: pass --yes to stop it`);
        if (!(await askYesNo(`${what}. Stop it? [y/N] `))) {
          process.stderr.write('ptyrelay: not stopped\n');
          return 1;
        }
      }
      const stopped = await withDeadline('daemons stop', ms, client.stopDaemon(host, d.build));
      output(args, { stopped }, `stopped the daemon on ${host} (build ${d.build}, pid ${d.pid})`);
      return 0;
    } finally {
      await client.dispose();
    }
  },
};

/** `daemons`: list and stop the per-user stub daemons. */
export const daemonCommands: Record<string, Command> = { daemons };
