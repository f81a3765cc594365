import type { PtyRelayError } from '../../provider/errors.js';
import {
  DEFAULT_READINESS,
  type ReadinessConfig,
  resolveReadinessConfig,
} from '../../provider/readiness-config.js';
import { configError, integer, type Obj, object, onlyKeys } from '../core/config-validate.js';
import { DEFAULT_OWNER_GRACE_MS, DEFAULT_SEND_TIMEOUT_MS } from './terminal-tool-service.js';

/** The relay config's `agents` section (docs/config.md). */
export interface AgentsConfig extends ReadinessConfig {
  /** How long an MCP session's terminals outlive it. */
  ownerGraceMs: number;
  /** Wait of a send that names no timeout. */
  defaultTimeoutMs: number;
}

const DAY_MS = 24 * 60 * 60 * 1000;
const KEYS = ['ownerGraceMs', 'defaultTimeoutMs', ...Object.keys(DEFAULT_READINESS)];

/** Validates `agents` against the ring each session retains; messages name the field. */
export function validateAgentsConfig(raw: unknown, retainedBytes: number): AgentsConfig {
  const o: Obj = object(raw, 'agents');
  onlyKeys(o, KEYS, 'agents');
  const given: Partial<ReadinessConfig> = {};
  for (const k of Object.keys(DEFAULT_READINESS) as (keyof ReadinessConfig)[]) {
    const v = integer(o, k, 'agents', 1, Number.MAX_SAFE_INTEGER);
    if (v !== undefined) given[k] = v;
  }
  let readiness: ReadinessConfig;
  try {
    readiness = resolveReadinessConfig(given, retainedBytes, 'agents.');
  } catch (err) {
    // The stub says "retained bytes"; here that is limits.ringBytes.
    throw configError((err as PtyRelayError).message.replace('the retained bytes', 'limits.ringBytes'));
  }
  return {
    ...readiness,
    ownerGraceMs: integer(o, 'ownerGraceMs', 'agents', 0, 7 * DAY_MS, DEFAULT_OWNER_GRACE_MS),
    defaultTimeoutMs: integer(o, 'defaultTimeoutMs', 'agents', 1, DAY_MS, DEFAULT_SEND_TIMEOUT_MS),
  };
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
