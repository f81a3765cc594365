import * as z from 'zod/mini';
import type { PtyRelayError } from '../../provider/errors.js';
import {
  DEFAULT_READINESS,
  type ReadinessConfig,
  resolveReadinessConfig,
} from '../../provider/readiness-config.js';
import { type ConfigProblem, integer, settings } from '../core/config-validate.js';
import { DEFAULT_OWNER_GRACE_MS, DEFAULT_SEND_TIMEOUT_MS } from './terminal-tool-service.js';

/** The relay config's `agents` section (docs/config.md). */
export interface AgentsConfig extends ReadinessConfig {
  /** How long an MCP session's terminals outlive it. */
  ownerGraceMs: number;
  /** Wait of a send that names no timeout. */
  defaultTimeoutMs: number;
}

const DAY_MS = 24 * 60 * 60 * 1000;
const readinessValue = (key: keyof ReadinessConfig) =>
  z._default(integer(1, Number.MAX_SAFE_INTEGER), DEFAULT_READINESS[key]);

/**
 * The `agents` section, defaults filled in. How the readiness values relate to each other and to
 * the ring each session retains is {@link agentsProblem}'s (the stub's own rules).
 */
export const agentsConfigSchema = settings({
  ownerGraceMs: z._default(integer(0, 7 * DAY_MS), DEFAULT_OWNER_GRACE_MS),
  defaultTimeoutMs: z._default(integer(1, DAY_MS), DEFAULT_SEND_TIMEOUT_MS),
  pollIntervalMs: readinessValue('pollIntervalMs'),
  promptGraceMs: readinessValue('promptGraceMs'),
  inferredIdleMs: readinessValue('inferredIdleMs'),
  maxReadBytes: readinessValue('maxReadBytes'),
}) satisfies z.ZodMiniType<AgentsConfig>;

/**
 * What breaks the stub's readiness rules (resolveReadinessConfig) in `agents`, where the bytes a
 * session retains are `limits.ringBytes`: the key and the message, or undefined.
 */
export function agentsProblem(agents: AgentsConfig, ringBytes: number): ConfigProblem | undefined {
  try {
    resolveReadinessConfig(agents, ringBytes);
    return undefined;
  } catch (err) {
    const field = String((err as PtyRelayError).details?.field);
    // The stub says "the retained bytes"; here that is limits.ringBytes.
    const message = (err as Error).message.slice(field.length + 1);
    return { path: ['agents', field], message: message.replace('the retained bytes', 'limits.ringBytes') };
  }
}

/** Daemon flags that carry the readiness settings to the daemons this relay starts. */
export function readinessDaemonArgs(c: ReadinessConfig): string[] {
  return [
    ...['--agent-poll-ms', String(c.pollIntervalMs)],
    ...['--agent-prompt-grace-ms', String(c.promptGraceMs)],
    ...['--agent-idle-ms', String(c.inferredIdleMs)],
    ...['--max-read-bytes', String(c.maxReadBytes)],
  ];
}
