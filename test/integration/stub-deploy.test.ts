import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from 'ssh2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isPtyRelayError, PtyRelayError } from '../../provider/errors.js';
import { STUB_PROTOCOL_VERSION } from '../../provider/wire/messages.js';
import { stubBuildId } from '../../relay/core/stub-bundle.js';
import { remoteExec } from '../../relay/deploy/remote-exec.js';
import { shellQuote } from '../../relay/deploy/shell-quote.js';
import { collectStubArtifacts, type StubPlatform } from '../../relay/deploy/stub-artifacts.js';
import { type DeployProgress, type DeployResult, StubDeployer } from '../../relay/deploy/stub-deployer.js';
import { allOf, rootAvailable } from '../support/capabilities.js';
import {
  connectTo,
  DEPLOY_TEST_USER,
  ensureNoNodeUser,
  FAKE_NVM_DIR,
  NO_NODE_SSHD_CONFIG,
  NO_NODE_USER,
} from '../support/deploy-hosts.js';
import { type SshdInstance, sshdAvailable, startSshd } from '../support/sshd.js';

const available = sshdAvailable();
const isRoot = process.getuid?.() === 0;
/** The NODE_MISSING suite logs in as a user of its own: creating one needs root. */
const noNodeHost = allOf(available, rootAvailable('the NODE_MISSING test (a login user without node)'));
const LOCAL_PLATFORM = `${process.platform}-${process.arch}` as StubPlatform;
/** Fake stub dirs for GC: one with nothing running, one with a "daemon", one used a moment ago. */
const FAKE_DEAD = 'stub-0.0.0-deadbeef0000';
const FAKE_RUNNING = 'stub-0.0.0-cafebabe0000';
const FAKE_RECENT = 'stub-0.0.0-f00df00df00d';
/** Older than the deployer's GC grace and lock staleness. */
const LONG_AGO = '2 hours ago';

interface Deployed {
  result: DeployResult;
  events: DeployProgress[];
  warnings: string[];
  ms: number;
}

async function deployOn(conn: Client): Promise<Deployed> {
  const events: DeployProgress[] = [];
  const warnings: string[] = [];
  const t0 = performance.now();
  const result = await new StubDeployer(conn, {
    onProgress: (p) => events.push(p),
    log: { info: () => {}, warn: (_o, msg) => warnings.push(msg ?? '') },
  }).deploy();
  return { result, events, warnings, ms: Math.round(performance.now() - t0) };
}

/** Runs `fn` while recording the commands `conn` executes on the host. */
async function countingExecs<T>(conn: Client, fn: () => Promise<T>): Promise<{ value: T; execs: string[] }> {
  const execs: string[] = [];
  const original = conn.exec;
  const counting = function (this: Client, command: string, ...rest: unknown[]) {
    execs.push(command);
    return Reflect.apply(original, this, [command, ...rest]);
  };
  conn.exec = counting as unknown as Client['exec'];
  try {
    return { value: await fn(), execs };
  } finally {
    conn.exec = original;
  }
}

async function sh(conn: Client, command: string, stdin?: string): Promise<string> {
  const r = await remoteExec(conn, command, { timeoutMs: 20_000, stdin });
  if (r.code !== 0) throw new Error(`${command} exited ${r.code}: ${r.stderr}`);
  return r.stdout;
}

describe.skipIf(!available)('StubDeployer against a real sshd', () => {
  let sshd: SshdInstance;
  let conn: Client;
  let base: string;
  const figures: Record<string, number> = {};

  beforeAll(async () => {
    // Root gets a user of its own so parallel test files deploying to ptyrelay-test do not interfere.
    sshd = await startSshd(isRoot ? { user: DEPLOY_TEST_USER } : {});
    conn = await connectTo(sshd);
    base = `${sshd.userHome}/.cache/ptyrelay`;
    const a = collectStubArtifacts(LOCAL_PLATFORM);
    await sh(conn, `rm -rf ${shellQuote(`${base}/${a.dirName}`)} ${shellQuote(`${base}/install.lock`)}`);
  });

  afterAll(async () => {
    if (conn) {
      const mine = isRoot ? [base] : [`${base}/${collectStubArtifacts(LOCAL_PLATFORM).dirName}`];
      const fakes = [FAKE_DEAD, FAKE_RUNNING, FAKE_RECENT].map((d) => `${base}/${d}`);
      await sh(conn, `rm -rf ${[...mine, ...fakes, `${base}/install.lock`].map(shellQuote).join(' ')}`);
      conn.end();
    }
    await sshd?.stop();
    console.log('stub deploy figures (ms / bytes):', figures);
  });

  it('uploads the stub on first deploy, with progress, and it runs', async () => {
    const { value: deployed, execs } = await countingExecs(conn, () => deployOn(conn));
    const { result, events, ms } = deployed;
    const a = collectStubArtifacts(LOCAL_PLATFORM);
    figures.firstDeployMs = ms;
    figures.sftpRemoteCommands = execs.length;
    expect(result.method).toBe('sftp');
    expect(new Set(execs)).toEqual(new Set(['/bin/sh -s']));
    figures.bytesUploaded = result.bytesUploaded;
    expect(result.uploaded).toBe(true);
    expect(result.bytesUploaded).toBe(a.totalBytes);
    expect(result.installDir).toBe(`${base}/${a.dirName}`);
    expect(result.stubPath).toBe(`${result.installDir}/stub.cjs`);
    expect(result.buildId).toBe(stubBuildId());
    expect(result.nodeVersion).toMatch(/^v\d+\./);
    const steps = new Set(events.map((e) => e.step));
    for (const s of ['probe', 'check', 'lock', 'upload', 'verify', 'install', 'done'])
      expect(steps).toContain(s);
    const uploads = events.filter((e) => e.step === 'upload' && e.file);
    expect(uploads.at(-1)?.bytes).toBe(a.totalBytes);
    expect(uploads.some((e) => e.file?.endsWith('pty.node') && e.fileBytes === e.fileTotalBytes)).toBe(true);
    expect(await sh(conn, `test -f ${shellQuote(`${result.installDir}/.complete`)} && echo yes`)).toContain(
      'yes',
    );

    // node-pty loads from the install dir and runs a PTY on the host's own node.
    const pty = await sh(
      conn,
      `${shellQuote(result.nodePath)} -`,
      `const pty = require(${JSON.stringify(`${result.installDir}/node_modules/node-pty`)});
       const p = pty.spawn('/bin/echo', ['pty', 'ok'], { cols: 80, rows: 24 });
       let out = '';
       p.onData((d) => { out += d; });
       p.onExit((e) => { console.log(JSON.stringify({ out, code: e.exitCode })); });`,
    );
    expect(JSON.parse(pty.trim().split('\n').pop()!)).toEqual({ out: 'pty ok\r\n', code: 0 });

    // The daemon starts from the install dir and exits when idle.
    const runtime = join(tmpdir(), `ptyrelay-deploy-run-${process.pid}`);
    const daemon = await remoteExec(
      conn,
      `${shellQuote(result.nodePath)} ${shellQuote(result.stubPath)} daemon --runtime-dir ${runtime} --idle-exit-ms 1000; rm -rf ${runtime}`,
      { timeoutMs: 20_000 },
    );
    expect(daemon.stdout, daemon.stderr).toContain('daemon listening');
    expect(daemon.stdout).toContain(result.buildId);
  });

  it('installs over exec channels just the same, every remote command being /bin/sh -s', async () => {
    const a = collectStubArtifacts(LOCAL_PLATFORM);
    await sh(conn, `rm -rf ${shellQuote(`${base}/${a.dirName}`)}`);
    const t0 = performance.now();
    const { value: r, execs } = await countingExecs(conn, () =>
      new StubDeployer(conn, { uploadMethod: 'exec' }).deploy(),
    );
    figures.execDeployMs = Math.round(performance.now() - t0);
    figures.execRemoteCommands = execs.length;
    expect(r.method).toBe('exec');
    expect(r.uploaded).toBe(true);
    expect(r.bytesUploaded).toBe(a.totalBytes);
    expect(new Set(execs)).toEqual(new Set(['/bin/sh -s']));
    // Same layout and manifest as an SFTP install: the next deploy finds it intact.
    const again = await deployOn(conn);
    expect(again.result.uploaded).toBe(false);
    expect(await sh(conn, `ls -A ${shellQuote(base)}`)).not.toMatch(/\.(tmp|old)-|install\.lock/);
  });

  it('uploads nothing on the second deploy', async () => {
    const { result, events, ms } = await deployOn(conn);
    figures.secondDeployMs = ms;
    expect(result.uploaded).toBe(false);
    expect(result.bytesUploaded).toBe(0);
    expect(events.some((e) => e.step === 'upload' || e.step === 'lock')).toBe(false);
  });

  it('settles a deploy of an intact install, daemon included, in one remote command', async () => {
    const runtimeDir = `${sshd.userHome}/.cache/ptyrelay/run-first-contact`;
    try {
      const t0 = performance.now();
      const { value: result, execs } = await countingExecs(conn, () =>
        new StubDeployer(conn, {
          ensureDaemon: ['--runtime-dir', runtimeDir, '--idle-exit-ms', '60000'],
        }).deploy(),
      );
      figures.firstContactWithDaemonMs = Math.round(performance.now() - t0);
      expect(execs).toEqual(['/bin/sh -s']);
      expect(result.uploaded).toBe(false);
      const socket = `${runtimeDir}/stub-v${STUB_PROTOCOL_VERSION}-${stubBuildId()}.sock`;
      expect(result.daemon).toEqual({ socketPath: socket, legacy: [] });
      // The daemon it reports answers on that socket.
      const probe = `require('net').connect(process.argv[1]).on('connect', () => { console.log('up'); process.exit(0); })`;
      expect(await sh(conn, `node -e ${shellQuote(probe)} ${shellQuote(socket)}`)).toBe('up\n');
      // Without ensureDaemon nothing is started, and an intact install still takes one command.
      const plain = await countingExecs(conn, () => new StubDeployer(conn).deploy());
      expect(plain.execs).toHaveLength(1);
      expect(plain.value.daemon).toBeUndefined();
    } finally {
      // `[-]-` so the pattern does not match this very shell's command line.
      await sh(
        conn,
        `pkill -f -- ${shellQuote(`[-]-runtime-dir ${runtimeDir}`)}; rm -rf ${shellQuote(runtimeDir)}`,
      );
    }
  });

  it('replaces a tampered install, which then verifies', async () => {
    const first = await deployOn(conn);
    await sh(conn, `printf x >> ${shellQuote(first.result.stubPath)}`);
    const fixed = await deployOn(conn);
    figures.reinstallMs = fixed.ms;
    expect(fixed.result.uploaded).toBe(true);
    expect(fixed.warnings).toContain('stub install damaged; reinstalling');
    const again = await deployOn(conn);
    expect(again.result.uploaded).toBe(false);
    // The replaced dir was moved aside and collected.
    expect(await sh(conn, `ls -A ${shellQuote(base)}`)).not.toMatch(/\.(old|tmp)-/);
  });

  it('uploads once when two relays deploy at the same time', async () => {
    const installDir = (await deployOn(conn)).result.installDir;
    const lock = `${base}/install.lock`;
    // A third party holds the lock until both relays wait for it: without it, one relay could
    // finish before the other even looked, and the race this test is about would not happen.
    await sh(
      conn,
      `rm -rf ${shellQuote(installDir)} && mkdir ${shellQuote(lock)} && cat > ${shellQuote(`${lock}/owner`)}`,
      '{"token":"third-party","relayPid":1}',
    );
    const other = await connectTo(sshd);
    try {
      const [ea, eb]: DeployProgress[][] = [[], []];
      const run = (c: Client, events: DeployProgress[]) =>
        new StubDeployer(c, { onProgress: (p) => events.push(p) }).deploy();
      const pending = Promise.all([run(conn, ea), run(other, eb)]);
      const waiting = (ev: DeployProgress[]) =>
        ev.some((e) => e.step === 'lock' && /waiting/.test(e.message));
      const deadline = Date.now() + 20_000;
      while (!(waiting(ea) && waiting(eb)) && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 50));
      expect([waiting(ea), waiting(eb)]).toEqual([true, true]);
      await sh(conn, `rm -rf ${shellQuote(lock)}`);
      const [a, b] = await pending;
      expect([a.uploaded, b.uploaded].sort()).toEqual([false, true]);
      expect(a.installDir).toBe(b.installDir);
      const second = a.uploaded ? eb : ea;
      expect(second.some((e) => e.step === 'upload')).toBe(false);
      expect(second.some((e) => e.step === 'check' && /installed it meanwhile/.test(e.message))).toBe(true);
    } finally {
      other.end();
    }
  });

  it('waits for a live lock and takes over a stale one', async () => {
    const lock = `${base}/install.lock`;
    const installDir = (await deployOn(conn)).result.installDir;
    const owner = '{"token":"someone-else","relayPid":1}';
    // A live lock: the deploy waits until its owner lets go.
    await sh(
      conn,
      `rm -rf ${shellQuote(installDir)} && mkdir ${shellQuote(lock)} && cat > ${shellQuote(`${lock}/owner`)}`,
      owner,
    );
    // Released only once the deploy says it waits (a fixed delay raced a slow probe under load).
    const live: DeployProgress[] = [];
    const t0 = performance.now();
    const pending = new StubDeployer(conn, { onProgress: (p) => live.push(p) }).deploy();
    const waiting = () => live.some((e) => e.step === 'lock' && e.message.includes('someone-else'));
    const deadline = Date.now() + 20_000;
    while (!waiting() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(waiting()).toBe(true);
    await new Promise((r) => setTimeout(r, 1000));
    expect(live.some((e) => e.step === 'upload')).toBe(false); // still held back
    await sh(conn, `rm -rf ${shellQuote(lock)}`);
    const waited = await pending;
    expect(waited.uploaded).toBe(true);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(1000);

    // A lock whose owner stopped refreshing it long ago is broken.
    await sh(
      conn,
      `rm -rf ${shellQuote(installDir)} && mkdir ${shellQuote(lock)} && cat > ${shellQuote(`${lock}/owner`)} && touch -d ${shellQuote(LONG_AGO)} ${shellQuote(`${lock}/owner`)} ${shellQuote(lock)}`,
      owner,
    );
    const stale = await deployOn(conn);
    expect(stale.result.uploaded).toBe(true);
    expect(stale.ms).toBeLessThan(10_000);
    expect(stale.warnings).toContain('took over a stale install lock');
    expect(await sh(conn, `ls -A ${shellQuote(base)}`)).not.toMatch(/install\.lock/);
  });

  it('collects old stub dirs unless a daemon runs from them or they were just used', async () => {
    const dirs = [FAKE_DEAD, FAKE_RUNNING, FAKE_RECENT].map((d) => `${base}/${d}`);
    const setup = dirs.map((d) => `mkdir -p ${shellQuote(d)} && touch ${shellQuote(`${d}/.complete`)}`);
    const old = dirs.slice(0, 2).flatMap((d) => [d, `${d}/.complete`]);
    await sh(
      conn,
      [...setup, `touch -d ${shellQuote(LONG_AGO)} ${old.map(shellQuote).join(' ')}`].join(' && '),
    );
    // Same argv shape as a daemon: node <dir>/stub.cjs daemon ...
    const fake = `node -e 'setTimeout(() => {}, 30000)' ${shellQuote(`${dirs[1]}/stub.cjs`)} daemon`;
    const pid = (await sh(conn, `${fake} </dev/null >/dev/null 2>&1 & echo $!`)).trim();
    try {
      const { result, events } = await deployOn(conn);
      expect(result.uploaded).toBe(false);
      const listing = await sh(conn, `ls -A ${shellQuote(base)}`);
      expect(listing).not.toContain(FAKE_DEAD);
      expect(listing).toContain(FAKE_RUNNING);
      expect(listing).toContain(FAKE_RECENT);
      expect(listing).toContain(result.installDir.split('/').pop());
      const gc = events.find((e) => e.step === 'gc');
      expect(gc?.message).toMatch(/removed 1 old stub dir.*in use.*recently used/);
    } finally {
      await sh(conn, `kill ${pid} 2>/dev/null || true`);
    }
  });

  it('fails with DEPLOY_FAILED and the stderr tail when a remote step fails', async () => {
    // A file where the cache dir belongs: the host-side helper cannot create the install dir.
    const aside = `${base}.aside`;
    await sh(conn, `mv ${shellQuote(base)} ${shellQuote(aside)} && touch ${shellQuote(base)}`);
    try {
      const err = await new StubDeployer(conn).deploy().catch((e: unknown) => e);
      expect(isPtyRelayError(err, 'DEPLOY_FAILED'), String(err)).toBe(true);
      const stderr = String((err as { details: { stderr: string } }).details.stderr);
      expect(stderr).toMatch(/EEXIST|ENOTDIR/);
      expect(stderr.length).toBeLessThanOrEqual(2048);
    } finally {
      await sh(conn, `rm -f ${shellQuote(base)} && mv ${shellQuote(aside)} ${shellQuote(base)}`);
    }
  });

  it('reports UNSUPPORTED_PLATFORM with the uname when no binary fits the host', async () => {
    const artifacts = (): never => {
      throw new PtyRelayError('UNSUPPORTED_PLATFORM', 'no node-pty binary');
    };
    const err = await new StubDeployer(conn, { artifacts }).deploy().catch((e: unknown) => e);
    expect(isPtyRelayError(err, 'UNSUPPORTED_PLATFORM')).toBe(true);
    expect((err as { details: { uname: string } }).details.uname).toMatch(/^Linux (x86_64|aarch64)$/);
  });

  it('reports NODE_TOO_OLD with the version it found', async () => {
    const err = await new StubDeployer(conn, { minNodeMajor: 99 }).deploy().catch((e: unknown) => e);
    expect(isPtyRelayError(err, 'NODE_TOO_OLD')).toBe(true);
    expect((err as { details: { version: string } }).details.version).toMatch(/^v\d+\./);
  });
});

describe.skipIf(!noNodeHost)('StubDeployer on a host without node', () => {
  let sshd: SshdInstance;
  let conn: Client;

  beforeAll(async () => {
    ensureNoNodeUser();
    sshd = await startSshd({ user: NO_NODE_USER, extraConfig: NO_NODE_SSHD_CONFIG });
    conn = await connectTo(sshd);
  });

  afterAll(async () => {
    if (conn) {
      await sh(conn, `/bin/rm -rf "$HOME/.cache/ptyrelay" "$HOME/${FAKE_NVM_DIR}" "$HOME/.bashrc"`);
      conn.end();
    }
    await sshd?.stop();
  });

  it('fails with NODE_MISSING and says how to fix it', async () => {
    expect(await sh(conn, 'echo "$PATH"')).toBe('/nonexistent\n');
    const err = await new StubDeployer(conn).deploy().catch((e: unknown) => e);
    expect(isPtyRelayError(err, 'NODE_MISSING'), String(err)).toBe(true);
    expect((err as Error).message).toMatch(/Install Node\.js >= 18/);
  });

  it('finds a node that only .bashrc puts on PATH, as nvm does', async () => {
    const bin = `$HOME/${FAKE_NVM_DIR}/bin`;
    await sh(
      conn,
      `/bin/mkdir -p "${bin}" && /bin/ln -sf /usr/bin/node "${bin}/node" && ` +
        `echo 'export PATH="${bin}:$PATH"' > "$HOME/.bashrc"`,
    );
    const { result, events } = await deployOn(conn);
    expect(result.uploaded).toBe(true);
    expect(result.nodePath).not.toContain(FAKE_NVM_DIR); // The binary itself, not the shim.
    expect(events.some((e) => e.step === 'probe' && e.message.includes('via bash-interactive'))).toBe(true);
  });
});
