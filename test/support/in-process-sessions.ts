import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { resolveHistoryLimits } from '../../agent-stub/history/history-limits.js';
import { HistoryStore } from '../../agent-stub/history/history-store.js';
import type { PtySession, SessionLimits } from '../../agent-stub/session/pty-session.js';
import { ScreenModelHost } from '../../agent-stub/session/screen-model.js';
import { SessionRegistry } from '../../agent-stub/session/session-registry.js';
import { stubBundlePath } from '../../relay/core/stub-bundle.js';

/** The model worker's bundle as a file (`npm run build` writes it beside the stub bundle). */
export function modelWorkerFile(): { file: string } {
  return { file: join(dirname(stubBundlePath()), 'model-worker.cjs') };
}

export interface InProcessSessions {
  /** A real bash in a real PTY, owned by the daemon's session code in this process. */
  spawnBash(): PtySession;
}

/**
 * The daemon's session registry and screen model in the test's own process (for the stub's
 * readiness code, which needs no link), with a throwaway HOME whose `.bashrc` is `bashrc`.
 * Registers the describe block's beforeAll/afterAll: everything is shut down and removed after.
 */
export function inProcessSessions(prefix: string, bashrc: string): InProcessSessions {
  let root: string;
  let model: ScreenModelHost;
  let registry: SessionRegistry;
  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), prefix));
    mkdirSync(join(root, 'home'));
    writeFileSync(join(root, 'home', '.bashrc'), bashrc);
    model = new ScreenModelHost(modelWorkerFile());
    const limits = { ringBytes: 1 << 20, scrollbackRows: 1000, creditWindow: 256 * 1024 };
    registry = new SessionRegistry(model, limits, join(root, 'shell'));
  });
  afterAll(async () => {
    await registry?.shutdownAll();
    await model?.dispose();
    if (root) rmSync(root, { recursive: true, force: true });
  });
  return {
    spawnBash() {
      const home = join(root, 'home');
      return registry.spawn({ cols: 120, rows: 30, command: 'bash', cwd: home, env: { HOME: home } }).session;
    },
  };
}

export interface LoggedSessions {
  readonly model: ScreenModelHost;
  readonly registry: SessionRegistry;
}

/**
 * The daemon's session registry, screen model and output logs (a HistoryStore in a throwaway
 * state dir) in the test's own process. Registers the describe block's beforeAll/afterAll:
 * everything is shut down and removed after.
 */
export function inProcessLoggedSessions(prefix: string, limits: SessionLimits): LoggedSessions {
  let root: string;
  let history: HistoryStore;
  const env = {} as { model: ScreenModelHost; registry: SessionRegistry };
  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), prefix));
    mkdirSync(join(root, 'state'));
    env.model = new ScreenModelHost(modelWorkerFile());
    history = new HistoryStore(join(root, 'state'), resolveHistoryLimits({}), () => {});
    env.registry = new SessionRegistry(env.model, limits, join(root, 'shell'), () => {}, undefined, history);
  });
  afterAll(async () => {
    await env.registry?.shutdownAll();
    await env.model?.dispose();
    history?.dispose();
    if (root) rmSync(root, { recursive: true, force: true });
  });
  return env;
}
