/**
 * Runs `fire` once activity pauses for `quietMs`, or `maxMs` after the first activity at the
 * latest. For work that may trail the output it comes with (the screen model's feed, the disk
 * log's writes): typing at any key rate then wakes that work once per pause, not every few keys,
 * and never between two keystrokes of a burst shorter than `maxMs`.
 *
 * Activity while armed costs a timer refresh, done by the thread that is awake for the activity
 * anyway: the timer itself wakes the loop only when it fires.
 */
export class QuietTimer {
  private timer: NodeJS.Timeout | undefined;
  private startedAt = 0;

  constructor(
    private readonly quietMs: number,
    private readonly maxMs: number,
    private readonly fire: () => void,
    /** The timer alone does not keep the process alive. */
    private readonly unref = false,
  ) {}

  get armed(): boolean {
    return this.timer !== undefined;
  }

  /** Activity: arms the timer, or moves it to `quietMs` from now (never past `maxMs` from arming). */
  poke(): void {
    const t = Date.now();
    if (this.timer === undefined) {
      this.startedAt = t;
      this.timer = setTimeout(this.onFire, this.quietMs);
      if (this.unref) this.timer.unref();
      return;
    }
    if (t + this.quietMs <= this.startedAt + this.maxMs) this.timer.refresh();
  }

  cancel(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private readonly onFire = (): void => {
    this.timer = undefined;
    this.fire();
  };
}
