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

  read(s: PtySession, params: unknown): Promise<AgentReadResult> {
    const p = parseWire(agentReadParamsSchema, params, 'agentRead');
    return s.text(p.offset ?? 0, p.count ?? DEFAULT_AGENT_READ_LINES, this.config.maxReadBytes);
  }
}
