import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { AgentReadResult, AgentSendResult } from '../../provider/contract.js';
import { isPtyRelayError } from '../../provider/errors.js';
import {
  AGENT_AWAITING,
  DEFAULT_AGENT_READ_LINES,
  MAX_AGENT_READ_LINES,
  MAX_AGENT_TIMEOUT_MS,
} from '../../provider/wire/agent-messages.js';
import {
  canRead,
  canSeeHost,
  type Grant,
  needCreate,
  needRead,
  needWrite,
  STARTUP_GRANT,
} from '../core/grant.js';
import type { InputAudit } from '../tokens/input-audit.js';
import type { AgentOwner } from './agent-owner.js';
import { AWAITING_TEXT, END_REASON_TEXT, sendMeaning } from './end-reason-text.js';
import type { TerminalToolService } from './terminal-tool-service.js';

const SEND_DESCRIPTION = `Types text into an agent terminal (newlines are Enter; a final Enter is added unless enter is false) and waits until one of four end reasons, returned as "reason":
- stdin_read: ${END_REASON_TEXT.stdin_read}
- inferred_idle: ${END_REASON_TEXT.inferred_idle}
- timeout: ${END_REASON_TEXT.timeout}
- session_exit: ${END_REASON_TEXT.session_exit}
With stdin_read, "awaiting" says what the input wait is for, decided on the host:
- prompt: ${AWAITING_TEXT.prompt}
- password: ${AWAITING_TEXT.password}
- pager: ${AWAITING_TEXT.pager}
- program: ${AWAITING_TEXT.program}
- unknown: ${AWAITING_TEXT.unknown}
Empty text types nothing and waits for the next end reason. "output" is what the terminal printed during this send as plain text, at most 256 KiB: when "truncated" is true only the newest part is shown; page back with terminal_read. One send at a time per terminal (SEND_IN_PROGRESS otherwise); terminal_read and terminal_signal work while a send waits.`;

const READ_DESCRIPTION = `Reads a page of an agent terminal's text (its screen and scrollback, at least the last 10,000 lines) as plain lines, oldest first. "offset" counts lines back from the newest line (0 = the page ends with the newest line); the page covers [lineBegin, lineEnd) in that same back-from-newest count. To page further back, call again with offset = lineEnd; stop when lineEnd equals totalLines. A page holds at most "count" lines (default ${DEFAULT_AGENT_READ_LINES}) and 256 KiB ("truncated" is true when the byte bound cut it). The whole output history (the terminal's log on disk, beyond the scrollback) is read with "from" instead of "offset": an absolute line number (0 = the first line the terminal printed), the page runs forward as [lineBegin, lineEnd) in absolute numbers; continue with from = lineEnd until lineEnd equals totalLines. "historyStartLine" is the oldest line the log still holds (a "from" before it starts there); "logLines" (also on offset reads) is the log's line count, so offset line k is about log line logLines - 1 - k for plain line output.`;

/** The first line of a `from` page's text: where it sits in the log and where to go next. */
function logPageHead(id: string, from: number, r: AgentReadResult): string {
  const gap =
    r.lineBegin > from && r.lineBegin === r.historyStartLine
      ? ` (history begins at line ${r.historyStartLine}: older lines were dropped)`
      : '';
  const next = r.lineEnd < r.totalLines ? `; newer: from=${r.lineEnd}` : '; this reaches the newest line';
  return `${id}: log lines [${r.lineBegin}, ${r.lineEnd}) of ${r.totalLines}${gap}${r.truncated ? ' (cut by the byte bound)' : ''}${next}`;
}

/** The first line of an `offset` page's text: where it sits back from the newest line and what is older. */
function offsetPageHead(id: string, r: AgentReadResult): string {
  const more = r.lineEnd < r.totalLines ? `; older: offset=${r.lineEnd}` : '; this reaches the oldest line';
  return `${id}: lines [${r.lineBegin}, ${r.lineEnd}) back from the newest of ${r.totalLines}${r.truncated ? ' (cut by the byte bound)' : ''}${more}`;
}

/**
 * A waiting send reports progress this often when the client asked for progress: MCP clients time
 * requests out (the SDK's default is 60 s) unless progress resets the clock.
 */
const SEND_PROGRESS_MS = 10_000;

type Extra = {
  _meta?: { progressToken?: string | number };
  sendNotification: (n: {
    method: 'notifications/progress';
    params: { progressToken: string | number; progress: number; message?: string };
  }) => Promise<void>;
};

/** Runs `work`, sending a progress notification every SEND_PROGRESS_MS while it waits. */
async function withProgress<T>(extra: Extra, work: Promise<T>, everyMs: number): Promise<T> {
  const token = extra._meta?.progressToken;
  if (token === undefined) return work;
  const started = Date.now();
  const timer = setInterval(() => {
    const seconds = Math.round((Date.now() - started) / 1000);
    extra
      .sendNotification({
        method: 'notifications/progress',
        params: { progressToken: token, progress: seconds, message: `waiting ${seconds} s` },
      })
      .catch(() => clearInterval(timer)); // the request's stream is gone; the send's result will say the rest
  }, everyMs);
  try {
    return await work;
  } finally {
    clearInterval(timer);
  }
}

const idShape = { id: z.string().min(1).describe('Terminal id from terminal_open (e.g. term-1)') };

function text(s: string, structured?: Record<string, unknown>): CallToolResult {
  return { content: [{ type: 'text', text: s }], ...(structured ? { structuredContent: structured } : {}) };
}

export { AWAITING_TEXT, END_REASON_TEXT };

/** Runs a tool body; ptyrelay errors become tool errors the model can read (code and message). */
async function tool(fn: () => Promise<CallToolResult>): Promise<CallToolResult> {
  try {
    return await fn();
  } catch (err) {
    const msg = isPtyRelayError(err) ? `${err.code}: ${err.message}` : `error: ${(err as Error).message}`;
    return { isError: true, content: [{ type: 'text', text: msg }] };
  }
}

export function sendResultText(id: string, r: AgentSendResult): string {
  const code = r.exitCode !== undefined ? ` exitCode=${r.exitCode}` : '';
  const awaiting = r.awaiting ? ` awaiting=${r.awaiting}` : '';
  const cut = r.truncated ? ' (output truncated: newest part shown; page back with terminal_read)' : '';
  return `${id}: reason=${r.reason}${awaiting}${code} after ${r.elapsedMs} ms${cut}\n${sendMeaning(r)}\n--- output ---\n${r.output}`;
}

/**
 * An MCP server with the six terminal tools, acting for `owner` on `service`. One server per
 * MCP session (the SDK binds a server to one transport).
 */
export function createTerminalMcpServer(
  service: TerminalToolService,
  owner: AgentOwner,
  version: string,
  opts: TerminalMcpOptions = {},
): McpServer {
  const server = new McpServer(
    { name: 'ptyrelay', version },
    {
      instructions:
        'Persistent terminals on the hosts of a ptyrelay relay. Open one, then send commands and read output; the terminal keeps its cwd, environment and running programs between calls.',
    },
  );
  new TerminalMcpTools(service, owner, opts).register(server);
  return server;
}

export interface TerminalMcpOptions {
  /** How often a waiting send reports progress (default SEND_PROGRESS_MS). */
  progressMs?: number;
  /** What the session's token may do (default: the startup token's rights). */
  grant?: Grant;
  /** Counts who typed how much into which terminal (never what). */
  audit?: InputAudit;
}

/** The six terminal tools of one MCP session: one method registers each, its schema and its body. */
class TerminalMcpTools {
  private readonly grant: Grant;

  constructor(
    private readonly service: TerminalToolService,
    private readonly owner: AgentOwner,
    private readonly opts: TerminalMcpOptions,
  ) {
    // `ptyrelay mcp` on stdio is the user's own process: it acts with the startup token's rights.
    this.grant = opts.grant ?? STARTUP_GRANT;
  }

  register(server: McpServer): void {
    this.registerOpen(server);
    this.registerSend(server);
    this.registerRead(server);
    this.registerSignal(server);
    this.registerList(server);
    this.registerClose(server);
  }

  /** Checks the grant on one of the owner's terminals (the service itself answers NOT_FOUND/NOT_OWNER). */
  private check(id: string, need: (g: Grant, pid: string) => void): string | undefined {
    const pid = this.service.list(this.owner).find((t) => t.id === id)?.providerId;
    if (pid !== undefined) need(this.grant, pid);
    return pid;
  }

  private registerOpen(server: McpServer): void {
    const { service, owner, grant } = this;
    server.registerTool(
      'terminal_open',
      {
        description: `Opens a persistent terminal (the user's login shell, or "command") on a host and returns its id. Its programs do not page: PAGER, GIT_PAGER and MANPAGER are "cat" and SYSTEMD_PAGER is empty, unless "env" sets any of them (then none is set). Hosts: ${service
          .hosts()
          .filter((h) => canSeeHost(grant, h))
          .join(', ')}.`,
        inputSchema: {
          host: z.string().optional().describe('Host name (default "local")'),
          cwd: z.string().optional().describe('Working directory (default: home)'),
          command: z.string().optional().describe('Program to run instead of the login shell'),
          args: z.array(z.string()).optional().describe('Arguments of command'),
          name: z.string().optional().describe('Display name'),
          env: z
            .record(z.string(), z.string())
            .optional()
            .describe('Environment variables to set (e.g. {"PAGER": "less"} to page)'),
        },
      },
      (a) =>
        tool(async () => {
          needCreate(grant, a.host ?? 'local');
          const t = await service.open(owner, a.host ?? 'local', a);
          return text(`opened ${t.id} on ${t.host} (${t.providerId}; a human can \`ptyrelay attach\` it)`, {
            id: t.id,
            host: t.host,
            providerId: t.providerId,
          });
        }),
    );
  }

  private registerSend(server: McpServer): void {
    const { service, owner, grant, opts } = this;
    server.registerTool(
      'terminal_send',
      {
        description: SEND_DESCRIPTION,
        inputSchema: {
          ...idShape,
          text: z.string().describe('Text to type; empty to only wait'),
          timeoutMs: z
            .number()
            .int()
            .min(1)
            .max(MAX_AGENT_TIMEOUT_MS)
            .optional()
            .describe(`Longest wait in ms (default ${service.defaultTimeoutMs})`),
          enter: z.boolean().optional().describe('Press Enter after the text (default true)'),
        },
        outputSchema: {
          reason: z.enum(['stdin_read', 'inferred_idle', 'timeout', 'session_exit']),
          output: z.string(),
          truncated: z.boolean(),
          exitCode: z.number().int().optional(),
          elapsedMs: z.number(),
          awaiting: z.enum(AGENT_AWAITING).optional(),
          meaning: z.string(),
        },
      },
      (a, extra) =>
        tool(async () => {
          const pid = this.check(a.id, (g, p) => needWrite(g, p, 'type into'));
          if (pid !== undefined && a.text.length > 0)
            opts.audit?.record(grant, pid, Buffer.byteLength(a.text));
          const r = await withProgress(
            // Not wire data: the SDK's own request context, whose generic type does not name sendNotification's params.
            extra as unknown as Extra,
            service.send(owner, a.id, a.text, { timeoutMs: a.timeoutMs, enter: a.enter }),
            opts.progressMs ?? SEND_PROGRESS_MS,
          );
          return text(sendResultText(a.id, r), { ...r, meaning: sendMeaning(r) });
        }),
    );
  }

  private registerRead(server: McpServer): void {
    const { service, owner } = this;
    server.registerTool(
      'terminal_read',
      {
        description: READ_DESCRIPTION,
        inputSchema: {
          ...idShape,
          offset: z.number().int().min(0).optional().describe('Lines back from the newest line (default 0)'),
          from: z
            .number()
            .int()
            .min(0)
            .optional()
            .describe(
              'Instead of offset: absolute line number in the output log where the page starts (0 = first line)',
            ),
          count: z
            .number()
            .int()
            .min(1)
            .max(MAX_AGENT_READ_LINES)
            .optional()
            .describe(`Lines wanted (default ${DEFAULT_AGENT_READ_LINES})`),
        },
        outputSchema: {
          lines: z.array(z.string()),
          lineBegin: z.number().int(),
          lineEnd: z.number().int(),
          totalLines: z.number().int(),
          truncated: z.boolean(),
          logLines: z.number().int().optional(),
          historyStartLine: z.number().int().optional(),
        },
      },
      (a) =>
        tool(async () => {
          this.check(a.id, needRead);
          if (a.from !== undefined) {
            const r = await service.read(owner, a.id, { from: a.from, count: a.count });
            return text(`${logPageHead(a.id, a.from, r)}\n${r.lines.join('\n')}`, { ...r });
          }
          const r = await service.read(owner, a.id, { offset: a.offset, count: a.count });
          return text(`${offsetPageHead(a.id, r)}\n${r.lines.join('\n')}`, { ...r });
        }),
    );
  }

  private registerSignal(server: McpServer): void {
    const { service, owner } = this;
    server.registerTool(
      'terminal_signal',
      {
        description:
          'Sends a real signal (default SIGINT, like Ctrl-C) to the foreground process group of a terminal. Works while a send is waiting; that send then ends with its end reason.',
        inputSchema: {
          ...idShape,
          signal: z.string().optional().describe('INT, TERM, KILL, HUP, … (default INT)'),
        },
      },
      (a) =>
        tool(async () => {
          this.check(a.id, (g, p) => needWrite(g, p, 'signal'));
          const sig = await service.signal(owner, a.id, a.signal ?? 'SIGINT');
          return text(`sent ${sig} to ${a.id}`);
        }),
    );
  }

  private registerList(server: McpServer): void {
    const { service, owner, grant } = this;
    server.registerTool(
      'terminal_list',
      {
        description:
          'Lists your open agent terminals: id, host, whether a send is waiting, exit code once exited.',
      },
      () =>
        tool(async () => {
          const terms = service.list(owner).filter((t) => canRead(grant, t.providerId));
          const lines = terms.map(
            (t) =>
              `${t.id}  host=${t.host}${t.name ? ` name=${t.name}` : ''}${t.sending ? ' sending' : ''}${t.exitCode !== undefined ? ` exited=${t.exitCode}` : ''}`,
          );
          // Hosts that are down right now: their terminals cannot be reached until they are back.
          const unavailable = service.unavailableHosts().filter((u) => canSeeHost(grant, u.host));
          const down = unavailable.map((u) => `host ${u.host} is ${u.status}: ${u.reason}`);
          const body = lines.length ? lines.join('\n') : 'no terminals';
          return text([body, ...down].join('\n'), { terminals: terms, unavailable });
        }),
    );
  }

  private registerClose(server: McpServer): void {
    const { service, owner } = this;
    server.registerTool(
      'terminal_close',
      {
        description: 'Closes an agent terminal (its processes get SIGHUP, then SIGKILL).',
        inputSchema: idShape,
      },
      (a) =>
        tool(async () => {
          this.check(a.id, (g, p) => needWrite(g, p, 'close'));
          await service.close(owner, a.id);
          return text(`closed ${a.id}`);
        }),
    );
  }
}
