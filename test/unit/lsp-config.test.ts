import { describe, expect, it } from 'vitest';
import { DEFAULT_LSP_IDLE_MS, DEFAULT_LSP_QUERY_TIMEOUT_MS } from '../../relay/core/lsp-config.js';
import { validateConfig } from '../../relay/service/config.js';
import { HostLsp } from '../../relay/service/host-lsp.js';

const stdio = (id: string, extensionToLanguage: Record<string, string>) => ({
  type: 'stdio',
  id,
  command: '/usr/bin/node',
  args: ['server.js', '--stdio'],
  extensionToLanguage,
});
const invalid = (raw: unknown): string => {
  try {
    validateConfig(raw);
  } catch (err) {
    return `${(err as { code: string }).code}: ${(err as Error).message}`;
  }
  return 'valid';
};

describe('the relay config: lsp', () => {
  it('is off by default: no host has a provider', () => {
    expect(validateConfig({}).lsp).toEqual({});
  });

  it('fills what every query carries: deadline, idle time, args, env, the notes id', () => {
    const c = validateConfig({
      hosts: { b1: { host: 'b1.example' } },
      lsp: {
        queryTimeoutMs: 5000,
        hosts: {
          local: { providers: [{ type: 'markdown-notes' }] },
          b1: {
            queryTimeoutMs: 9000,
            providers: [{ ...stdio('ts', { '.ts': 'typescript' }), initializationOptions: { a: 1 } }],
          },
        },
      },
    });
    expect(c.lsp.local).toEqual({
      providers: [{ type: 'markdown-notes', id: 'markdown-notes' }],
      queryTimeoutMs: 5000,
    });
    expect(c.lsp.b1).toEqual({
      queryTimeoutMs: 9000,
      providers: [
        {
          ...stdio('ts', { '.ts': 'typescript' }),
          initializationOptions: { a: 1 },
          env: {},
          idleMs: DEFAULT_LSP_IDLE_MS,
        },
      ],
    });
    const dflt = validateConfig({ lsp: { hosts: { local: { providers: [{ type: 'markdown-notes' }] } } } });
    expect(dflt.lsp.local?.queryTimeoutMs).toBe(DEFAULT_LSP_QUERY_TIMEOUT_MS);
  });

  it('refuses at load what a daemon would refuse to register, naming the provider', () => {
    const host = (providers: unknown[]) => ({ lsp: { hosts: { local: { providers } } } });
    expect(invalid(host([stdio('ts', { '.ts': 'typescript' }), stdio('ts', { '.js': 'javascript' })]))).toBe(
      'CONFIG_INVALID: lsp.hosts.local.providers[1]: provider id "ts" is already registered',
    );
    expect(invalid(host([stdio('ts', { '.md': 'x' }), { type: 'markdown-notes' }]))).toBe(
      'CONFIG_INVALID: lsp.hosts.local.providers[1]: provider markdown-notes: extension .md belongs to provider ts',
    );
    expect(invalid(host([stdio('ts', { '.ts': 'typescript', '.TS': 'typescript' })]))).toMatch(
      /providers\[0\]\.extensionToLanguage: extension "\.TS" must be lowercase/,
    );
    expect(invalid(host([{ type: 'clangd' }]))).toMatch(
      /providers\[0\]\.type must be one of stdio, markdown-notes/,
    );
    expect(invalid(host([{ ...stdio('ts', { '.ts': 'typescript' }), comand: 'x' }]))).toMatch(
      /providers\[0\]\.comand is not a known setting/,
    );
    expect(invalid(host([]))).toMatch(/must enable at least one provider/);
  });

  it('names only hosts the relay has', () => {
    expect(invalid({ lsp: { hosts: { b9: { providers: [{ type: 'markdown-notes' }] } } } })).toBe(
      'CONFIG_INVALID: lsp.hosts.b9 is not a host (hosts: local)',
    );
  });
});

describe('HostLsp: a host the config leaves out', () => {
  it('has no code navigation: LSP_NOT_ENABLED naming the hosts that have it', async () => {
    const lsp = new HostLsp(
      validateConfig({ lsp: { hosts: { local: { providers: [{ type: 'markdown-notes' }] } } } }).lsp,
      () => {
        throw new Error('no provider is asked');
      },
    );
    expect(lsp.hosts()).toEqual(['local']);
    const q = {
      operation: 'hover' as const,
      filePath: '/a.md',
      position: { line: 0, character: 0 },
      workspaceRoot: '/',
    };
    await expect(lsp.query('b1', q)).rejects.toMatchObject({
      code: 'LSP_NOT_ENABLED',
      details: { host: 'b1', hosts: ['local'] },
    });
    await expect(lsp.workspaceRoot('b1', '/a.md')).rejects.toMatchObject({ code: 'LSP_NOT_ENABLED' });
  });
});
