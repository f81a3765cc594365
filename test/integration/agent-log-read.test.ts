/**
 * Agent reads by absolute line (`from`) page through a session's whole output log, beyond the
 * screen model's scrollback (issue 19, readers): a real daemon, a real bash printing numbered
 * lines. Every line comes back exactly once, in order; a read before dropped segments starts
 * where the history begins and says so.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentReadResult } from '../../provider/contract.js';
import { isPtyRelayError } from '../../provider/errors.js';
import { type LocalFixture, OutputCollector, startLocal } from '../support/local-daemon.js';

const KiB = 1024;

async function printLines(fx: LocalFixture, n: number): Promise<string> {
  const out = new OutputCollector(fx.provider);
  const r = await fx.provider.spawn({ cols: 80, rows: 24, command: 'bash', args: ['--norc', '--noprofile'] });
  out.bind(r.id, r.providerSequence.value);
  await fx.provider.write(r.id, `PS1='$ '; seq 1 ${n} | sed 's/^/n/'; echo printed-$((6*7))\r`);
  await out.waitText('printed-42', 60_000);
  out.stop();
  return r.id;
}

/** Pages forward from `from` to the newest line; every page's lines with their absolute numbers. */
async function pageForward(fx: LocalFixture, id: string, from: number) {
  const pages: AgentReadResult[] = [];
  const lines: { line: number; text: string }[] = [];
  let at = from;
  for (;;) {
    const p = await fx.provider.agentRead(id, { from: at, count: 100_000 });
    pages.push(p);
    for (const [i, text] of p.lines.entries()) lines.push({ line: p.lineBegin + i, text });
    if (p.lineEnd >= p.totalLines) break;
    expect(p.lineEnd).toBeGreaterThan(at);
    at = p.lineEnd;
  }
  return { pages, lines };
}

describe('agent reads page through the whole output log', () => {
  let fx: LocalFixture;
  let small: LocalFixture;
  beforeAll(async () => {
    fx = await startLocal();
    // A log of 4 segments of 64 KiB: most of the output is dropped.
    small = await startLocal([
      ...['--history-segment-bytes', String(64 * KiB), '--history-session-bytes', String(256 * KiB)],
      ...['--tail-bytes', String(64 * KiB)],
    ]);
  });
  afterAll(async () => {
    await fx?.cleanup();
    await small?.cleanup();
  });

  it('reads 200,000 numbered lines from the start of the log to its end, each once and in order', async () => {
    const N = 200_000;
    const id = await printLines(fx, N);
    // The model keeps 10,000 lines: reads by offset do not reach the first ones.
    const byOffset = await fx.provider.agentRead(id, { offset: 0, count: 50 });
    expect(byOffset.totalLines).toBeLessThan(N);
    expect(byOffset.logLines).toBeGreaterThan(N);
    expect(byOffset.historyStartLine).toBe(0);

    const { pages, lines } = await pageForward(fx, id, 0);
    expect(pages.length).toBeGreaterThan(5); // the 256 KiB bound cut them
    expect(pages.slice(0, -1).every((p) => p.truncated)).toBe(true);
    expect(lines.map((l) => l.line)).toEqual(Array.from({ length: lines.length }, (_, i) => i));
    const numbered = lines.filter((l) => /^n\d+$/.test(l.text));
    expect(numbered.map((l) => Number(l.text.slice(1)))).toEqual(Array.from({ length: N }, (_, i) => i + 1));
    // Consecutive: line numbers and printed numbers advance together.
    const shift = numbered[0].line - 1;
    expect(numbered.every((l) => l.line - shift === Number(l.text.slice(1)))).toBe(true);
    // Plain text: no escape sequence survived (the prompt line included).
    expect(lines.some((l) => l.text.includes('\x1b'))).toBe(false);
    expect(lines.some((l) => l.text === 'printed-42')).toBe(true);

    // For plain line output, offset line k is log line logLines - 1 - k.
    const logEnd = byOffset.logLines as number;
    const tail = await fx.provider.agentRead(id, { from: logEnd - 50, count: 50 });
    expect(tail.lines).toEqual(byOffset.lines);

    const both = await fx.provider.agentRead(id, { offset: 1, from: 0 }).catch((e: unknown) => e);
    expect(isPtyRelayError(both, 'INVALID_ARGUMENT'), String(both)).toBe(true);
  }, 180_000);

  it('a read before dropped segments starts where the history begins and says so', async () => {
    const N = 100_000;
    const id = await printLines(small, N);
    const first = await small.provider.agentRead(id, { from: 0, count: 100 });
    const start = first.historyStartLine as number;
    expect(start).toBeGreaterThan(N / 2);
    expect(first.lineBegin).toBe(start);
    expect(first.lines).toHaveLength(100);
    const { lines } = await pageForward(small, id, start);
    const numbered = lines.filter((l) => /^n\d+$/.test(l.text));
    const shift = numbered[0].line - Number(numbered[0].text.slice(1));
    expect(numbered.every((l) => l.line - shift === Number(l.text.slice(1)))).toBe(true);
    expect(Number(numbered[numbered.length - 1].text.slice(1))).toBe(N);
    // The log keeps 3-4 segments of 64 KiB of "nNNNNN\r\n" lines (whole ones only).
    expect(numbered.length).toBeGreaterThan((3 * 64 * KiB - 64 * KiB) / 9);
    expect(numbered.length).toBeLessThanOrEqual((256 * KiB) / 8);
    expect(lines.map((l) => l.line)).toEqual(Array.from({ length: lines.length }, (_, i) => start + i));
  }, 180_000);
});
