import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { RELAY_NODE_OPTIONS } from '../../relay/core/relay-runtime.js';

const ROOT = join(import.meta.dirname, '..', '..');
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');
const flags = RELAY_NODE_OPTIONS.join(' ');

describe("the relay's Node options (relay/core/relay-runtime.ts)", () => {
  it('every launcher of the relay passes exactly them', () => {
    const start = (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts.start;
    expect(start).toBe(`node ${flags} dist/bin/ptyrelay.js serve`);
    expect(read('ptyrelay')).toContain(`exec node ${flags} "$(dirname "$0")/dist/bin/ptyrelay.js" "$@"`);
    const entry = read('test/containers/images/relay/relay-entry.sh');
    expect(entry).toContain(`NODE_FLAGS="${flags}"`);
    expect(entry.match(/node \$NODE_FLAGS "\$relay" serve/g)).toHaveLength(2);
  });
});
