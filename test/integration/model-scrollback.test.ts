import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { daemonLogPath } from '../../provider/daemon-runtime/stub-paths.js';
import { type LocalFixture, startLocal, waitFor } from '../support/local-daemon.js';

/** Lines, colours, wide characters and a drawn box: ~2,600 rows, more than the emulator keeps itself. */
const PROGRAM = [
  'read go',
  'i=0',
  'while [ $i -lt 400 ]; do',
  '  printf "\\033[3%dmrow %d\\033[0m %s 漢字\\n" $((i % 8)) $i "$(printf %0$((i % 150))d 0)"',
  '  seq $i $((i + 4))',
  '  i=$((i + 1))',
  'done',
  'printf "\\033[2;10H\\033[1;44m box \\033[0m\\033[20;1H"',
  'echo SCROLLBACK-DONE',
  'exec sleep 600',
].join('\n');

const droppedFor = (runtimeDir: string, id: string) =>
  readFileSync(daemonLogPath(runtimeDir), 'utf8')
    .split('\n')
    .filter((l) => l.includes('"model scrollback dropped"') && l.includes(`"id":"${id}"`)).length;

const localId = (id: string) => id.slice(id.lastIndexOf('/') + 1);

describe('model scrollback of idle sessions', () => {
  let shrinking: LocalFixture;
  let never: LocalFixture;
  beforeAll(async () => {
    [shrinking, never] = await Promise.all([
      startLocal(['--scrollback-idle-ms', '300']),
      startLocal(['--scrollback-idle-ms', '0']),
    ]);
  });
  afterAll(async () => {
    await shrinking.cleanup();
    await never.cleanup();
  });

  async function run(fx: LocalFixture): Promise<string> {
    const r = await fx.provider.spawn({ cols: 80, rows: 24, command: 'sh', args: ['-c', PROGRAM] });
    // A resize before the output: the rebuilt model has to apply it at the same point.
    await fx.provider.resize(r.id, 100, 30);
    await fx.provider.write(r.id, 'go\r');
    await waitFor(
      async () =>
        (await fx.provider.getBufferSnapshot(r.id, { scrollbackRows: 0 })).data.includes('SCROLLBACK-DONE'),
      30_000,
      'the program to finish',
    );
    return r.id;
  }

  it('drops it when idle and rebuilds it from the log: snapshots and reads equal a model that never shrank', async () => {
    const [a, b] = await Promise.all([run(shrinking), run(never)]);
    await waitFor(
      () => droppedFor(shrinking.runtimeDir, localId(a)) > 0,
      15_000,
      'the idle model to drop its scrollback',
    );
    const [sa, sb] = await Promise.all([
      shrinking.provider.getBufferSnapshot(a),
      never.provider.getBufferSnapshot(b),
    ]);
    expect(sa.data.length).toBeGreaterThan(30_000);
    expect(sa.data).toBe(sb.data);
    expect({ ...sa, data: '', seq: 0 }).toEqual({ ...sb, data: '', seq: 0 });
    // Dropped again once idle; an agent read rebuilds it too.
    const before = droppedFor(shrinking.runtimeDir, localId(a));
    await waitFor(() => droppedFor(shrinking.runtimeDir, localId(a)) > before, 15_000, 'a second drop');
    const [ra, rb] = await Promise.all([
      shrinking.provider.agentRead?.(a, { offset: 0, count: 5000 }),
      never.provider.agentRead?.(b, { offset: 0, count: 5000 }),
    ]);
    expect(ra).toBeDefined();
    expect(ra).toEqual(rb);
    expect(droppedFor(never.runtimeDir, localId(b))).toBe(0);
  });

  it('drops it for a session every link has in the background, and foregrounding brings it back', async () => {
    const [a, b] = await Promise.all([run(shrinking), run(never)]);
    await shrinking.provider.setPtyBackgrounded(a, true);
    await waitFor(
      () => droppedFor(shrinking.runtimeDir, localId(a)) > 0,
      15_000,
      'the background model to drop',
    );
    const back = new Promise<string>((resolve) => {
      const off = shrinking.provider.onBackgroundStreamEvent((e) => {
        if (e.id === a && e.type === 'backgroundMarker' && e.snapshot) {
          off();
          resolve(e.snapshot.data);
        }
      });
    });
    await shrinking.provider.setPtyBackgrounded(a, false);
    const sb = await never.provider.getBufferSnapshot(b);
    expect(await back).toBe(sb.data);
  });
});
