import type { RelayClient } from '../../provider/client/relay-client.js';
import type { HostKeyInfo } from '../../provider/client/relay-protocol.js';
import { isPtyRelayError, PtyRelayError } from '../../provider/errors.js';
import { type CommandArgs, output } from './command.js';

/** Asks a yes/no question on the terminal, like ssh (only `yes` or `y` is yes). */
export async function askYesNo(question: string): Promise<boolean> {
  const { createInterface } = await import('node:readline');
  const rl = createInterface({ input: process.stdin, output: process.stderr, terminal: false });
  try {
    process.stderr.write(question);
    const answer = await new Promise<string>((resolve) => {
      rl.once('line', resolve);
      rl.once('close', () => resolve(''));
    });
    return /^y(es)?$/i.test(answer.trim());
  } finally {
    rl.close();
  }
}

/** The key type as ssh prints it before "key fingerprint is" (ssh-ed25519 → ED25519). */
function keyWord(keyType: string): string {
  return keyType
    .replace(/^ssh-/, '')
    .replace(/^ecdsa-sha2-.*/, 'ECDSA')
    .toUpperCase();
}

/** Whether a question may be asked: a person at a terminal, not a script reading JSON. */
export function interactive(json: boolean): boolean {
  return !json && process.stdin.isTTY === true && process.stderr.isTTY === true;
}

/**
 * Runs `fn` against `host`; when the relay answers HOSTKEY_UNKNOWN under the `ask` policy and a
 * person is at the terminal, shows the fingerprint and asks like ssh, records the key at the
 * relay on `yes`, and runs `fn` again. Otherwise the error (fingerprint and the command that
 * trusts it) goes to the caller.
 */
export async function withHostKeyPrompt<T>(
  client: RelayClient,
  host: string,
  json: boolean,
  fn: () => Promise<T>,
): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (!isPtyRelayError(err, 'HOSTKEY_UNKNOWN') || err.details?.policy !== 'ask' || !interactive(json))
      throw err;
    const fingerprint = String(err.details?.presented ?? '');
    const keyType = String(err.details?.keyType ?? 'host');
    const ok = await askYesNo(
      `The authenticity of host '${host}' can't be established.\n` +
        `${keyWord(keyType)} key fingerprint is ${fingerprint}.\n` +
        'Are you sure you want to continue connecting (yes/no)? ',
    );
    if (!ok) throw err;
    const info = await client.trustHostKey(host, fingerprint);
    process.stderr.write(`ptyrelay: host ${host}: key ${info.presented} recorded in ${info.file}\n`);
    return fn();
  }
}

function describeKey(host: string, info: HostKeyInfo): string {
  return `${host} (${info.address}) presents ${keyWord(info.keyType)} key ${info.presented}`;
}

/**
 * `hosts trust NAME [--replace] [--yes]`: shows the key the host presents and records it at the
 * relay once confirmed (a question at a terminal, `--yes` otherwise). A changed key is replaced
 * only with `--replace`, after both fingerprints were shown.
 */
export async function trustHost(client: RelayClient, args: CommandArgs, host: string): Promise<number> {
  const info = await client.hostKey(host);
  const replace = args.values.replace === true;
  if (info.verdict === 'ok') {
    output(args, { host, ...info }, `${describeKey(host, info)}: already trusted`);
    return 0;
  }
  if (info.verdict === 'revoked')
    throw new PtyRelayError('HOSTKEY_REVOKED', `${describeKey(host, info)}, which is marked @revoked`, {
      host,
    });
  if (info.verdict === 'mismatch' && !replace) {
    throw new PtyRelayError(
      'HOSTKEY_MISMATCH',
      `${describeKey(host, info)}, but known_hosts holds ${info.known.join(', ')}; if the host was reinstalled: ptyrelay hosts trust ${host} --replace`,
      { host, presented: info.presented, known: info.known },
    );
  }
  const what =
    info.verdict === 'mismatch'
      ? `WARNING: the host key of ${host} has changed.\n  known:     ${info.known.join(', ')}\n  presented: ${info.presented} (${keyWord(info.keyType)})\n`
      : `${describeKey(host, info)}.\n`;
  if (args.values.yes !== true) {
    if (!interactive(args.json)) {
      throw new PtyRelayError(
        'HOSTKEY_UNKNOWN',
        `${what.trim()}\nCheck the fingerprint, then: ptyrelay hosts trust ${host}${replace ? ' --replace' : ''} --yes`,
        { host, presented: info.presented },
      );
    }
    const q =
      info.verdict === 'mismatch' ? 'Replace the known key with it (yes/no)? ' : 'Trust it (yes/no)? ';
    if (!(await askYesNo(`${what}${q}`))) {
      process.stderr.write('ptyrelay: nothing recorded\n');
      return 1;
    }
  }
  const done = await client.trustHostKey(host, info.presented, { replace });
  output(args, { host, ...done }, `${host}: key ${done.presented} recorded in ${done.file}`);
  return 0;
}
