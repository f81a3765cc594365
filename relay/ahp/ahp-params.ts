import { PtyRelayError } from '../../provider/errors.js';
import type { TerminalClaim } from '../service/terminal-registry.js';
import type { CreateTerminalParams, TerminalClientAction } from './types.js';

/** Largest terminal dimension accepted from a client. */
export const MAX_DIMENSION = 10_000;

function invalid(message: string): PtyRelayError {
  return new PtyRelayError('INVALID_ARGUMENT', message);
}

function optString(p: Record<string, unknown>, key: string): string | undefined {
  const v = p[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw invalid(`${key} must be a string`);
  return v;
}

function optDimension(p: Record<string, unknown>, key: string): number | undefined {
  const v = p[key];
  if (v === undefined || v === null) return undefined;
  if (!Number.isInteger(v) || (v as number) < 1 || (v as number) > MAX_DIMENSION) {
    throw invalid(`${key} must be an integer 1-${MAX_DIMENSION}`);
  }
  return v as number;
}

/** Validates an AHP TerminalClaim. */
export function parseClaim(v: unknown, field = 'claim'): TerminalClaim {
  const c = v as Record<string, unknown> | null;
  if (!c || typeof c !== 'object') throw invalid(`${field} is required`);
  if (c.kind === 'client') {
    if (typeof c.clientId !== 'string' || !c.clientId) throw invalid(`${field}.clientId must be a string`);
    return { kind: 'client', clientId: c.clientId };
  }
  if (c.kind === 'session') {
    if (typeof c.session !== 'string' || !c.session) throw invalid(`${field}.session must be a string`);
    const claim: TerminalClaim = { kind: 'session', session: c.session };
    if (c.turnId !== undefined) {
      if (typeof c.turnId !== 'string') throw invalid(`${field}.turnId must be a string`);
      claim.turnId = c.turnId;
    }
    if (c.toolCallId !== undefined) {
      if (typeof c.toolCallId !== 'string') throw invalid(`${field}.toolCallId must be a string`);
      claim.toolCallId = c.toolCallId;
    }
    return claim;
  }
  throw invalid(`${field}.kind must be 'client' or 'session'`);
}

/** Validates `createTerminal` params. */
export function parseCreateTerminal(p: Record<string, unknown>): CreateTerminalParams {
  const out: CreateTerminalParams = { claim: parseClaim(p.claim) };
  const strings = ['channel', 'name', 'cwd', 'host', 'command'] as const;
  for (const k of strings) {
    const v = optString(p, k);
    if (v !== undefined) out[k] = v;
  }
  const cols = optDimension(p, 'cols');
  const rows = optDimension(p, 'rows');
  if (cols !== undefined) out.cols = cols;
  if (rows !== undefined) out.rows = rows;
  if (p.args !== undefined && p.args !== null) {
    if (!Array.isArray(p.args) || p.args.some((a) => typeof a !== 'string')) {
      throw invalid('args must be an array of strings');
    }
    if (out.command === undefined) throw invalid('args needs command');
    out.args = p.args as string[];
  }
  return out;
}

/**
 * Validates a client-dispatched terminal action. Returns undefined for action types clients may
 * not dispatch (ignored, as AHP requires for unknown types); throws INVALID_ARGUMENT for a
 * known type with a malformed payload.
 */
export function parseClientAction(a: unknown): TerminalClientAction | undefined {
  const action = a as Record<string, unknown> | null;
  if (!action || typeof action !== 'object' || typeof action.type !== 'string') return undefined;
  switch (action.type) {
    case 'terminal/input': {
      if (typeof action.data !== 'string') throw invalid('terminal/input needs data (a string)');
      return { type: 'terminal/input', data: action.data };
    }
    case 'terminal/resized': {
      const cols = optDimension(action, 'cols');
      const rows = optDimension(action, 'rows');
      if (cols === undefined || rows === undefined) throw invalid('terminal/resized needs cols and rows');
      return { type: 'terminal/resized', cols, rows };
    }
    case 'terminal/claimed':
      return { type: 'terminal/claimed', claim: parseClaim(action.claim) };
    case 'terminal/titleChanged': {
      if (typeof action.title !== 'string') throw invalid('terminal/titleChanged needs title (a string)');
      return { type: 'terminal/titleChanged', title: action.title };
    }
    case 'terminal/cleared':
      return { type: 'terminal/cleared' };
    default:
      return undefined;
  }
}
