import type { AgentCommandsResult, AgentReadResult, AgentSendResult } from '../../provider/contract.js';
import { PtyRelayError } from '../../provider/errors.js';
import type { ReadinessConfig } from '../../provider/readiness-config.js';
import {
  agentReadParamsSchema,
  agentSendParamsSchema,
  DEFAULT_AGENT_READ_LINES,
  parseWire,
} from '../../provider/wire/agent-messages.js';
import { commandsParamsSchema, DEFAULT_COMMANDS_COUNT } from '../../provider/wire/command-messages.js';
import { describeCommand } from '../history/command-records.js';
import type { PtySession } from '../session/pty-session.js';
import { logExtent, readCommandPage, readLogPage } from './log-read.js';
import { runSend } from './send-waiter.js';

/**
 * The daemon's agent requests: `agentSend` (one at a time per session, the backend's own guard
 * behind the relay's), `agentRead` (never waits behind a send) and `commands`.
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
    if (p.command !== undefined) {
      if (p.offset !== undefined)
        throw new PtyRelayError('INVALID_ARGUMENT', 'agentRead: give offset or command, not both');
      const rec = s.commands.get(p.command);
      if (!rec)
        throw new PtyRelayError('NOT_FOUND', `${s.id} has no command ${p.command}`, {
          id: s.id,
          command: p.command,
        });
      return readCommandPage(s.id, s.history.sessionLog, rec, s.outputPoint(), {
        from: p.from,
        count,
        maxBytes: this.config.maxReadBytes,
      });
    }
    if (p.from !== undefined) {
      if (p.offset !== undefined)
        throw new PtyRelayError('INVALID_ARGUMENT', 'agentRead: give offset or from, not both');
      return readLogPage(s.id, s.history.sessionLog, p.from, count, this.config.maxReadBytes);
    }
    const page = await s.text(p.offset ?? 0, count, this.config.maxReadBytes);
    return { ...page, ...logExtent(s.history.sessionLog) };
  }

  /** The session's command records, newest first (shell integration; none without it). */
  commands(s: PtySession, params: unknown): AgentCommandsResult {
    const p = parseWire(commandsParamsSchema, params, 'commands');
    const head = s.outputPoint();
    return {
      available: s.supportsCommandDetection,
      commands: s.commands.newest(p.count ?? DEFAULT_COMMANDS_COUNT).map((r) => describeCommand(r, head)),
      total: s.commands.total,
    };
  }
}
