import { existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RelayClient } from '../../provider/client/relay-client.js';
import { isPtyRelayError } from '../../provider/errors.js';
import { OutputCollector } from '../support/local-daemon.js';
import { type RelayFixture, startRelay } from '../support/relay-fixture.js';

const MARKER = join(tmpdir(), `ptr-spawn-fields-marker-${process.pid}`);
/** What would run something if a field reached a shell: `$(…)`, backticks, `;`, a newline, `=word`. */
const HOSTILE = [
  `$(touch ${MARKER})`,
  `\`touch ${MARKER}\``,
  `x; touch ${MARKER}`,
  `x\ntouch ${MARKER}`,
  `=touch ${MARKER}`,
];

/** Spawn fields through the relay to a real daemon: hostile strings run nothing, malformed ones are refused by name. */
describe('spawn fields', () => {
  let fx: RelayFixture;
  let c: RelayClient;

  beforeAll(async () => {
    rmSync(MARKER, { force: true });
    fx = await startRelay();
    c = fx.client();
  });
  afterAll(async () => {
    await fx?.cleanup();
    rmSync(MARKER, { force: true });
  });

  it('hostile strings in every string field are passed as data: echo prints them, nothing runs', async () => {
    for (const s of HOSTILE) {
      const out = new OutputCollector(c);
      const r = await c.spawn({
        cols: 200,
        rows: 24,
        command: '/bin/echo',
        args: [s, `ARG-END`],
        env: { PTR_FUZZ: s, HOME: fx.local.home },
        name: s,
        paneKey: s,
        requestId: `${s}-${Math.random()}`,
        cwd: fx.local.home,
      });
      out.bind(r.id);
      await out.waitText('ARG-END');
      // The argument arrives whole (a newline is a line break in the terminal's output).
      expect(out.text.replace(/\r\n/g, '\n')).toContain(s);
      expect(existsSync(MARKER), `ran: ${JSON.stringify(s)}`).toBe(false);
    }
  });

  it('refuses malformed fields with INVALID_ARGUMENT naming the field, and a healthy terminal goes on', async () => {
    const out = new OutputCollector(c);
    const ok = await c.spawn({ cols: 80, rows: 24, command: 'cat', env: { HOME: fx.local.home } });
    out.bind(ok.id);
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ env: { 'A=B': 'x' } }, /env/],
      [{ env: { 'A\0B': 'x' } }, /env/],
      [{ env: { '': 'x' } }, /env/],
      [{ env: { A: 'x\0y' } }, /env\.A/],
      [{ envToDelete: ['X=Y'] }, /envToDelete\.0/],
      [{ args: ['ok', 'a\0b'], command: '/bin/echo' }, /args\.1/],
      [{ cwd: 'relative/dir' }, /cwd/],
      [{ cwd: '/tmp\0x' }, /cwd/],
      [{ command: 'a\0b' }, /command/],
      [{ name: 'n\0' }, /name/],
      [{ host: 'bad host;x' }, /host/],
      [{ cols: 0 }, /cols/],
      [{ rows: 5000 }, /rows/],
    ];
    for (const [fields, field] of cases) {
      const err = await c.spawn({ cols: 80, rows: 24, ...fields } as never).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(isPtyRelayError(err, 'INVALID_ARGUMENT'), `${JSON.stringify(fields)}: ${String(err)}`).toBe(
        true,
      );
      expect((err as Error).message).toMatch(field);
    }
    await c.write(ok.id, 'still-fine\n');
    await out.waitText('still-fine');
    expect(existsSync(MARKER)).toBe(false);
  });

  it('cwd relative to home (~/…) is resolved by the daemon', async () => {
    const out = new OutputCollector(c);
    const r = await c.spawn({
      cols: 80,
      rows: 24,
      command: '/bin/pwd',
      cwd: '~/',
      env: { HOME: fx.local.home },
    });
    out.bind(r.id);
    await out.waitText(fx.local.home);
  });
});
