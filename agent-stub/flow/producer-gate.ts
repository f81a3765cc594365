/**
 * Pauses a producer while any reason holds it (explicit pause, model backlog, a consumer's
 * credit window). Pausing node-pty stops reading the PTY, so the writing program blocks in the
 * kernel instead of growing a queue here.
 */
export class ProducerGate {
  private readonly reasons = new Set<string>();
  private open = false;

  constructor(
    private readonly pause: () => void,
    private readonly resume: () => void,
  ) {}

  hold(reason: string): void {
    if (this.open || this.reasons.has(reason)) return;
    this.reasons.add(reason);
    if (this.reasons.size === 1) this.pause();
  }

  release(reason: string): void {
    if (!this.reasons.delete(reason)) return;
    if (this.reasons.size === 0) this.resume();
  }

  releaseAll(): void {
    if (this.reasons.size === 0) return;
    this.reasons.clear();
    this.resume();
  }

  /**
   * Resume and never pause again: the program has exited and what is left in the PTY is bounded
   * by the kernel's buffer, so it is read out whatever the consumers' credit says.
   */
  openForGood(): void {
    this.open = true;
    this.releaseAll();
  }

  get paused(): boolean {
    return this.reasons.size > 0;
  }

  has(reason: string): boolean {
    return this.reasons.has(reason);
  }
}
