import type { AgentReadResult, AgentSendResult } from '../../provider/contract.js';
import { PtyRelayError } from '../../provider/errors.js';
import type { ReadinessConfig } from '../../provider/readiness-config.js';
import {
  agentReadParamsSchema,
  agentSendParamsSchema,
  DEFAULT_AGENT_READ_LINES,
  parseWire,
} from '../../provider/wire/agent-messages.js';
import type { PtySession } from '../session/pty-session.js';
import { logExtent, readLogPage } from './log-read.js';
import { runSend } from './send-waiter.js';

/**
 * The daemon's agent requests: `agentSend` (one at a time per session, the backend's own guard
 * behind the relay's) and `agentRead` (never waits behind a send).
 */
export class AgentRequests {
  private readonly sending = new Set<PtySession>();

  constructor(readonly config: ReadinessConfig) {}

  async send(s: PtySession, params: unknown): Promise<AgentSendResult> {
    const p = parseWire(agentSendParamsSchema, params, 'agentSend');
    if (this.sending.has(s)) {
      throw new PtyRelayError('SEND_IN_PROGRESS', `a send is already waiting on ${s.id}`, { id: s.id });
    }
    this.sending.add(s);
    try {
      return await runSend(s, p, this.config);
    } finally {
      this.sending.delete(s);
    }
  }

  /**
   * By `offset` (lines back from the newest): the screen model's text, with the log's extent. By
   * `from` (absolute line number): the output log (log-read.ts).
   */
  async read(s: PtySession, params: unknown): Promise<AgentReadResult> {
    const p = parseWire(agentReadParamsSchema, params, 'agentRead');
    const count = p.count ?? DEFAULT_AGENT_READ_LINES;
    if (p.from !== undefined) {
      if (p.offset !== undefined)
        throw new PtyRelayError('INVALID_ARGUMENT', 'agentRead: give offset or from, not both');
      return readLogPage(s.id, s.history.sessionLog, p.from, count, this.config.maxReadBytes);
    }
    const page = await s.text(p.offset ?? 0, count, this.config.maxReadBytes);
    return { ...page, ...logExtent(s.history.sessionLog) };
  }
}
