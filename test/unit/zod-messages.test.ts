import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../../relay/core/stub-bundle.js';

/**
 * The relay's `zod/mini` schemas speak English (relay/core/zod-messages.ts): mini has no messages
 * of its own, and classic zod, which sets English when it loads, is loaded only with the MCP
 * server. Each case runs in a fresh node (zod's setting is global to a process), on the built
 * modules, so nothing loaded before changes the answer.
 */
function messageAfter(imports: string[]): string {
  const code = [
    ...imports.map((m) => `await import(${JSON.stringify(join(packageRoot(), 'dist', m))});`),
    `const z = await import('zod/mini');`,
    `const r = z.strictObject({ name: z.string().check(z.minLength(1)) }).safeParse({ name: '' });`,
    'process.stdout.write(r.error.issues[0].message);',
  ].join('\n');
  return execFileSync(process.execPath, ['--input-type=module', '-e', code], {
    cwd: packageRoot(),
    encoding: 'utf8',
  });
}

describe("the relay's zod/mini messages", () => {
  it('are English once a module that validates user input is loaded', () => {
    for (const m of [
      'relay/core/config-validate.js',
      'relay/tokens/token-extension.js',
      'relay/service/host-key-extension.js',
    ])
      expect(messageAfter([m]), m).toBe('Too small: expected string to have >=1 characters');
  });

  it('(without them, mini says only "Invalid input")', () => {
    expect(messageAfter([])).toBe('Invalid input');
  });
});
