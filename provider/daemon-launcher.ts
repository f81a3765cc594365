import { spawn } from 'node:child_process';
import { mkdirSync, openSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { daemonLogPath, daemonSocketPath } from './stub-paths.js';

/** How long a freshly started daemon may take to accept connections. */
const START_TIMEOUT_MS = 10_000;
const POLL_MS = 50;

function tryConnect(path: string): Promise<Socket | undefined> {
  return new Promise((resolve) => {
    const s = connect(path);
    s.once('connect', () => {
      s.removeAllListeners('error');
      resolve(s);
    });
    s.once('error', () => resolve(undefined));
  });
}

/**
 * Connects to the user's daemon, starting it detached (own session, stdio to its log file) when
 * none answers. Used by `stub.js connect` and by the local provider.
 */
export async function connectOrStartDaemon(
  stubFile: string,
  runtimeDir: string,
  extraArgs: string[] = [],
  nodePath = process.execPath,
): Promise<Socket> {
  const socketPath = daemonSocketPath(runtimeDir);
  const first = await tryConnect(socketPath);
  if (first) return first;
  mkdirSync(runtimeDir, { recursive: true, mode: 0o700 });
  const logFd = openSync(daemonLogPath(runtimeDir), 'a', 0o600);
  const child = spawn(nodePath, [stubFile, 'daemon', '--runtime-dir', runtimeDir, ...extraArgs], {
    detached: true,
    stdio: ['ignore', logFd, logFd],
    env: process.env,
  });
  child.unref();
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, POLL_MS));
    const s = await tryConnect(socketPath);
    if (s) return s;
  }
  throw new Error(`daemon did not start within ${START_TIMEOUT_MS} ms (log: ${daemonLogPath(runtimeDir)})`);
}
