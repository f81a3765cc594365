/**
 * The compose fleet (`docker-compose --profile fleet up`): two relay containers sharing one data
 * dir (config, startup token, token store, known_hosts) behind HAProxy, no stickiness. A RelayClient
 * connected through the balancer reads a `yes` flood; the relay it is on is SIGKILLed; it resumes
 * on the other relay with every byte once, in order, without a reset. A line typed while its relay
 * dies is applied once. The web page (Chromium), `ptyrelay attach` and an AHP client go on on the
 * other relay the same way. A token revoked through relay A is refused by relay B within a second.
 * `docker-compose down` leaves nothing.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { RelayClient } from '../../provider/client/relay-client.js';
import type { PtyDataEvent, PtyReattachEvent } from '../../provider/contract.js';
import type { PtyRelayError } from '../../provider/errors.js';
import { cliInPty, runCli } from '../support/cli-runner.js';
import { waitFor } from '../support/local-daemon.js';
import { connect, open, TestClient } from '../support/relay-test-support.js';
import { browserAvailable, launchBrowser, screenText, waitForScreen } from '../support/web-browser.js';
import { ComposeProject, composeCheck } from './support/compose-project.js';
import { reportSkip } from './support/container-engine.js';

const engine = composeCheck();
reportSkip('docker-compose fleet', engine);

/** The services of the two relays (docker-compose.yml: `relay` is relay A). */
const RELAYS = ['relay', 'relay-b'] as const;
type RelayService = (typeof RELAYS)[number];
/** `yes` through a PTY: this, over and over. */
const YES = Buffer.from('y\r\n');
/** Flood read before the kill, and after the resume, so both sides of the switch are covered. */
const FLOOD_BEFORE = 4 * 1024 * 1024;
const FLOOD_AFTER = 8 * 1024 * 1024;
const SWITCH_TIMEOUT_MS = 60_000;
/** The bound: a revocation on one relay refuses the token on the other within a second. */
const REVOKE_WITHIN_MS = 1000;

/** Checks one terminal's stream as it arrives: contiguous seqs, and `y\r\n` at every offset. */
class YesFollower {
  next = -1;
  received = 0;
  readonly problems: string[] = [];

  take(e: PtyDataEvent): void {
    if (this.next >= 0 && e.seq !== this.next)
      this.problems.push(`chunk at seq ${e.seq}, expected ${this.next}`);
    for (let i = 0; i < e.data.length; i++) {
      if (e.data[i] !== YES[(e.seq + i) % YES.length]) {
        this.problems.push(`byte ${e.data[i]} at seq ${e.seq + i}`);
        break;
      }
    }
    this.next = e.seq + e.data.length;
    this.received += e.data.length;
  }
}

/** `ptyrelay_connections` from a relay's /metrics (admin token); a relay that is down holds none. */
async function connectionsOn(port: number, token: string): Promise<number> {
  const headers = { authorization: `Bearer ${token}` };
  const text = await fetch(`http://127.0.0.1:${port}/metrics`, { headers }).then(
    (r) => r.text(),
    () => '',
  );
  return Number(/^ptyrelay_connections (\d+)$/m.exec(text)?.[1] ?? 0);
}

/** Collects one terminal's output as text (events may come before spawn() returns the id). */
class TextCollector {
  text = '';
  private id = '';
  private readonly early: PtyDataEvent[] = [];

  take(e: PtyDataEvent): void {
    if (!this.id) this.early.push(e);
    else if (e.id === this.id) this.text += Buffer.from(e.data).toString('utf8');
  }

  bind(id: string): void {
    this.id = id;
    for (const e of this.early.splice(0)) this.take(e);
  }

  /** How many lines `got:<line>` the reader printed. */
  count(line: string): number {
    return this.text.split(`got:${line}\r\n`).length - 1;
  }
}

/** The relay pid inside a container: the child of the container's init (compose `init: true`). */
function relayPid(containerId: string): number {
  const init = execFileSync('docker', ['inspect', '-f', '{{.State.Pid}}', containerId], {
    encoding: 'utf8',
  }).trim();
  for (const name of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      if (stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1] === init) return Number(name);
    } catch {
      // gone meanwhile
    }
  }
  throw new Error(`no relay process under ${containerId}'s init (${init})`);
}

describe.skipIf(!engine.ok)('a fleet of two relays behind HAProxy', () => {
  let project: ComposeProject;
  let token: string;
  const clients: RelayClient[] = [];
  const tests: TestClient[] = [];
  const portOf = (s: RelayService) => (s === 'relay' ? project.ports.relay : project.ports.relayB);

  beforeAll(async () => {
    project = await ComposeProject.create(['fleet']);
    const up = await project.compose('up', '-d');
    if (up.code !== 0) throw new Error(`docker-compose up failed: ${up.stderr}`);
    for (const port of [project.ports.relay, project.ports.relayB, project.ports.fleet])
      await project.healthy(port);
    token = project.token();
  }, 180_000);

  afterAll(async () => {
    for (const c of clients) await c.dispose().catch(() => {});
    for (const t of tests) t.close();
    await project?.cleanup();
  }, 120_000);

  /** A RelayClient through the balancer. */
  async function balancedClient(): Promise<RelayClient> {
    const c = new RelayClient({ url: `ws://127.0.0.1:${project.ports.fleet}`, token });
    clients.push(c);
    await c.connect();
    return c;
  }

  /** The relay holding the (only) client connection. */
  async function relayWithClient(): Promise<RelayService> {
    return waitFor(
      async () => {
        const open = await Promise.all(RELAYS.map((s) => connectionsOn(portOf(s), token)));
        return open[0]! + open[1]! === 1 ? RELAYS[open[0] === 1 ? 0 : 1] : undefined;
      },
      10_000,
      'one client connection on one relay',
    );
  }

  /** SIGKILLs a relay's container (like a crashed machine). */
  async function kill(service: RelayService): Promise<void> {
    const r = await project.compose('kill', '-s', 'SIGKILL', service);
    expect(r.code, r.stderr).toBe(0);
  }

  /** Relays a test killed: started again after it, passed or failed, for the next one (whose
   * client is then the only connection). */
  const revived: RelayService[] = [];
  afterEach(async () => {
    for (const c of clients.splice(0)) await c.dispose().catch(() => {});
    for (const service of revived.splice(0)) {
      const r = await project.compose('start', service);
      expect(r.code, r.stderr).toBe(0);
      await project.healthy(portOf(service));
    }
  }, 120_000);

  it(
    'a yes flood read through the balancer resumes exactly on the other relay when its relay is killed',
    async () => {
      const client = await balancedClient();
      const follower = new YesFollower();
      const reattaches: PtyReattachEvent[] = [];
      let id = '';
      const early: PtyDataEvent[] = [];
      client.onData((e) => (id ? e.id === id && follower.take(e) : early.push(e)));
      client.onReattach((e) => reattaches.push(e));
      ({ id } = await client.spawn({ host: 'host1', command: 'yes', cols: 80, rows: 24 }));
      for (const e of early.splice(0)) if (e.id === id) follower.take(e);
      await waitFor(() => follower.received >= FLOOD_BEFORE, SWITCH_TIMEOUT_MS, 'the flood before the kill');

      const victim = await relayWithClient();
      revived.push(victim);
      const before = client.serverInstanceId;
      await kill(victim);
      const atKill = follower.received;
      await waitFor(
        () => client.serverInstanceId !== before && follower.received >= atKill + FLOOD_AFTER,
        SWITCH_TIMEOUT_MS,
        'the flood on the other relay',
      );
      expect(await relayWithClient()).not.toBe(victim);
      expect(follower.problems).toEqual([]);
      expect(reattaches.filter((e) => e.generation !== 'continued' || e.sessionExpired)).toEqual([]);
      await client.shutdown(id);
    },
    4 * SWITCH_TIMEOUT_MS,
  );

  it(
    'a line typed during the switch arrives once',
    async () => {
      const client = await balancedClient();
      const out = new TextCollector();
      client.onData((e) => out.take(e));
      const script = 'stty -echo; echo ready; while IFS= read -r l; do echo "got:$l"; done';
      const { id } = await client.spawn({
        host: 'host2',
        command: 'sh',
        args: ['-c', script],
        cols: 80,
        rows: 24,
      });
      out.bind(id);
      await waitFor(() => out.text.includes('ready'), 30_000, 'the reader');
      const victim = await relayWithClient();
      revived.push(victim);
      // The relay stops reading (frozen), a line goes out to it and stays unacknowledged, then it
      // dies: that line is in flight across the switch; a second one is typed while it happens.
      process.kill(relayPid(await project.containerOf(victim)), 'SIGSTOP');
      const inFlight = client.write(id, 'typed-in-flight\n');
      await new Promise((r) => setTimeout(r, 200));
      await kill(victim);
      const during = client.write(id, 'typed-during-switch\n');
      const outcomes = await Promise.allSettled([inFlight, during]);
      await client.write(id, 'typed-after\n');
      await waitFor(() => out.count('typed-after') > 0, SWITCH_TIMEOUT_MS, 'the line typed after');
      // Each write is applied once: none fails as "maybe applied" (LINK_CLOSED, maybeApplied) for
      // the user to guess about, none is applied twice.
      const outcome = (o: PromiseSettledResult<void>) =>
        o.status === 'fulfilled'
          ? 'ok'
          : `${(o.reason as PtyRelayError).code}: ${(o.reason as Error).message}`;
      expect({
        writes: outcomes.map(outcome),
        inFlight: out.count('typed-in-flight'),
        during: out.count('typed-during-switch'),
      }).toEqual({ writes: ['ok', 'ok'], inFlight: 1, during: 1 });
      await client.shutdown(id);
    },
    4 * SWITCH_TIMEOUT_MS,
  );

  it.skipIf(!browserAvailable())(
    'the web page (Chromium) lists a terminal opened through the other relay, and its pane resumes on the other relay when its relay is killed',
    async () => {
      // Opened through relay A directly: relay B may not have linked host1 (its catalog refresh does).
      const opener = new RelayClient({ url: `ws://127.0.0.1:${project.ports.relay}`, token });
      clients.push(opener);
      const ticker = 'i=0; while [ $i -lt 3000 ]; do i=$((i+1)); echo "tick-$i"; sleep 0.1; done';
      const { id } = await opener.spawn({
        host: 'host1',
        command: 'sh',
        args: ['-c', ticker],
        cols: 80,
        rows: 24,
      });
      await opener.dispose();
      const browser = await launchBrowser();
      try {
        const page = await browser.page();
        await page.goto(`http://127.0.0.1:${project.ports.fleet}/#token=${token}`);
        const row = page.locator(`.term-row[data-id="${id}"]`);
        await row.waitFor({ timeout: 30_000 });
        await row.locator('button').first().click();
        await waitForScreen(page, id, (t) => /tick-\d+/.test(t), 15_000);
        const victim = await relayWithClient();
        revived.push(victim);
        const ticksOf = (t: string) => [...t.matchAll(/tick-(\d+)/g)].map((m) => Number(m[1]));
        const atKill = Math.max(...ticksOf(await screenText(page, id)));
        await kill(victim);
        // The pane goes on, fed by the other relay, from where it was: no tick lost or repeated.
        const after = await waitForScreen(
          page,
          id,
          (t) => Math.max(...ticksOf(t)) >= atKill + 10,
          SWITCH_TIMEOUT_MS,
        );
        expect(await relayWithClient()).not.toBe(victim);
        const ticks = ticksOf(after);
        expect(ticks).toEqual(ticks.map((_, i) => ticks[0]! + i));
        expect(await page.locator(`.pane[data-terminal="${id}"]`).count()).toBe(1);
      } finally {
        await browser.close();
        const closer = new RelayClient({ url: `ws://127.0.0.1:${project.ports.fleet}`, token });
        clients.push(closer);
        await closer.shutdown(id, { immediate: true }).catch(() => {});
      }
    },
    4 * SWITCH_TIMEOUT_MS,
  );

  it(
    '`ptyrelay attach` through the balancer goes on on the other relay when its relay is killed; a line typed meanwhile runs once',
    async () => {
      const env = {
        ...process.env,
        PTYRELAY_URL: `ws://127.0.0.1:${project.ports.fleet}`,
        PTYRELAY_TOKEN: token,
      };
      const script = 'stty -echo; echo ready; while IFS= read -r l; do echo "got:$l"; done';
      const opened = await runCli(['open', 'host2', '--', 'sh', '-c', script], env);
      expect(opened.code, opened.stderr).toBe(0);
      const id = opened.stdout.trim();
      const attach = cliInPty(['attach', id], env, { cols: 100, rows: 30 });
      // Lines as the attach's terminal shows them (its own tty adds a CR to the host's CRLF).
      const count = (line: string) => attach.text().split(`got:${line}\r`).length - 1;
      try {
        await attach.wait('ready');
        attach.p.write('before\r');
        await waitFor(() => count('before') === 1, 20_000, 'the line before');
        const victim = await relayWithClient();
        revived.push(victim);
        await kill(victim);
        attach.p.write('during\r');
        await waitFor(() => count('during') === 1, SWITCH_TIMEOUT_MS, 'the line typed during the switch');
        expect(await relayWithClient()).not.toBe(victim);
        attach.p.write('after\r');
        await waitFor(() => count('after') === 1, 20_000, 'the line after');
        expect([count('before'), count('during'), count('after')]).toEqual([1, 1, 1]);
        attach.p.write('\x1d');
        await attach.waitExit();
      } finally {
        if (attach.exited() === undefined) attach.p.kill();
        await runCli(['kill', id, '--now'], env);
      }
      expect(attach.exited()).toBe(0);
      expect(attach.text()).toContain(`detached from ${id}`);
    },
    4 * SWITCH_TIMEOUT_MS,
  );

  it(
    'an AHP client that reconnects through the balancer after its relay was killed gets its channel as a snapshot, and goes on',
    async () => {
      const clientId = 'ahp-fleet';
      const uri = `ahp-terminal:/fleet-${process.pid}`;
      const url = `ws://127.0.0.1:${project.ports.fleet}`;
      const input = (c: TestClient, clientSeq: number, data: string) =>
        c.notify('dispatchAction', { channel: uri, clientSeq, action: { type: 'terminal/input', data } });
      const a = await open(url, { token });
      tests.push(a);
      await a.request('initialize', { protocolVersions: ['0.1.0'], clientId });
      await a.request('createTerminal', {
        channel: uri,
        host: 'host1',
        claim: { kind: 'client', clientId },
        command: 'bash',
        args: ['--norc', '--noprofile'],
      });
      await a.request('subscribe', { channel: uri });
      input(a, 1, 'echo first-$((20+1))\r');
      await a.waitFor(() => a.dataOf(uri).includes('first-21'), 'output before the kill');
      const last = a.envelopes.at(-1)!.serverSeq;
      const victim = await relayWithClient();
      revived.push(victim);
      await kill(victim);
      a.close();
      const b = await open(url, { token });
      tests.push(b);
      const after = await b.request('reconnect', { clientId, lastSeenServerSeq: last, subscriptions: [uri] });
      expect(await relayWithClient()).not.toBe(victim);
      // A relay with no record of the client: the channel comes as a snapshot with what the host holds.
      expect(after.type).toBe('snapshot');
      const state = after.snapshots.find((s: { resource: string }) => s.resource === uri).state;
      const text = state.content
        .map((p: { value?: string; output?: string }) => p.value ?? p.output)
        .join('');
      expect(text).toContain('first-21');
      expect(state.claim).toEqual({ kind: 'client', clientId });
      input(b, 2, 'echo second-$((20+2))\r');
      await b.waitFor(() => b.dataOf(uri).includes('second-22'), 'output on the other relay');
      await b.request('disposeTerminal', { channel: uri }).catch(() => {});
    },
    4 * SWITCH_TIMEOUT_MS,
  );

  it('a token revoked through relay A is refused by relay B within 1 s', async () => {
    const admin = await open(`ws://127.0.0.1:${project.ports.relay}`, { token });
    tests.push(admin);
    const made = await admin.request('ptyrelay/tokenCreate', { scope: 'read', name: 'fleet-viewer' });
    const scoped = made.token as string;
    const onB = await open(`ws://127.0.0.1:${project.ports.relayB}`, { token: scoped });
    tests.push(onB);
    expect((await onB.request('ptyrelay/hosts')).hosts.length).toBeGreaterThan(0);

    const t0 = Date.now();
    await admin.request('ptyrelay/tokenRevoke', { name: 'fleet-viewer' });
    await onB.waitFor(() => onB.closed, 'relay B closing the revoked token', 5000);
    const closedAfter = Date.now() - t0;
    const again = await connect(`ws://127.0.0.1:${project.ports.relayB}`, { token: scoped });
    const refusedAfter = Date.now() - t0;
    if (again instanceof TestClient) again.close();
    expect(again).toEqual({ status: 401 });
    expect(closedAfter).toBeLessThan(REVOKE_WITHIN_MS);
    expect(refusedAfter).toBeLessThan(REVOKE_WITHIN_MS);
  }, 60_000);

  it('`docker-compose down` leaves nothing running', async () => {
    for (const c of clients.splice(0)) await c.dispose();
    const down = await project.compose('down', '--volumes', '--timeout', '0');
    expect(down.code, down.stderr).toBe(0);
    expect(await project.leftovers()).toEqual([]);
  }, 120_000);
});
