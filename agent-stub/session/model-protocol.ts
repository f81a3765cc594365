import type { AgentReadResult, ScreenSnapshot } from '../../provider/contract.js';

/** Messages between a session and the screen-model worker thread. */
export type ToModel =
  | { kind: 'open'; sid: string; cols: number; rows: number; scrollback: number }
  | { kind: 'data'; sid: string; seq: number; data: Uint8Array }
  | { kind: 'resize'; sid: string; cols: number; rows: number }
  | { kind: 'snapshot'; sid: string; req: number; scrollbackRows?: number }
  | { kind: 'clear'; sid: string }
  | { kind: 'text'; sid: string; req: number; offset: number; count: number; maxBytes: number }
  | { kind: 'close'; sid: string };

export type FromModel =
  | { kind: 'snapshot'; sid: string; req: number; snapshot: ScreenSnapshot }
  | { kind: 'progress'; sid: string; seq: number }
  | { kind: 'text'; sid: string; req: number; page: AgentReadResult };

/** The worker is the same bundle file started with this workerData marker. */
export const MODEL_WORKER_MARKER = 'ptyrelay-screen-model';
