/**
 * The stdio provider on the host side (agent-stub/lsp/): a real typescript-language-server (a
 * devDependency) behind the seam — definition, references with the declaration, hover,
 * implementation, a symbol after an emoji both ways, a server killed mid-session; and a recorder
 * server written for the test for what reality cannot produce on demand: a cancel and a deadline
 * becoming `$/cancelRequest`, a crash with a stderr line. Then the stub bundle itself on Node 18,
 * running the language server on Node 18.
 */
import { existsSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LspService } from '../../agent-stub/lsp/lsp-service.js';
import { connectOrStartDaemon } from '../../provider/daemon-runtime/daemon-launcher.js';
import { isPtyRelayError, type PtyRelayError } from '../../provider/errors.js';
import type { LspQuery, LspQueryResult } from '../../provider/lsp-seam.js';
import type { LspHostConfig } from '../../provider/wire/lsp-messages.js';
import { stubBuildId, stubBundlePath } from '../../relay/core/stub-bundle.js';
import { StubClient } from '../../relay/stub-link/stub-client.js';
import { capability } from '../support/capabilities.js';
import { killDaemonsOf } from '../support/daemon-reaper.js';
import { waitFor } from '../support/local-daemon.js';
import {
  createLspProject,
  hostConfig,
  type LspProject,
  MAIN_TS,
  positionOf,
  recorderConfig,
  SHAPES_TS,
  TSLS_CLI,
  tslsConfig,
} from '../support/lsp-fixtures.js';
import { missingNodeBuilds, nodeBuilds } from '../support/node-builds.js';

/** A query in the seam's coordinates from a 1-based position (the test's own flip). */
function at(
  project: LspProject,
  operation: LspQuery['operation'],
  file: string,
  word: string,
  nth = 1,
): LspQuery {
  const text = file.endsWith('main.ts') ? MAIN_TS : SHAPES_TS;
  const p = positionOf(text, word, nth);
  return {
    operation,
    filePath: file,
    position: { line: p.line - 1, character: p.column - 1 },
    workspaceRoot: project.root,
  };
}

/** `path:line:col` (1-based) of each location, the path relative to the resolved workspace. */
function spots(r: LspQueryResult): string[] {
  if (r.kind !== 'locations') throw new Error(`expected locations, got ${r.kind}`);
  const root = r.resolvedWorkspaceUri;
  return r.locations.map(
    (l) => `${l.uri.slice(root.length + 1)}:${l.range.start.line + 1}:${l.range.start.character + 1}`,
  );
}

/** 1-based spot of `word` in a source file of the project. */
function spot(file: 'src/shapes.ts' | 'src/main.ts', word: string, nth = 1): string {
  const p = positionOf(file === 'src/main.ts' ? MAIN_TS : SHAPES_TS, word, nth);
  return `${file}:${p.line}:${p.column}`;
}

/** Pids of language servers whose cwd is `root` (each test's project has its own). */
function serversIn(root: string, script: string): number[] {
  return readdirSync('/proc')
    .filter((n) => /^\d+$/.test(n))
    .filter((n) => {
      try {
        return (
          readlinkSync(`/proc/${n}/cwd`) === root &&
          readFileSync(`/proc/${n}/cmdline`, 'utf8').includes(script)
        );
      } catch {
        return false;
      }
    })
    .map(Number);
}

const gone = (pid: number) =>
  !existsSync(`/proc/${pid}`) || /\) [ZX] /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));

async function failure(p: Promise<unknown>): Promise<PtyRelayError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!isPtyRelayError(err)) throw new Error(`expected a PtyRelayError, got ${String(err)}`);
  return err;
}

describe('a real typescript-language-server behind the seam', { timeout: 120_000 }, () => {
  let project: LspProject;
  let service: LspService;
  let config: LspHostConfig;
  let n = 0;
  const query = (q: LspQuery) => service.query({ queryId: `q${++n}`, query: q, config });

  beforeAll(() => {
    project = createLspProject();
    service = new LspService();
    config = hostConfig([tslsConfig(), { type: 'markdown-notes', id: 'markdown-notes' }]);
  });
  afterAll(async () => {
    await service?.dispose();
    project?.cleanup();
  });

  it('finds the definition, in 0-based UTF-16 positions, and the workspace it resolved', async () => {
    const r = await query(at(project, 'goToDefinition', 'src/main.ts', 'greet', 2));
    expect(r).toMatchObject({ kind: 'locations', resolvedWorkspaceUri: pathToFileURL(project.root).href });
    expect(spots(r)).toEqual([spot('src/shapes.ts', 'greet')]);
  });

  it('finds the references, the declaration always among them', async () => {
    const r = spots(await query(at(project, 'findReferences', 'src/main.ts', 'greet', 2)));
    expect(r).toContain(spot('src/shapes.ts', 'greet'));
    expect(r).toEqual(
      expect.arrayContaining([
        spot('src/main.ts', 'greet'),
        spot('src/main.ts', 'greet', 2),
        spot('src/main.ts', 'greet', 3),
      ]),
    );
    expect(r).toHaveLength(4);
  });

  it('lands on the right column after an emoji on the line, both ways (UTF-16 units)', async () => {
    // In: greet after '😀' on main.ts line 5; a code-point column would ask one unit too early.
    const fromEmojiLine = await query(at(project, 'goToDefinition', 'src/main.ts', 'greet', 3));
    expect(spots(fromEmojiLine)).toEqual([spot('src/shapes.ts', 'greet')]);
    // Out: afterEmoji is declared after '🎉🎉' on its line; its column counts each emoji as 2.
    const out = spots(await query(at(project, 'goToDefinition', 'src/main.ts', 'afterEmoji', 2)));
    const line = SHAPES_TS.split('\n').find((l) => l.includes('afterEmoji'))!;
    expect(out).toEqual([spot('src/shapes.ts', 'afterEmoji')]);
    expect(Number(out[0]!.split(':')[2])).toBe(line.indexOf('afterEmoji') + 1);
    expect(Number(out[0]!.split(':')[2])).toBe([...line.slice(0, line.indexOf('afterEmoji'))].length + 3);
  });

  it('answers hover with the text, and implementation with the class', async () => {
    const h = await query(at(project, 'hover', 'src/main.ts', 'greet', 2));
    expect(h.kind).toBe('hover');
    expect(h.kind === 'hover' && h.content).toContain('greet(name: string): string');
    expect(h.kind === 'hover' && h.content).toContain('Says hello');
    const impl = spots(await query(at(project, 'goToImplementation', 'src/shapes.ts', 'Shape')));
    expect(impl).toEqual([spot('src/shapes.ts', 'Square')]);
  });

  it('selects by extension: a Markdown file goes to the notes provider, a dotfile to none', async () => {
    const notes = await query({
      operation: 'goToDefinition',
      filePath: 'notes/Alpha.md',
      position: { line: 2, character: 0 },
      workspaceRoot: project.root,
    });
    expect(spots(notes)).toEqual(['notes/Beta.md:1:1']);
    writeFileSync(join(project.root, '.bashrc'), 'greet\n');
    const none = await failure(
      query({ ...at(project, 'hover', 'src/main.ts', 'greet'), filePath: '.bashrc' }),
    );
    expect(none.code).toBe('LSP_NO_PROVIDER');
  });

  it('starts a server again after it was killed mid-session, and the next query answers', async () => {
    const [pid] = await waitFor(
      () => {
        const pids = serversIn(project.root, TSLS_CLI);
        return pids.length === 1 ? pids : undefined;
      },
      10_000,
      'the running server',
    );
    process.kill(pid!, 'SIGKILL');
    // Reaped by this process (the provider's), so the provider has seen it go.
    await waitFor(() => !existsSync(`/proc/${pid}`), 10_000, 'the killed server to be reaped');
    const r = await query(at(project, 'goToDefinition', 'src/main.ts', 'Square'));
    expect(spots(r)).toEqual([spot('src/shapes.ts', 'Square')]);
    const now = serversIn(project.root, TSLS_CLI);
    expect(now).toHaveLength(1);
    expect(now[0]).not.toBe(pid);
  });
});

describe('a recorder server written for the test', { timeout: 60_000 }, () => {
  let project: LspProject;
  let service: LspService;
  const record = () => join(project.root, 'record.jsonl');
  const received = (): { method?: string; id?: number; cancels?: number }[] =>
    existsSync(record())
      ? readFileSync(record(), 'utf8')
          .trim()
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l))
      : [];
  const ask = (queryId: string, config: LspHostConfig) =>
    service.query({
      queryId,
      config,
      query: {
        operation: 'goToDefinition',
        filePath: 'a.rec',
        position: { line: 0, character: 0 },
        workspaceRoot: project.root,
      },
    });

  beforeAll(() => {
    project = createLspProject();
    writeFileSync(join(project.root, 'a.rec'), 'anything\n');
    service = new LspService();
  });
  afterAll(async () => {
    await service?.dispose();
    project?.cleanup();
  });

  it('a query its caller cancels sends $/cancelRequest for that request, and fails ABORTED', async () => {
    rmSync(record(), { force: true });
    const pending = failure(ask('cancel-me', hostConfig([recorderConfig(record())])));
    const asked = await waitFor(
      () => received().find((m) => m.method === 'textDocument/definition'),
      10_000,
      'the definition request',
    );
    expect(service.cancel('cancel-me')).toEqual({ cancelled: true });
    expect((await pending).code).toBe('ABORTED');
    const cancel = await waitFor(
      () => received().find((m) => m.method === '$/cancelRequest'),
      10_000,
      'the cancel',
    );
    expect(cancel.cancels).toBe(asked.id);
    // The document was opened for the query and closed after it.
    await waitFor(() => received().some((m) => m.method === 'textDocument/didClose'), 10_000, 'didClose');
    expect(received().map((m) => m.method)).toContain('textDocument/didOpen');
  });

  it('a query past its deadline fails TIMEOUT and is cancelled on the server too', async () => {
    rmSync(record(), { force: true });
    const err = await failure(
      ask('slow', hostConfig([recorderConfig(record(), { id: 'slow-recorder' })], 1500)),
    );
    expect(err.code).toBe('TIMEOUT');
    const asked = received().find((m) => m.method === 'textDocument/definition');
    const cancel = await waitFor(
      () => received().find((m) => m.method === '$/cancelRequest'),
      10_000,
      'the cancel',
    );
    expect(cancel.cancels).toBe(asked?.id);
  });

  it('a server that crashes gives LSP_SERVER_CRASHED with its stderr line; the next query starts another', async () => {
    rmSync(record(), { force: true });
    const crashing = recorderConfig(record(), {
      id: 'crashing',
      args: [
        join(import.meta.dirname, '..', 'support', 'lsp-recorder-server.cjs'),
        record(),
        '--crash-on',
        'textDocument/definition',
      ],
    });
    const config = hostConfig([crashing]);
    const err = await failure(ask('crash-1', config));
    expect(err.code).toBe('LSP_SERVER_CRASHED');
    expect(err.message).toContain('recorder: fatal error: asked for textDocument/definition');
    expect(err.details?.stderr).toBe('recorder: fatal error: asked for textDocument/definition');
    expect((await failure(ask('crash-2', config))).code).toBe('LSP_SERVER_CRASHED');
    expect(received().filter((m) => m.method === 'initialize')).toHaveLength(2);
  });

  it('a server that is missing, or dies before it answers, gives LSP_SERVER_MISSING with the reason', async () => {
    const missing = await failure(
      ask(
        'missing',
        hostConfig([recorderConfig(record(), { id: 'nx', command: '/nonexistent/lsp-server' })]),
      ),
    );
    expect(missing.code).toBe('LSP_SERVER_MISSING');
    expect(missing.message).toContain('/nonexistent/lsp-server');
    const noScript = join(tmpdir(), 'ptr-no-such-server.js');
    const dies = await failure(
      ask('dies', hostConfig([recorderConfig(record(), { id: 'dies', args: [noScript] })])),
    );
    expect(dies.code).toBe('LSP_SERVER_MISSING');
    expect(dies.details?.stderr).toMatch(/Cannot find module/);
  });
});

const builds = nodeBuilds();
const node18 = capability('node-matrix', missingNodeBuilds([18], builds));

describe.skipIf(!node18)('the stub bundle on Node 18 serves lspQuery', { timeout: 120_000 }, () => {
  it('a daemon under Node 18 runs typescript-language-server under Node 18 and answers', async () => {
    const project = createLspProject();
    const runtimeDir = join(project.root, 'run');
    const node = builds.get(18)!.bin;
    const socket = await connectOrStartDaemon(stubBundlePath(), runtimeDir, [], node);
    const client = new StubClient(socket, { role: 'test', buildId: stubBuildId(stubBundlePath()) });
    try {
      await client.ready;
      const config = hostConfig([tslsConfig(node)]);
      const r = await client.call('lspQuery', {
        queryId: 'n18',
        query: at(project, 'goToDefinition', 'src/main.ts', 'greet', 2),
        config,
      });
      expect(spots(r)).toEqual([spot('src/shapes.ts', 'greet')]);
      const server = serversIn(project.root, TSLS_CLI)[0]!;
      expect(readlinkSync(`/proc/${server}/exe`)).toBe(node);
      await client.call('daemonShutdown', {});
      // The daemon stops its language servers as it exits.
      await waitFor(() => gone(server), 15_000, 'the language server to stop with its daemon');
    } finally {
      client.close?.();
      socket.destroy();
      await killDaemonsOf(runtimeDir);
      project.cleanup();
    }
  });
});
