import { readFileSync } from 'node:fs';
import type { RelayClient, RelayClientOptions } from '../../provider/client/relay-client.js';
import type { HostProgress } from '../../provider/client/relay-protocol.js';
import type { LinkState } from '../../provider/contract.js';
import { isPtyRelayError, PtyRelayError } from '../../provider/errors.js';
import { defaultTokenPath } from '../service/token.js';
import { usageError } from './command.js';

/** Where the CLI finds the relay when PTYRELAY_URL is not set. */
export const DEFAULT_RELAY_URL = 'ws://127.0.0.1:7681';
/** Claim identity of CLI invocations: `open` in one run and `send`/`kill` in the next own the same terminals. */
export const DEFAULT_CLI_CLIENT_ID = 'ptyrelay-cli';

/** PTYRELAY_CA: a PEM file the relay's (e.g. self-signed) certificate must chain to. */
function caOf(env: NodeJS.ProcessEnv): { ca?: Buffer } {
  const path = env.PTYRELAY_CA;
  if (!path) return {};
  try {
    return { ca: readFileSync(path) };
  } catch (err) {
    throw new PtyRelayError(
      'CONFIG_INVALID',
      `PTYRELAY_CA: cannot read ${path}: ${(err as NodeJS.ErrnoException).code}`,
    );
  }
}

/** The relay URL if it is a ws:// or wss:// URL, else a usage error naming PTYRELAY_URL. */
export function checkRelayUrl(url: string): string {
  const protocol = URL.canParse(url) ? new URL(url).protocol : undefined;
  if (protocol !== 'ws:' && protocol !== 'wss:') {
    throw usageError(`PTYRELAY_URL must be a ws:// or wss:// URL (e.g. ${DEFAULT_RELAY_URL}), got ${url}`);
  }
  return url;
}

/** The relay URL, token, client id and CA from the environment (PTYRELAY_URL, PTYRELAY_TOKEN, the token file, PTYRELAY_CA). */
export function relayEnv(env: NodeJS.ProcessEnv = process.env): {
  url: string;
  token: string;
  clientId: string;
  ca?: Buffer;
} {
  const url = checkRelayUrl(env.PTYRELAY_URL || DEFAULT_RELAY_URL);
  const clientId = env.PTYRELAY_CLIENT_ID || DEFAULT_CLI_CLIENT_ID;
  const ca = caOf(env);
  const fromEnv = env.PTYRELAY_TOKEN?.trim();
  if (fromEnv) return { url, token: fromEnv, clientId, ...ca };
  const path = defaultTokenPath(env);
  try {
    return { url, token: readFileSync(path, 'utf8').trim(), clientId, ...ca };
  } catch {
    throw new PtyRelayError(
      'AUTH_FAILED',
      `no token: set PTYRELAY_TOKEN, or start the relay (ptyrelay serve) so it creates ${path}`,
    );
  }
}

/** Human text of a link state, e.g. `reconnecting (attempt 2, next in 500 ms)`. */
export function describeLink(s: LinkState): string {
  switch (s.state) {
    case 'reconnecting':
      return `reconnecting (attempt ${s.attempt}, next in ${s.nextInMs} ms${s.lastError ? `: ${s.lastError}` : ''})`;
    case 'lost':
      return `lost: ${s.reason}`;
    case 'deploy-failed': {
      const inS = Math.max(0, Math.ceil((s.nextAttemptAt - Date.now()) / 1000));
      const at = new Date(s.nextAttemptAt).toISOString();
      return `deploy-failed (${s.code}, attempt ${s.attempts}): ${s.reason}; next attempt in ${inS} s (${at})`;
    }
    default:
      return s.state;
  }
}

/** Writes a progress line on stderr (never on stdout, which carries results). */
export function progress(msg: string): void {
  process.stderr.write(`ptyrelay: ${msg}\n`);
}

/** Upload progress is printed at most this often; every other step is printed as it happens. */
const UPLOAD_PRINT_MS = 500;

/** Prints the relay's steps toward a host (connect, probe, upload…, done) as progress lines. */
export function hostProgressPrinter(print: (msg: string) => void = progress): (p: HostProgress) => void {
  let lastUpload = 0;
  return (p) => {
    if (p.step === 'upload') {
      const now = Date.now();
      const last = p.bytes !== undefined && p.bytes === p.totalBytes;
      if (!last && now - lastUpload < UPLOAD_PRINT_MS) return;
      lastUpload = now;
    }
    print(`host ${p.host}: ${p.message}`);
  };
}

/**
 * A RelayClient for one CLI run, connected. Progress (slow connect, retries, the relay's links to
 * hosts coming up) goes to stderr unless `quiet`. One-shot commands give up after a few attempts.
 */
export async function connectRelay(
  opts: { quiet?: boolean; connectAttempts?: number } & Partial<RelayClientOptions> = {},
): Promise<RelayClient> {
  const env = relayEnv();
  const { quiet, connectAttempts = 4, ...rest } = opts;
  // Loaded here, not at the top: `ptyrelay serve` imports this file and never needs the client (nor ws).
  const { RelayClient } = await import('../../provider/client/relay-client.js');
  const client = new RelayClient({
    ...env,
    reconnect: { connectAttempts, steps: [100, 250, 500, 1000] },
    ...rest,
  });
  const slow = setTimeout(() => {
    if (!quiet) progress(`connecting to ${env.url}…`);
  }, 300);
  const offLink = client.onLinkState((e) => {
    if (quiet) return;
    if (e.host === 'relay' && e.state.state === 'reconnecting') progress(`relay ${describeLink(e.state)}`);
    else if (e.host !== 'relay') progress(`host ${e.host}: ${describeLink(e.state)}`);
  });
  const offProgress = quiet ? () => {} : client.onHostProgress(hostProgressPrinter());
  const off = () => {
    offLink();
    offProgress();
  };
  try {
    await client.connect();
    return client;
  } catch (err) {
    await client.dispose();
    if (isPtyRelayError(err, 'CONNECT_FAILED')) {
      throw new PtyRelayError(
        'CONNECT_FAILED',
        `${err.message} (is \`ptyrelay serve\` running? PTYRELAY_URL)`,
      );
    }
    throw err;
  } finally {
    clearTimeout(slow);
    // Host progress stays on for the command (e.g. `open` on an SSH host that is deploying).
    if (quiet) off();
  }
}

/**
 * Runs `fn` against a terminal; a terminal this relay has not published yet (spawned before it
 * started) is adopted with attach+detach first.
 */
export async function withAdoption<T>(client: RelayClient, id: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (!isPtyRelayError(err, 'NOT_FOUND') || !/attach to adopt/.test(err.message)) throw err;
    await client.attach(id);
    await client.detach(id);
    return fn();
  }
}
