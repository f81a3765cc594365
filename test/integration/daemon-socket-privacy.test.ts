import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { daemonSocketPath } from '../../provider/daemon-runtime/stub-paths.js';
import { isPtyRelayError, type PtyRelayError } from '../../provider/errors.js';
import { stubBuildId, stubBundlePath } from '../../relay/core/stub-bundle.js';
import { LocalPtyProvider } from '../../relay/local/local-pty-provider.js';
import { type LocalFixture, startLocal } from '../support/local-daemon.js';
import {
  createShellUser,
  removeShellUser,
  type ShellUser,
  shellUsersAvailable,
} from '../support/shell-users.js';

/** Users this file creates start with this (issue 18's tests). */
const T18_USER_PREFIX = 'ptyrelay-t18-';
const CONNECT_PROBE = `const s = require('node:net').connect(process.argv[1]);
s.on('connect', () => { process.stdout.write('connected'); s.destroy(); });
s.on('error', (e) => process.stdout.write(e.code));`;

let root: string;
beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'ptr-private-'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

async function refusal(runtimeDir: string): Promise<PtyRelayError> {
  const p = new LocalPtyProvider({ runtimeDir });
  try {
    await p.daemonInfo();
    throw new Error('the daemon was reached');
  } catch (err) {
    if (!isPtyRelayError(err)) throw err;
    return err;
  } finally {
    await p.dispose();
  }
}

describe("the daemon's runtime dir and socket", () => {
  it('a runtime dir others can read is refused with the fix; no daemon starts there', async () => {
    const dir = join(root, 'open');
    mkdirSync(dir, { mode: 0o700 });
    chmodSync(dir, 0o755);
    const err = await refusal(dir);
    expect(err.code).toBe('DIR_INSECURE');
    expect(err.message).toContain(`chmod 700 ${dir}`);
    expect(err.details).toMatchObject({ dir, kind: 'runtime', fix: `chmod 700 ${dir}` });
    expect(readdirSync(dir)).toEqual([]);
  });

  it('the daemon itself refuses such a dir (started by hand) and never listens', () => {
    const dir = join(root, 'by-hand');
    mkdirSync(dir, { mode: 0o700 });
    chmodSync(dir, 0o750);
    const r = spawnSync(process.execPath, [stubBundlePath(), 'daemon', '--runtime-dir', dir], {
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('DIR_INSECURE');
    expect(existsSync(daemonSocketPath(dir, stubBuildId()))).toBe(false);
  });

  it('a dir above it that others may write (no sticky bit) is refused', async () => {
    const shared = join(root, 'shared');
    mkdirSync(shared, { mode: 0o700 });
    chmodSync(shared, 0o777);
    const err = await refusal(join(shared, 'run'));
    expect(err.code).toBe('DIR_INSECURE');
    expect(err.message).toContain(`chmod go-w ${shared}`);
    chmodSync(shared, 0o1777); // sticky, like /tmp: others cannot replace our entries
    const p = new LocalPtyProvider({ runtimeDir: join(shared, 'run') });
    try {
      expect((await p.daemonInfo()).pid).toBeGreaterThan(0);
      await p.shutdownDaemon();
    } finally {
      await p.dispose();
    }
  });

  describe.skipIf(!shellUsersAvailable(['/bin/sh']).ok)('another uid', () => {
    let other: ShellUser;
    let fx: LocalFixture;
    beforeAll(async () => {
      other = createShellUser('sock', '/bin/sh', {}, T18_USER_PREFIX);
      fx = await startLocal();
    });
    afterAll(async () => {
      await fx?.cleanup();
      if (other) await removeShellUser(other);
    });

    /** Connects to `socket` as the other user; resolves with `connected` or the errno. */
    function connectAs(socket: string): Promise<string> {
      const child = spawn(process.execPath, ['-e', CONNECT_PROBE, socket], {
        uid: other.uid,
        gid: other.gid,
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      let out = '';
      child.stdout.on('data', (d) => (out += d));
      return new Promise((resolve) => child.on('close', () => resolve(out)));
    }

    it('gets EACCES on the socket: the dir is 0700, and the socket 0600 behind it', async () => {
      const socket = daemonSocketPath(fx.runtimeDir, stubBuildId());
      expect(await connectAs(socket)).toBe('EACCES');
      // Even with the dir opened for traversal, the socket's own mode refuses them…
      chmodSync(fx.runtimeDir, 0o711);
      try {
        expect(await connectAs(socket)).toBe('EACCES');
        // …and our own side now refuses to use the dir at all.
        expect((await refusal(fx.runtimeDir)).code).toBe('DIR_INSECURE');
      } finally {
        chmodSync(fx.runtimeDir, 0o700);
      }
    });

    it("a runtime dir owned by another uid is refused (it could hold that user's socket)", async () => {
      const dir = join(root, 'theirs');
      mkdirSync(dir, { mode: 0o700 });
      chownSync(dir, other.uid, other.gid);
      const err = await refusal(dir);
      expect(err.code).toBe('DIR_INSECURE');
      expect(err.message).toContain(`owned by uid ${other.uid}`);
    });
  });
});
