import { mkdtempSync, readdirSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RESTORE_RECORD_VERSION, type RestoreRecord } from '../../agent-stub/restore/restore-record.js';
import { RestoreStore, restoreScope } from '../../agent-stub/restore/restore-store.js';
import { RESTORE_RETENTION_MS, RestoredSessions } from '../../agent-stub/restore/restored-sessions.js';

const SCOPE = restoreScope('/run/user/1000/ptyrelay');
const HOUR = 3_600_000;

function record(id: string, over: Partial<RestoreRecord> = {}): RestoreRecord {
  return {
    v: RESTORE_RECORD_VERSION,
    scope: SCOPE,
    owner: '4242:777',
    id,
    incarnationId: `inc-${id}`,
    command: '/bin/bash',
    args: [],
    cwd: '/home/me/src',
    title: 'me@box: ~/src',
    cols: 80,
    rows: 24,
    screen: '$ make\r\nok\r\n$ ',
    scrollbackRows: 2000,
    seq: 17,
    alternateScreen: false,
    createdAt: Date.now() - HOUR,
    savedAt: Date.now(),
    ...over,
  };
}

describe('cold-restore records on disk', () => {
  let stateDir: string;
  let store: RestoreStore;
  const logs: string[] = [];
  const log = (msg: string) => logs.push(msg);

  beforeEach(() => {
    stateDir = mkdtempSync(join(tmpdir(), 'ptr-restore-'));
    store = new RestoreStore(stateDir);
    store.ensureDir();
    logs.length = 0;
  });
  afterEach(() => rmSync(stateDir, { recursive: true, force: true }));

  const write = (r: RestoreRecord) => store.write(r.scope, r.id, JSON.stringify(r));

  it('writes 0600 files in a 0700 dir, leaving no temp file', async () => {
    await write(record('pty-1'));
    expect(readdirSync(store.dir)).toEqual([`${SCOPE}-pty-1.json`]);
    expect(statSync(store.fileOf(SCOPE, 'pty-1')).mode & 0o777).toBe(0o600);
    expect(statSync(store.dir).mode & 0o777).toBe(0o700);
    expect(statSync(stateDir).mode & 0o777).toBe(0o700);
  });

  it("adopts this scope's records whose writer is gone, and leaves live writers' and other scopes' alone", async () => {
    await write(record('pty-1'));
    await write(record('pty-2', { owner: 'live:1' }));
    await write(record('pty-3', { scope: restoreScope('/tmp/other') }));
    const restored = new RestoredSessions(store, SCOPE, log);
    restored.load((owner) => owner === 'live:1');
    expect(restored.list().map((r) => r.id)).toEqual(['pty-1']);
    expect(restored.find('pty-1')?.cwd).toBe('/home/me/src');
    // Nothing was removed: the others belong to someone else.
    expect(readdirSync(store.dir)).toHaveLength(3);
  });

  it('removes records older than 24 h, at load and in the sweep', async () => {
    const now = Date.now();
    await write(record('pty-1', { savedAt: now - RESTORE_RETENTION_MS - 1000 }));
    await write(record('pty-2', { savedAt: now - RESTORE_RETENTION_MS + HOUR }));
    const restored = new RestoredSessions(store, SCOPE, log);
    restored.load(() => false, now);
    expect(restored.list().map((r) => r.id)).toEqual(['pty-2']);
    expect(readdirSync(store.dir)).toEqual([`${SCOPE}-pty-2.json`]);
    restored.sweep(now + 2 * HOUR);
    expect(restored.list()).toEqual([]);
    expect(readdirSync(store.dir)).toEqual([]);
  });

  it('the sweep judges files by their age alone and reads none of them', async () => {
    const now = Date.now();
    const other = restoreScope('/tmp/other');
    for (const id of ['pty-1', 'pty-2'])
      await store.write(other, id, JSON.stringify(record(id, { scope: other })));
    const past = (now - RESTORE_RETENTION_MS - HOUR) / 1000;
    utimesSync(store.fileOf(other, 'pty-1'), past, past);
    class CountingStore extends RestoreStore {
      reads = 0;
      override readAll() {
        this.reads++;
        return super.readAll();
      }
    }
    const counting = new CountingStore(stateDir);
    const restored = new RestoredSessions(counting, SCOPE, log);
    restored.sweep(now);
    expect(readdirSync(store.dir)).toEqual([`${other}-pty-2.json`]);
    // Records are screens with scrollback (up to 1 MiB each) and the sweep runs every minute.
    expect(counting.reads).toBe(0);
  });

  it('removes unreadable files and old temp debris, but not a write in progress', () => {
    writeFileSync(join(store.dir, `${SCOPE}-pty-1.json`), '{"v":1,"id":');
    writeFileSync(join(store.dir, `${SCOPE}-pty-2.json`), JSON.stringify({ ...record('pty-2'), cols: -1 }));
    const old = join(store.dir, `${SCOPE}-pty-3.json.99.tmp`);
    writeFileSync(old, '{');
    const past = (Date.now() - HOUR) / 1000;
    utimesSync(old, past, past);
    for (const f of [`${SCOPE}-pty-1.json`, `${SCOPE}-pty-2.json`])
      utimesSync(join(store.dir, f), past, past);
    writeFileSync(join(store.dir, `${SCOPE}-pty-4.json.100.tmp`), '{');
    const restored = new RestoredSessions(store, SCOPE, log);
    restored.load(() => false);
    expect(restored.list()).toEqual([]);
    expect(readdirSync(store.dir)).toEqual([`${SCOPE}-pty-4.json.100.tmp`]);
    expect(logs.filter((l) => l.includes('unreadable'))).toHaveLength(3);
  });

  it('dismiss forgets a record and removes its file', async () => {
    await write(record('pty-7'));
    const restored = new RestoredSessions(store, SCOPE, log);
    restored.load(() => false);
    expect(restored.has('pty-7')).toBe(true);
    await restored.dismiss('pty-7');
    expect(restored.has('pty-7')).toBe(false);
    expect(readdirSync(store.dir)).toEqual([]);
  });
});
