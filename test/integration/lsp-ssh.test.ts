/**
 * Code navigation end to end (issue 56): a real `ptyrelay serve` whose config enables a real
 * typescript-language-server and the [[note]] provider on an SSH host (a real OpenSSH sshd on
 * 127.0.0.1), asked through the CLI (`ptyrelay nav`) and through MCP (the `lsp` tool at /mcp):
 * definition, references with the declaration, hover, a symbol after an emoji both ways, the
 * Markdown provider, and the errors a person or a model reads. Positions are 1-based here, as the
 * CLI and the tool speak them.
 */
import { writeFileSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CliRun, runCli } from '../support/cli-runner.js';
import { daemonsOf } from '../support/daemon-reaper.js';
import { waitFor } from '../support/local-daemon.js';
import {
  createLspProject,
  type LspProject,
  MAIN_TS,
  NOTES,
  positionOf,
  SHAPES_TS,
  tslsConfig,
} from '../support/lsp-fixtures.js';
import { ServeProcess } from '../support/serve-process.js';
import { hostFor, relayHome, remoteRuntimeDir } from '../support/ssh-fixture.js';
import { type SshdInstance, sshdAvailable, startSshd } from '../support/sshd.js';

const available = sshdAvailable();

/** `FILE:LINE:COL` of the `nth` `word` in a file of the project (1-based, UTF-16 columns). */
function arg(project: LspProject, file: 'src/main.ts' | 'src/shapes.ts', word: string, nth = 1): string {
  const p = positionOf(file === 'src/main.ts' ? MAIN_TS : SHAPES_TS, word, nth);
  return `${project.root}/${file}:${p.line}:${p.column}`;
}

/** What a location line of the output says for `word` (path relative to the workspace). */
function spot(file: 'src/main.ts' | 'src/shapes.ts', word: string, nth = 1): string {
  const p = positionOf(file === 'src/main.ts' ? MAIN_TS : SHAPES_TS, word, nth);
  return `${file}:${p.line}:${p.column}`;
}

const ok = (r: CliRun): string => {
  if (r.code !== 0) throw new Error(`exit ${r.code}: ${r.stderr}`);
  return r.stdout;
};

const textOf = (r: CallToolResult) => r.content.map((c) => (c.type === 'text' ? c.text : '')).join('');

describe.skipIf(!available)('code navigation on an SSH host: CLI and MCP', { timeout: 240_000 }, () => {
  let sshd: SshdInstance;
  let home: ReturnType<typeof relayHome>;
  let serve: ServeProcess;
  let project: LspProject;
  let mcp: Client;
  const nav = (...args: string[]) => runCli(['nav', 'h', ...args], serve.env);
  const remoteDir = remoteRuntimeDir('lsp');

  beforeAll(async () => {
    home = relayHome();
    sshd = await startSshd();
    project = createLspProject();
    serve = new ServeProcess('ptr-lsp-serve-');
    const config = {
      hosts: { h: hostFor(sshd, { runtimeDir: remoteDir }) },
      lsp: {
        hosts: {
          h: { providers: [tslsConfig(), { type: 'markdown-notes' }] },
          local: { providers: [{ type: 'markdown-notes' }] },
        },
      },
    };
    writeFileSync(serve.configFile, JSON.stringify(config));
    await serve.start();
    mcp = new Client({ name: 'lsp-test', version: '1.0.0' });
    const headers = { authorization: `Bearer ${serve.token()}` };
    await mcp.connect(
      new StreamableHTTPClientTransport(new URL(`${serve.httpUrl}/mcp`), { requestInit: { headers } }),
    );
  });
  afterAll(async () => {
    await mcp?.close();
    // The relay first (nothing reconnects), then the host's daemon: on SIGTERM it stops its
    // language servers as it goes.
    await serve?.stop();
    for (const pid of daemonsOf(remoteDir)) process.kill(pid, 'SIGTERM');
    await waitFor(() => daemonsOf(remoteDir).length === 0, 15_000, "the host's daemon to exit");
    await serve?.cleanup();
    await sshd?.stop();
    project?.cleanup();
    home?.cleanup();
  });

  it('nav def: the definition, path relative to the workspace found by .git, 1-based', async () => {
    const out = ok(await nav('def', arg(project, 'src/main.ts', 'greet', 2)));
    expect(out).toBe(
      `goToDefinition: 1 location (workspace ${project.root})\n${spot('src/shapes.ts', 'greet')}\n`,
    );
    const json = JSON.parse(ok(await nav('def', arg(project, 'src/main.ts', 'Shape', 2), '--json')));
    expect(json).toMatchObject({
      host: 'h',
      operation: 'goToDefinition',
      root: project.root,
      kind: 'locations',
    });
    const shape = positionOf(SHAPES_TS, 'Shape');
    expect(json.locations).toEqual([
      {
        path: 'src/shapes.ts',
        line: shape.line,
        column: shape.column,
        endLine: shape.line,
        endColumn: shape.column + 5,
      },
    ]);
  });

  it('nav refs: every reference, the declaration included', async () => {
    const lines = ok(await nav('refs', arg(project, 'src/main.ts', 'greet', 2)))
      .trim()
      .split('\n');
    expect(lines[0]).toBe(`findReferences: 4 locations (workspace ${project.root})`);
    expect(lines.slice(1).sort()).toEqual(
      [
        spot('src/shapes.ts', 'greet'),
        spot('src/main.ts', 'greet'),
        spot('src/main.ts', 'greet', 2),
        spot('src/main.ts', 'greet', 3),
      ].sort(),
    );
  });

  it('nav hover: the text', async () => {
    const out = ok(await nav('hover', arg(project, 'src/shapes.ts', 'greet')));
    expect(out).toContain('function greet(name: string): string');
    expect(out).toContain('Says hello.');
  });

  it('a symbol after an emoji on its line: the right column in and out (UTF-16 units)', async () => {
    // In: `greet` after '😀' (2 units); out: `afterEmoji` after '🎉🎉' (4 units).
    expect(ok(await nav('def', arg(project, 'src/main.ts', 'greet', 3)))).toContain(
      `\n${spot('src/shapes.ts', 'greet')}\n`,
    );
    const out = ok(await nav('def', arg(project, 'src/main.ts', 'afterEmoji', 2)));
    const line = SHAPES_TS.split('\n').find((l) => l.includes('afterEmoji'))!;
    const column = line.indexOf('afterEmoji') + 1;
    expect(column).toBe([...line.slice(0, column - 1)].length + 3);
    expect(out).toContain(`\nsrc/shapes.ts:${positionOf(SHAPES_TS, 'afterEmoji').line}:${column}\n`);
  });

  it('the Markdown provider on the same host: definition, references with the declaration, empty implementation', async () => {
    const alpha = `${project.root}/notes/Alpha.md:3:1`;
    expect(ok(await nav('def', alpha))).toBe(
      `goToDefinition: 1 location (workspace ${project.root})\nnotes/Beta.md:1:1\n`,
    );
    const refs = ok(await nav('refs', alpha, '--root', project.root))
      .trim()
      .split('\n')
      .slice(1);
    const link = NOTES['notes/Alpha.md']!.split('\n')[2]!.indexOf('[[Beta]]');
    expect(refs).toEqual(['notes/Beta.md:1:1', `notes/Alpha.md:3:${link + 1}`]);
    expect(ok(await nav('impl', 'notes/Alpha.md:3:1', '--root', project.root))).toBe(
      `goToImplementation: no locations (workspace ${project.root})\n`,
    );
  });

  it('the built-in local host serves what its config enables, through its own daemon', async () => {
    const gamma = positionOf(NOTES['notes/Beta.md']!, 'Gamma');
    const at = `${project.root}/notes/Beta.md:${gamma.line}:${gamma.column}`;
    const out = await runCli(['nav', 'local', 'def', at], serve.env);
    expect(ok(out)).toBe(`goToDefinition: 1 location (workspace ${project.root})\nnotes/deep/Gamma.md:1:1\n`);
  });

  it('errors a person can act on: no provider, no workspace, a bad position', async () => {
    const none = await nav('def', `${project.root}/tsconfig.json:1:1`);
    expect(none.code).toBe(1);
    expect(none.stderr).toContain('LSP_NO_PROVIDER');
    const noGit = await nav('def', '/etc/hostname.ts:1:1');
    expect(noGit.stderr).toContain('no directory above /etc/hostname.ts on h holds .git');
    const bad = await nav('def', `${project.root}/src/main.ts:0:1`);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('FILE:LINE:COL');
    const notHere = await runCli(['nav', 'local', 'def', `${project.root}/src/main.ts:1:1`], serve.env);
    expect(notHere.stderr).toContain('LSP_NO_PROVIDER');
  });

  it('MCP: the lsp tool answers 1-based, relative to the workspace; hover as text', async () => {
    const tools = (await mcp.listTools()).tools;
    const lsp = tools.find((t) => t.name === 'lsp')!;
    expect(lsp.description).toContain('UTF-16');
    expect(lsp.description).toContain('always includes the declaration');
    expect(lsp.description).toContain('Hosts: h, local.');
    const at = positionOf(MAIN_TS, 'greet', 3);
    const file = `${project.root}/src/main.ts`;
    const def = (await mcp.callTool({
      name: 'lsp',
      arguments: { host: 'h', operation: 'goToDefinition', file, line: at.line, column: at.column },
    })) as CallToolResult;
    expect(def.isError).toBeFalsy();
    expect(textOf(def)).toBe(
      `goToDefinition: 1 location (workspace ${project.root})\n${spot('src/shapes.ts', 'greet')}`,
    );
    expect(def.structuredContent).toMatchObject({ kind: 'locations', workspace: project.root });
    const refs = (await mcp.callTool({
      name: 'lsp',
      arguments: {
        operation: 'findReferences',
        file: 'src/main.ts',
        root: project.root,
        line: at.line,
        column: at.column,
      },
    })) as CallToolResult;
    expect(textOf(refs)).toContain(`\n${spot('src/shapes.ts', 'greet')}`);
    expect(textOf(refs).split('\n')).toHaveLength(5);
    const hover = (await mcp.callTool({
      name: 'lsp',
      arguments: { operation: 'hover', file, line: at.line, column: at.column },
    })) as CallToolResult;
    expect(textOf(hover)).toContain('greet(name: string): string');
    const relative = (await mcp.callTool({
      name: 'lsp',
      arguments: { operation: 'hover', file: 'src/main.ts', line: 1, column: 1 },
    })) as CallToolResult;
    expect(relative.isError).toBe(true);
    expect(textOf(relative)).toMatch(/^INVALID_ARGUMENT: src\/main\.ts is relative/);
  });
});
