import { describe, expect, it } from 'vitest';
import { LspRegistry } from '../../agent-stub/lsp/lsp-registry.js';
import { isPtyRelayError } from '../../provider/errors.js';
import {
  extensionOf,
  type LspProvider,
  type LspProviderQuery,
  type LspQuery,
  type LspQueryResult,
  toSeamPosition,
  toToolPosition,
} from '../../provider/lsp-seam.js';

/** A provider of the seam: the three things, answering with what it was asked (no process behind it). */
function provider(
  id: string,
  extensionToLanguage: Record<string, string>,
  seen: LspProviderQuery[] = [],
): LspProvider {
  return {
    id,
    extensionToLanguage,
    async query(request) {
      seen.push(request);
      return request.operation === 'hover'
        ? { kind: 'hover', content: `${id}:${request.languageId}` }
        : { kind: 'locations', locations: [], resolvedWorkspaceUri: 'file:///w' };
    },
  };
}

const q = (filePath: string, operation: LspQuery['operation'] = 'hover'): LspQuery => ({
  operation,
  filePath,
  position: { line: 0, character: 0 },
  workspaceRoot: '/w',
});

async function code(p: Promise<unknown>): Promise<string> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  return isPtyRelayError(err) ? err.code : `not a PtyRelayError: ${String(err)}`;
}

describe('LspRegistry: registration is atomic', () => {
  it('a taken id publishes nothing of the second provider', async () => {
    const r = new LspRegistry();
    r.register(provider('ts', { '.ts': 'typescript' }));
    expect(() => r.register(provider('ts', { '.py': 'python' }))).toThrow(/already registered/);
    expect(r.select('a.py')).toBeUndefined();
    expect(r.ids()).toEqual(['ts']);
  });

  it('one taken extension publishes none of the provider (its id stays free)', () => {
    const r = new LspRegistry();
    r.register(provider('ts', { '.ts': 'typescript' }));
    const both = provider('js', { '.js': 'javascript', '.ts': 'typescript' });
    expect(() => r.register(both)).toThrow(/\.ts belongs to provider ts/);
    expect(r.select('a.js')).toBeUndefined();
    expect(r.ids()).toEqual(['ts']);
    // Nothing was reserved: the same id registers once the conflict is gone.
    r.register(provider('js', { '.js': 'javascript' }));
    expect(r.select('a.js')?.provider.id).toBe('js');
  });

  it('a case duplicate (.TS and .ts) in one provider is an error; an uppercase key is one too', () => {
    const r = new LspRegistry();
    expect(() => r.register(provider('ts', { '.ts': 'typescript', '.TS': 'typescript' }))).toThrow(
      /differ only in case/,
    );
    expect(() => r.register(provider('up', { '.TS': 'typescript' }))).toThrow(/must be lowercase/);
    expect(() => r.register(provider('nodot', { ts: 'typescript' }))).toThrow(/must start with a dot/);
    expect(() => r.register(provider('', { '.ts': 'typescript' }))).toThrow(/non-empty id/);
    expect(() => r.register(provider('none', {}))).toThrow(/no extension/);
    expect(r.ids()).toEqual([]);
    expect(r.select('a.ts')).toBeUndefined();
  });

  it('conflicts are LSP_PROVIDER_CONFLICT; the disposer releases the id and every extension, once', () => {
    const r = new LspRegistry();
    const dispose = r.register(provider('ts', { '.ts': 'typescript', '.tsx': 'typescriptreact' }));
    try {
      r.register(provider('ts', { '.x': 'x' }));
    } catch (err) {
      expect(isPtyRelayError(err, 'LSP_PROVIDER_CONFLICT')).toBe(true);
    }
    dispose();
    expect(r.ids()).toEqual([]);
    expect(r.select('a.tsx')).toBeUndefined();
    const again = r.register(provider('ts2', { '.ts': 'typescript' }));
    dispose(); // a second call releases nothing of the new owner
    expect(r.select('a.ts')?.provider.id).toBe('ts2');
    again();
  });
});

describe('LspRegistry: selection by extension, per query', () => {
  it('foo.d.ts is .ts, a dotfile or a name without a dot has none, case of the path does not matter', () => {
    expect(extensionOf('/src/foo.d.ts')).toBe('.ts');
    expect(extensionOf('/home/u/.bashrc')).toBeUndefined();
    expect(extensionOf('Makefile')).toBeUndefined();
    expect(extensionOf('dir.v2/README')).toBeUndefined();
    expect(extensionOf('trailing.')).toBeUndefined();
    expect(extensionOf('SHOUT.TS')).toBe('.ts');
    const r = new LspRegistry();
    r.register(provider('ts', { '.ts': 'typescript' }));
    r.register(provider('sh', { '.sh': 'shellscript' }));
    expect(r.select('/src/foo.d.ts')?.provider.id).toBe('ts');
    expect(r.select('/home/u/.bashrc')).toBeUndefined();
    expect(r.select('/home/u/.sh')).toBeUndefined();
  });

  it('a file no provider takes is LSP_NO_PROVIDER, naming its extension', async () => {
    const r = new LspRegistry();
    r.register(provider('ts', { '.ts': 'typescript' }));
    expect(await code(r.query(q('a.py'), { timeoutMs: 1000 }))).toBe('LSP_NO_PROVIDER');
    expect(await code(r.query(q('.bashrc'), { timeoutMs: 1000 }))).toBe('LSP_NO_PROVIDER');
  });

  it('does not depend on the order of registration; the language id comes from the provider map', async () => {
    for (const order of [
      ['ts', 'md'],
      ['md', 'ts'],
    ]) {
      const r = new LspRegistry();
      const seen: LspProviderQuery[] = [];
      const all = {
        ts: provider('ts', { '.ts': 'typescript', '.mts': 'typescript' }, seen),
        md: provider('md', { '.md': 'markdown' }, seen),
      };
      for (const id of order) r.register(all[id as 'ts' | 'md']);
      expect(await r.query(q('x.d.ts'), { timeoutMs: 1000 })).toEqual({
        kind: 'hover',
        content: 'ts:typescript',
      });
      expect(await r.query(q('notes/N.md'), { timeoutMs: 1000 })).toEqual({
        kind: 'hover',
        content: 'md:markdown',
      });
      expect(seen.map((s) => s.languageId)).toEqual(['typescript', 'markdown']);
    }
  });

  it('a map changed after registration moves nothing', () => {
    const r = new LspRegistry();
    const map: Record<string, string> = { '.ts': 'typescript' };
    r.register(provider('ts', map));
    map['.py'] = 'python';
    expect(r.select('a.py')).toBeUndefined();
  });
});

/** A provider that answers only when its signal fires, and records that it did. */
function hanging(aborted: unknown[]): LspProvider {
  return {
    id: 'slow',
    extensionToLanguage: { '.slow': 'slow' },
    query: (_request, signal) =>
      new Promise<LspQueryResult>(() => {
        signal?.addEventListener('abort', () => aborted.push(signal.reason));
      }),
  };
}

describe('LspRegistry: every query has a deadline, and the caller may cancel', () => {
  it('past the deadline: TIMEOUT, and the provider saw its signal fire', async () => {
    const r = new LspRegistry();
    const aborted: unknown[] = [];
    r.register(hanging(aborted));
    expect(await code(r.query(q('a.slow'), { timeoutMs: 50 }))).toBe('TIMEOUT');
    expect(aborted).toHaveLength(1);
  });

  it("the caller's signal: ABORTED at once, the provider's signal fired", async () => {
    const r = new LspRegistry();
    const aborted: unknown[] = [];
    r.register(hanging(aborted));
    const ctl = new AbortController();
    const pending = code(r.query(q('a.slow'), { timeoutMs: 60_000, signal: ctl.signal }));
    ctl.abort();
    expect(await pending).toBe('ABORTED');
    expect(aborted).toHaveLength(1);
  });

  it('a provider answering with the other shape fails LSP_REQUEST_FAILED; its own errors pass typed', async () => {
    const r = new LspRegistry();
    r.register({
      id: 'odd',
      extensionToLanguage: { '.odd': 'odd' },
      query: async (request) => {
        if (request.position.line === 1) throw new Error('boom');
        return { kind: 'hover', content: null };
      },
    });
    expect(await code(r.query(q('a.odd', 'goToDefinition'), { timeoutMs: 1000 }))).toBe('LSP_REQUEST_FAILED');
    const boom = { ...q('a.odd'), position: { line: 1, character: 0 } };
    expect(await code(r.query(boom, { timeoutMs: 1000 }))).toBe('LSP_REQUEST_FAILED');
  });
});

describe('the two flips', () => {
  it('1-based tool positions in, minus one; seam positions out, plus one', () => {
    expect(toSeamPosition(1, 1)).toEqual({ line: 0, character: 0 });
    expect(toSeamPosition(12, 7)).toEqual({ line: 11, character: 6 });
    expect(toToolPosition({ line: 11, character: 6 })).toEqual({ line: 12, column: 7 });
    expect(toToolPosition(toSeamPosition(3, 40))).toEqual({ line: 3, column: 40 });
  });
});
