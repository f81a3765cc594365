// Summarizes V8 .cpuprofile files (node --cpu-prof): self and inclusive time per function and per
// area (ssh2, node-pty, xterm, node internals, ptyrelay sources…).
//   node bench/analyze-profile.mjs FILE.cpuprofile [--top 25] [--from-ms A --to-ms B]
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';

const args = process.argv.slice(2);
const files = args.filter((a, i) => !a.startsWith('--') && !args[i - 1]?.startsWith('--'));
const opt = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : dflt;
};
const top = opt('--top', 25);
const fromMs = opt('--from-ms', 0);
const toMs = opt('--to-ms', Number.POSITIVE_INFINITY);

function area(url, name) {
  if (!url) return name.startsWith('(') ? name : '(native/builtin)';
  if (url.includes('node_modules/ssh2')) return 'ssh2';
  if (url.includes('node-pty')) return 'node-pty';
  if (url.includes('@xterm')) return 'xterm';
  if (url.includes('pino')) return 'pino';
  if (url.startsWith('node:')) return `node:${url.slice(5).split('/')[0]}`;
  const m = /\/(agent-stub|relay|provider|bench|test)\//.exec(url);
  if (m) return m[1];
  if (url.includes('stub.cjs')) return 'agent-stub (bundle)';
  if (url.includes('bench.mjs')) return 'bench (bundle)';
  return basename(url);
}

for (const file of files) {
  const prof = JSON.parse(readFileSync(file, 'utf8'));
  const byId = new Map(prof.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  // Self time per node from samples and their deltas (restricted to a window when asked).
  const self = new Map();
  let t = 0;
  let total = 0;
  for (let i = 0; i < prof.samples.length; i++) {
    t += prof.timeDeltas[i] / 1000;
    if (t < fromMs || t > toMs) continue;
    const dt = (prof.timeDeltas[i + 1] ?? prof.timeDeltas[i]) / 1000;
    self.set(prof.samples[i], (self.get(prof.samples[i]) ?? 0) + dt);
    total += dt;
  }
  const key = (n) => {
    const cf = n.callFrame;
    const where = cf.url ? `${basename(cf.url)}:${cf.lineNumber + 1}` : '';
    return `${cf.functionName || '(anonymous)'} ${where}`.trim();
  };
  const fnSelf = new Map();
  const fnIncl = new Map();
  const areaSelf = new Map();
  for (const [id, ms] of self) {
    const n = byId.get(id);
    const k = key(n);
    fnSelf.set(k, (fnSelf.get(k) ?? 0) + ms);
    const a = area(n.callFrame.url, n.callFrame.functionName);
    areaSelf.set(a, (areaSelf.get(a) ?? 0) + ms);
    // Inclusive: credit every distinct function on the stack once.
    const seen = new Set();
    for (let cur = id; cur !== undefined; cur = parent.get(cur)) {
      const kk = key(byId.get(cur));
      if (seen.has(kk)) continue;
      seen.add(kk);
      fnIncl.set(kk, (fnIncl.get(kk) ?? 0) + ms);
    }
  }
  const idle = (fnSelf.get('(idle)') ?? 0) + (fnSelf.get('(program)') ?? 0) * 0;
  const busy = total - idle;
  const pct = (ms) => `${((ms / busy) * 100).toFixed(1).padStart(5)}%`;
  const show = (title, m, n) => {
    console.log(`\n${title}`);
    for (const [k, ms] of [...m]
      .filter(([k]) => k !== '(idle)')
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)) {
      console.log(`  ${ms.toFixed(0).padStart(7)} ms ${pct(ms)}  ${k}`);
    }
  };
  console.log(`== ${file}`);
  console.log(
    `window ${total.toFixed(0)} ms, idle ${idle.toFixed(0)} ms, busy ${busy.toFixed(0)} ms (percentages of busy)`,
  );
  show('by area (self time)', areaSelf, 20);
  show(`top ${top} functions by self time`, fnSelf, top);
  show(`top ${top} functions by inclusive time`, fnIncl, top);
}
