/**
 * Round trips a fresh relay process puts through its first SSH link before anyone types.
 *
 * V8 optimizes a function once it has run for a while (provider/v8-tier-up.ts), on a compiler
 * thread of its own. In a fresh relay that happens to ssh2's transport (`onWrite`, `encrypt`)
 * after about 800 packets each way: at typing speed, a few hundred keys into the user's first
 * session. On a 2-core host the compiler thread then holds the core the echo's next hop (the
 * PTY's `cat`, the tty's kworker) is woken on, and the echoes at two points of the run come
 * 1–2 ms late while the other core idles (`--trace-opt` and a scheduler trace of the typing
 * bench: docs/benchmarks.md, "Issue 17, fifteenth round" and "sixteenth round"). Stub pings are
 * channel data both ways, the same SSH message as a keystroke and its echo, so a run of them gets
 * those compiles done while the link is still idle. Typing bench, 8 alternated runs each way:
 * echoes over 1.2 ms at the compile pair (keys ~262 and ~287 of the 2 ms bursts) 13 without, 1
 * with; one-at-a-time p99 2.08–4.35 ms (median 2.7) against 2.48–3.68 ms (median 3.05).
 *
 * One ping at a time, so each is one SSH packet each way (frames of one turn share a write), and
 * a long or busy link carries few of them: the run ends after {@link WARM_UP_MAX_MS} (on a 50 ms
 * link, 40 pings). It also ends once the link carries input (whoever types warms the path with
 * every key, and their keys should not share the link with pings), and once the process has sent
 * {@link WARM_UP_PINGS} in all (compiled code serves every later link of the process).
 */
export const WARM_UP_PINGS = 1000;
/** The run ends after this long, however many pings it sent. */
export const WARM_UP_MAX_MS = 2000;

/** Pings a process may still send for warm-ups (shared by its links). */
export interface WarmUpBudget {
  left: number;
}

/** The budget of this process (one per relay). */
export const processWarmUpBudget: WarmUpBudget = { left: WARM_UP_PINGS };

/** Why a warm-up ended. */
export type WarmUpEnd = 'done' | 'busy' | 'time' | 'closed';

export interface WarmUpResult {
  pings: number;
  ms: number;
  end: WarmUpEnd;
  /** Why a ping failed on a link that was still open (not expected). */
  error?: string;
}

/** What a warm-up needs of a stub link (StubClient). */
export interface WarmableLink {
  readonly isOpen: boolean;
  /** Input frames the link sent so far. */
  readonly inputFrames: number;
  /** Resolves with the round trip in ms; rejects when the link closes first. */
  ping(): Promise<number>;
}

/** Sends pings one at a time on `link` until one of the ends above; never rejects. */
export function warmUpLink(
  link: WarmableLink,
  budget: WarmUpBudget = processWarmUpBudget,
  now: () => number = () => performance.now(),
): Promise<WarmUpResult> {
  const t0 = now();
  const inputsBefore = link.inputFrames;
  let pings = 0;
  // One timer for the run (a ping that never comes back), and a small step per pong: a loop with
  // a timer per ping was itself a 24 ms compile job on V8's thread.
  return new Promise((resolve) => {
    let done = false;
    const end = (why: WarmUpEnd, err?: unknown) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve({
        pings,
        ms: Math.round(now() - t0),
        end: why,
        ...(err === undefined ? {} : { error: String(err) }),
      });
    };
    const timer = setTimeout(() => end('time'), WARM_UP_MAX_MS);
    timer.unref();
    const lost = (err: unknown) => end('closed', link.isOpen ? err : undefined);
    const next = () => {
      if (done) return;
      if (budget.left <= 0) return end('done');
      if (!link.isOpen) return end('closed');
      if (link.inputFrames !== inputsBefore) return end('busy');
      if (now() - t0 >= WARM_UP_MAX_MS) return end('time');
      budget.left--;
      pings++;
      link.ping().then(next, lost);
    };
    next();
  });
}
