import * as z from 'zod/mini';

/**
 * Schemas of everything the page reads from the relay's WebSocket (docs/relay-client.md,
 * docs/web.md). Data from the wire is parsed, never cast; unknown fields are ignored.
 */

export const RpcErrorSchema = z.object({
  code: z.number(),
  message: z.string(),
  data: z.optional(z.looseObject({ code: z.optional(z.string()) })),
});

export const RpcMessageSchema = z.union([
  z.object({ id: z.number(), result: z.unknown() }),
  z.object({ id: z.nullable(z.number()), error: RpcErrorSchema }),
  z.object({ method: z.string(), params: z.optional(z.unknown()) }),
]);

export const LinkStateSchema = z.discriminatedUnion('state', [
  z.object({ state: z.literal('idle') }),
  z.object({ state: z.literal('connecting') }),
  z.object({ state: z.literal('connected') }),
  z.object({
    state: z.literal('reconnecting'),
    attempt: z.number(),
    nextInMs: z.number(),
    lastError: z.optional(z.string()),
  }),
  z.object({ state: z.literal('lost'), reason: z.string() }),
]);
export type LinkState = z.infer<typeof LinkStateSchema>;

export const HostsResultSchema = z.object({
  hosts: z.array(z.object({ name: z.string(), state: LinkStateSchema })),
});
export const LinkStateEventSchema = z.object({ host: z.string(), state: LinkStateSchema });

export const TerminalSummarySchema = z.object({
  id: z.string(),
  host: z.string(),
  title: z.string(),
  name: z.optional(z.string()),
  cwd: z.optional(z.string()),
  owner: z.string(),
  exitCode: z.optional(z.number()),
  lastCommand: z.optional(
    z.object({
      commandLine: z.string(),
      running: z.boolean(),
      exitCode: z.optional(z.number()),
      durationMs: z.optional(z.number()),
    }),
  ),
  bytesPerSec: z.number(),
  bells: z.number(),
  createdAt: z.number(),
});
export type TerminalSummary = z.infer<typeof TerminalSummarySchema>;
export const OverviewSchema = z.object({ terminals: z.array(TerminalSummarySchema) });

export const SnapshotSchema = z.object({
  data: z.string(),
  cols: z.number(),
  rows: z.number(),
  seq: z.number(),
  alternateScreen: z.optional(z.boolean()),
});
export type Snapshot = z.infer<typeof SnapshotSchema>;

export const AttachResultSchema = z.object({
  id: z.string(),
  incarnationId: z.string(),
  cols: z.number(),
  rows: z.number(),
  providerSequence: z.object({ value: z.number(), generation: z.enum(['continued', 'reset']) }),
  snapshot: z.optional(SnapshotSchema),
  exited: z.optional(z.object({ exitCode: z.number(), signal: z.optional(z.string()) })),
  sessionExpired: z.optional(z.boolean()),
  replayFromSeq: z.optional(z.number()),
  replayBytes: z.optional(z.number()),
});
export type AttachResult = z.infer<typeof AttachResultSchema>;

export const ExitEventSchema = z.object({
  id: z.string(),
  incarnationId: z.string(),
  exitCode: z.number(),
  signal: z.optional(z.string()),
});

export const BackgroundEventSchema = z.discriminatedUnion('type', [
  z.object({
    id: z.string(),
    incarnationId: z.string(),
    type: z.literal('backgroundMarker'),
    background: z.boolean(),
    seq: z.number(),
    snapshot: z.optional(SnapshotSchema),
  }),
  z.object({
    id: z.string(),
    incarnationId: z.string(),
    type: z.literal('dataGap'),
    droppedBytes: z.number(),
    fromSeq: z.number(),
    toSeq: z.number(),
  }),
  z.looseObject({ id: z.string(), incarnationId: z.string(), type: z.literal('fact'), seq: z.number() }),
]);
export type BackgroundEvent = z.infer<typeof BackgroundEventSchema>;

export const ReattachEventSchema = z.object({
  id: z.string(),
  incarnationId: z.string(),
  generation: z.enum(['continued', 'reset']),
  snapshot: z.optional(SnapshotSchema),
  sessionExpired: z.optional(z.boolean()),
});
export type ReattachEvent = z.infer<typeof ReattachEventSchema>;

export const InputAckSchema = z.object({
  upTo: z.number(),
  failed: z.optional(
    z.array(z.object({ inputSeq: z.number(), error: z.object({ code: z.string(), message: z.string() }) })),
  ),
});

export const HelloResultSchema = z.object({
  serverInstanceId: z.string(),
  input: z.enum(['fresh', 'known']),
  inputOrigin: z.optional(z.boolean()),
});
