/** One figure of the bench: a ptyrelay measurement, usually next to its reference from the same run. */
export interface Row {
  scenario: string;
  metric: string;
  unit: string;
  /** What was measured on the ptyrelay side (e.g. `SshPtyProvider`). */
  subject: string;
  /** null: not measured (not available yet, or the measurement failed; see note). */
  value: number | null;
  reference?: { label: string; value: number | null };
  better: 'higher' | 'lower';
  target?: { text: string; met: boolean | null };
  /**
   * A target's criterion applied to the reference against a second copy of itself in the same run
   * (an A/A control, e.g. OpenSSH against OpenSSH): whether the machine alone would have missed it.
   */
  control?: { text: string; held: boolean | null };
  note?: string;
  /** Leave out of results.svg (correctness counts, not performance). */
  noPlot?: boolean;
}

export interface ScenarioResult {
  name: string;
  rows: Row[];
  /** Raw samples and anything else worth keeping in results.json. */
  details: Record<string, unknown>;
  errors: string[];
  durationMs: number;
}

/** value / reference, or null when either side is missing. */
export function ratio(r: Row): number | null {
  const ref = r.reference?.value;
  if (r.value === null || ref === null || ref === undefined || ref === 0) return null;
  return r.value / ref;
}

/** > 1 means ptyrelay does better than the reference, whatever the direction of the metric. */
export function advantage(r: Row): number | null {
  const q = ratio(r);
  if (q === null || q <= 0) return null;
  return r.better === 'higher' ? q : 1 / q;
}

export function fmt(v: number | null | undefined, unit = ''): string {
  if (v === null || v === undefined || Number.isNaN(v)) return '—';
  const abs = Math.abs(v);
  const digits = Number.isInteger(v) || abs >= 100 ? 0 : abs >= 10 ? 1 : abs >= 1 ? 2 : 3;
  return `${v.toFixed(digits)}${unit ? ` ${unit}` : ''}`;
}

function targetCell(r: Row): string {
  if (r.control) {
    const mark = r.control.held === null ? '?' : r.control.held ? 'held' : 'failed';
    return `A/A control: ${r.control.text} ${mark}`;
  }
  if (!r.target) return '';
  const mark = r.target.met === null ? '?' : r.target.met ? 'met' : 'MISSED';
  return `${r.target.text} ${mark}`;
}

/** The results table as fixed-width text (terminal) or Markdown. */
export function renderTable(rows: Row[], style: 'text' | 'markdown'): string {
  const header = ['Scenario', 'Metric', 'ptyrelay', 'Reference', 'Ratio', 'Target'];
  const body = rows.map((r) => {
    const q = ratio(r);
    const subject = `${fmt(r.value, r.unit)} (${r.subject})${r.note && r.value === null ? ` ${r.note}` : ''}`;
    const ref = r.reference ? `${fmt(r.reference.value, r.unit)} (${r.reference.label})` : '';
    return [r.scenario, r.metric, subject, ref, q === null ? '' : `${q.toFixed(2)}×`, targetCell(r)];
  });
  if (style === 'markdown') {
    const esc = (s: string) => s.replace(/\|/g, '\\|');
    return [
      `| ${header.join(' | ')} |`,
      `|${header.map(() => '---').join('|')}|`,
      ...body.map((cells) => `| ${cells.map(esc).join(' | ')} |`),
    ].join('\n');
  }
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join('  ');
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...body.map(line)].join('\n');
}

const SVG_WIDTH = 1000;
const LABEL_WIDTH = 430;
const BAR_HEIGHT = 18;
const ROW_GAP = 8;
const TOP = 60;
const BOTTOM = 50;
const RIGHT_PAD = 150;

function escXml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/**
 * Horizontal bars of ptyrelay's advantage over each reference on a log axis centred on 1
 * (parity): right of the line ptyrelay does better, left it does worse.
 */
export function renderSvg(rows: Row[], title: string): string {
  const plotted = rows
    .filter((r) => !r.noPlot)
    .map((r) => ({ r, adv: advantage(r), q: ratio(r) }))
    .filter((x): x is { r: Row; adv: number; q: number } => x.adv !== null && x.q !== null);
  const logs = plotted.map((x) => Math.log10(x.adv));
  const lo = Math.min(-1, Math.floor(Math.min(0, ...logs)));
  const hi = Math.max(1, Math.ceil(Math.max(0, ...logs)));
  const plotW = SVG_WIDTH - LABEL_WIDTH - RIGHT_PAD;
  const x = (v: number) => LABEL_WIDTH + ((Math.log10(v) - lo) / (hi - lo)) * plotW;
  const height = TOP + plotted.length * (BAR_HEIGHT + ROW_GAP) + BOTTOM;
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="${escXml(title)}" width="${SVG_WIDTH}" height="${height}" viewBox="0 0 ${SVG_WIDTH} ${height}" font-family="sans-serif" font-size="12">`,
    `<title>${escXml(title)}</title>`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="${SVG_WIDTH / 2}" y="22" text-anchor="middle" font-size="15" font-weight="bold">${escXml(title)}</text>`,
    `<text x="${SVG_WIDTH / 2}" y="40" text-anchor="middle" fill="#555">ptyrelay relative to its reference (log scale; right of 1× = ptyrelay better, left = worse)</text>`,
  ];
  const axisY = TOP + plotted.length * (BAR_HEIGHT + ROW_GAP);
  for (let e = lo; e <= hi; e++) {
    for (const m of [1, 2, 5]) {
      const v = m * 10 ** e;
      if (Math.log10(v) > hi + 1e-9) continue;
      const xv = x(v);
      out.push(
        `<line x1="${xv.toFixed(1)}" y1="${TOP - 6}" x2="${xv.toFixed(1)}" y2="${axisY}" stroke="${v === 1 ? '#000' : '#ddd'}" stroke-width="${v === 1 ? 1.5 : 1}"/>`,
        `<text x="${xv.toFixed(1)}" y="${axisY + 16}" text-anchor="middle" fill="#333">${v >= 1 ? v : v.toPrecision(1)}×</text>`,
      );
    }
  }
  plotted.forEach(({ r, adv, q }, i) => {
    const y = TOP + i * (BAR_HEIGHT + ROW_GAP);
    const x1 = x(1);
    const x2 = x(Math.min(10 ** hi, Math.max(10 ** lo, adv)));
    const color = adv >= 1 ? '#2e8b57' : adv >= 0.5 ? '#e69f00' : '#c0392b';
    const label = `${r.scenario}: ${r.metric} — ${r.subject} vs ${r.reference!.label}`;
    out.push(
      `<text x="${LABEL_WIDTH - 8}" y="${y + BAR_HEIGHT - 5}" text-anchor="end">${escXml(label.length > 70 ? `${label.slice(0, 69)}…` : label)}</text>`,
      `<rect x="${Math.min(x1, x2).toFixed(1)}" y="${y}" width="${Math.max(1, Math.abs(x2 - x1)).toFixed(1)}" height="${BAR_HEIGHT}" fill="${color}"/>`,
      `<text x="${(Math.max(x1, x2) + 6).toFixed(1)}" y="${y + BAR_HEIGHT - 5}" fill="#333">${escXml(`${q.toFixed(2)}× ${r.unit} (${r.better} is better)`)}</text>`,
    );
  });
  out.push(
    `<text x="${LABEL_WIDTH + plotW / 2}" y="${height - 12}" text-anchor="middle" fill="#555">advantage = ratio for higher-is-better metrics, 1/ratio for lower-is-better</text>`,
    '</svg>',
    '',
  );
  return out.join('\n');
}
