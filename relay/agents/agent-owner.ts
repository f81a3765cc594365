/**
 * Who owns agent terminals: one MCP session, one `ptyrelay mcp` process, or an agent name that a
 * reconnecting agent presents again. Ownership is checked by object identity, never by key: the
 * key only lets the service hand the same object back within the grace period.
 */
export class AgentOwner {
  private graceTimer: NodeJS.Timeout | undefined;
  private ended = false;

  /** When its daemons were last told it is connected (TerminalToolService.touch). */
  seenMarkedAt = 0;

  constructor(readonly key: string) {}

  /** The owner's grace ran out (or the service ended): it owns nothing any more. */
  get gone(): boolean {
    return this.ended;
  }

  /** In its grace period: away, terminals kept. */
  get away(): boolean {
    return this.graceTimer !== undefined;
  }

  startGrace(ms: number, expire: () => void): void {
    clearTimeout(this.graceTimer);
    this.graceTimer = setTimeout(() => {
      this.graceTimer = undefined;
      this.ended = true;
      expire();
    }, ms);
    this.graceTimer.unref();
  }

  /** Back within the grace period. */
  revive(): void {
    clearTimeout(this.graceTimer);
    this.graceTimer = undefined;
  }

  end(): void {
    this.revive();
    this.ended = true;
  }
}
