import { describe, expect, it } from 'vitest';
import type {
  AgentReadResult,
  AgentSendResult,
  IPtyProvider,
  PtyExitEvent,
  PtySpawnOptions,
  PtySpawnResult,
} from '../../provider/contract.js';
import { PtyRelayError } from '../../provider/errors.js';
import { NO_PAGER_ENV, TerminalToolService } from '../../relay/agents/terminal-tool-service.js';
import { codeOf } from '../support/error-code.js';

/** A provider double: spawns numbered fake PTYs, records calls, lets a test finish sends by hand. */
class FakeProvider {
  spawned: PtySpawnOptions[] = [];
  shut: string[] = [];
  signals: string[] = [];
  typed: string[] = [];
  failSpawn = false;
  spawnGate: Promise<void> = Promise.resolve();
  private n = 0;
  private sends: ((r: AgentSendResult) => void)[] = [];
  private exits: ((e: PtyExitEvent) => void)[] = [];

  async spawn(o: PtySpawnOptions): Promise<PtySpawnResult> {
    this.spawned.push(o);
    await this.spawnGate;
    if (this.failSpawn) throw new PtyRelayError('SPAWN_FAILED', 'no such cwd');
    const id = `local/pty-${++this.n}`;
    return {
      id,
      pid: 1,
      incarnationId: 'inc',
      cols: o.cols,
      rows: o.rows,
      providerSequence: { value: 0, generation: 'continued' },
    };
  }
  agentSend(_id: string, data: string): Promise<AgentSendResult> {
    this.typed.push(data);
    return new Promise((r) => this.sends.push(r));
  }
  finishSend(r: Partial<AgentSendResult> = {}): void {
    this.sends.shift()?.({ reason: 'stdin_read', output: '', truncated: false, elapsedMs: 1, ...r });
  }
  async agentRead(): Promise<AgentReadResult> {
    return { lines: ['x'], lineBegin: 0, lineEnd: 1, totalLines: 1, truncated: false };
  }
  async sendSignal(id: string, sig: string): Promise<void> {
    this.signals.push(`${id}:${sig}`);
  }
  async shutdown(id: string): Promise<void> {
    this.shut.push(id);
  }
  onExit(l: (e: PtyExitEvent) => void) {
    this.exits.push(l);
    return () => {};
  }
  exit(id: string, exitCode: number): void {
    for (const l of this.exits) l({ id, incarnationId: 'inc', exitCode });
  }
}

function setup(ownerGraceMs = 60_000) {
  const p = new FakeProvider();
  const service = new TerminalToolService({
    hosts: {
      hosts: () => ['local'],
      providerFor: (h) => {
        if (h !== 'local') throw new PtyRelayError('UNKNOWN_HOST', `no host ${h}`);
        return p as unknown as IPtyProvider;
      },
    },
    ownerGraceMs,
  });
  return { p, service };
}

describe('TerminalToolService', () => {
  it('mints its own ids and publishes a terminal only after its spawn succeeded', async () => {
    const { p, service } = setup();
    const a = service.owner('a');
    const t1 = await service.open(a, 'local', { cwd: '/tmp' });
    expect(t1).toMatchObject({ id: 'term-1', host: 'local', providerId: 'local/pty-1', sending: false });
    p.failSpawn = true;
    expect((await codeOf(service.open(a, 'local'))).code).toBe('SPAWN_FAILED');
    expect(service.list(a).map((t) => t.id)).toEqual(['term-1']);
    expect((await codeOf(service.open(a, 'nowhere'))).code).toBe('UNKNOWN_HOST');
    // A spawn still running is not listed.
    p.failSpawn = false;
    let release = () => {};
    p.spawnGate = new Promise((r) => {
      release = r;
    });
    const pending = service.open(a, 'local');
    await new Promise((r) => setTimeout(r, 10));
    expect(service.list(a)).toHaveLength(1);
    release();
    expect((await pending).id).toBe('term-2');
  });

  it('agent terminals get no pager unless the caller sets one of the pager variables', async () => {
    const { p, service } = setup();
    const a = service.owner('a');
    await service.open(a, 'local');
    expect(p.spawned[0].env).toEqual({ PAGER: 'cat', GIT_PAGER: 'cat', MANPAGER: 'cat', SYSTEMD_PAGER: '' });
    await service.open(a, 'local', { env: { HOME: '/h' } });
    expect(p.spawned[1].env).toEqual({ ...NO_PAGER_ENV, HOME: '/h' });
    // Any one of them set by the caller: none is added.
    for (const [k, v] of [
      ['PAGER', 'less'],
      ['GIT_PAGER', 'less'],
      ['MANPAGER', 'most'],
      ['SYSTEMD_PAGER', 'less'],
    ]) {
      await service.open(a, 'local', { env: { HOME: '/h', [k]: v } });
      expect(p.spawned.at(-1)?.env).toEqual({ HOME: '/h', [k]: v });
    }
  });

  it('checks the exact owner: NOT_FOUND for unknown ids, NOT_OWNER for another owner', async () => {
    const { service } = setup();
    const a = service.owner('a');
    const b = service.owner('b');
    const t = await service.open(a, 'local');
    expect((await codeOf(service.read(b, t.id))).code).toBe('NOT_OWNER');
    expect((await codeOf(service.send(b, t.id, 'ls'))).code).toBe('NOT_OWNER');
    expect((await codeOf(service.signal(b, t.id))).code).toBe('NOT_OWNER');
    expect((await codeOf(service.close(b, t.id))).code).toBe('NOT_OWNER');
    expect((await codeOf(service.read(a, 'term-404'))).code).toBe('NOT_FOUND');
    expect(service.list(b)).toEqual([]);
  });

  it('one send at a time (SEND_IN_PROGRESS naming the id); read and signal go through meanwhile', async () => {
    const { p, service } = setup();
    const a = service.owner('a');
    const t = await service.open(a, 'local');
    const first = service.send(a, t.id, 'sleep 5\n');
    const busy = await codeOf(service.send(a, t.id, 'ls'));
    expect(busy).toMatchObject({ code: 'SEND_IN_PROGRESS', details: { id: t.id } });
    expect(busy.message).toContain(t.id);
    expect(service.list(a)[0].sending).toBe(true);
    expect((await service.read(a, t.id)).lines).toEqual(['x']);
    expect(await service.signal(a, t.id, 'int')).toBe('SIGINT');
    expect(p.signals).toEqual(['local/pty-1:SIGINT']);
    p.finishSend({ exitCode: 130 });
    expect((await first).exitCode).toBe(130);
    expect(p.typed).toEqual(['sleep 5\r']);
    const second = service.send(a, t.id, '');
    p.finishSend();
    await second;
    expect(p.typed[1]).toBe('');
  });

  it('an owner that goes away keeps its terminals through the grace; coming back keeps them, else they are closed', async () => {
    const { p, service } = setup(100);
    const a = service.owner('agent:a');
    const t = await service.open(a, 'local');
    service.release(a);
    await new Promise((r) => setTimeout(r, 50));
    const back = service.owner('agent:a');
    expect(back).toBe(a);
    await new Promise((r) => setTimeout(r, 150));
    expect(service.list(a).map((x) => x.id)).toEqual([t.id]);
    expect(p.shut).toEqual([]);
    service.release(a);
    await new Promise((r) => setTimeout(r, 200));
    expect(p.shut).toEqual([t.providerId]);
    // The key now names a new owner that owns nothing; the old object is refused.
    const again = service.owner('agent:a');
    expect(again).not.toBe(a);
    expect(service.list(again)).toEqual([]);
    expect((await codeOf(service.open(a, 'local'))).code).toBe('NOT_OWNER');
  });

  it('a terminal whose owner went away during the spawn is shut down, not published', async () => {
    const { p, service } = setup(1);
    const a = service.owner('a');
    let release = () => {};
    p.spawnGate = new Promise((r) => {
      release = r;
    });
    const pending = service.open(a, 'local');
    service.release(a);
    await new Promise((r) => setTimeout(r, 20));
    release();
    expect((await codeOf(pending)).code).toBe('NOT_OWNER');
    expect(p.shut).toEqual(['local/pty-1']);
  });

  it('records the exit code of a terminal whose process ended', async () => {
    const { p, service } = setup();
    const a = service.owner('a');
    const t = await service.open(a, 'local');
    p.exit(t.providerId, 3);
    expect(service.list(a)[0].exitCode).toBe(3);
    await service.close(a, t.id);
    expect(service.list(a)).toEqual([]);
    expect(p.shut).toEqual([t.providerId]);
  });
});
