import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import * as z from 'zod';
import {
  AGENT_AWAITING,
  DEFAULT_AGENT_READ_LINES,
  MAX_AGENT_READ_LINES,
  MAX_AGENT_TIMEOUT_MS,
} from '../../provider/wire/agent-messages.js';
import { DEFAULT_COMMANDS_COUNT, MAX_COMMAND_RECORDS } from '../../provider/wire/command-messages.js';
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
import { registerLspTool } from './lsp-mcp-tool.js';
import type { TerminalToolService } from './terminal-tool-service.js';
import {
  COMMANDS_DESCRIPTION,
  commandPageHead,
  commandsText,
  logPageHead,
  offsetPageHead,
  READ_DESCRIPTION,
  runTool,
  SEND_DESCRIPTION,
  sendResultText,
} from './tool-result-text.js';

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

/** A command record (AgentCommand) in the tools' output schemas. */
const COMMAND_SHAPE = z.object({
  id: z.string(),
  commandLine: z.string(),
  cwd: z.string().optional(),
  startedAt: z.number().int(),
  running: z.boolean(),
  durationMs: z.number().int().optional(),
  exitCode: z.number().int().optional(),
  lineBegin: z.number().int().optional(),
  lineEnd: z.number().int().optional(),
});

function text(s: string, structured?: Record<string, unknown>): CallToolResult {
  return { content: [{ type: 'text', text: s }], ...(structured ? { structuredContent: structured } : {}) };
}

export { AWAITING_TEXT, END_REASON_TEXT };

/**
 * An MCP server with the seven terminal tools, acting for `owner` on `service`. One server per
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

/** The seven terminal tools of one MCP session: one method registers each, its schema and its body. */
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
    this.registerCommands(server);
    this.registerSignal(server);
    this.registerList(server);
    this.registerClose(server);
    if (this.service.lsp) registerLspTool(server, this.service.lsp, this.grant);
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
        runTool(async () => {
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
          omittedFromLine: z.number().int().optional(),
          omittedLines: z.number().int().optional(),
          commandIds: z.array(z.string()).optional(),
          meaning: z.string(),
        },
      },
      (a, extra) =>
        runTool(async () => {
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
          command: z
            .string()
            .regex(/^c[1-9]\d*$/)
            .optional()
            .describe("A command's id from terminal_commands (e.g. c3): read exactly its output"),
        },
        outputSchema: {
          lines: z.array(z.string()),
          lineBegin: z.number().int(),
          lineEnd: z.number().int(),
          totalLines: z.number().int(),
          truncated: z.boolean(),
          logLines: z.number().int().optional(),
          historyStartLine: z.number().int().optional(),
          command: COMMAND_SHAPE.optional(),
        },
      },
      (a) =>
        runTool(async () => {
          this.check(a.id, needRead);
          if (a.command !== undefined) {
            const r = await service.read(owner, a.id, { command: a.command, from: a.from, count: a.count });
            return text(`${commandPageHead(a.id, r)}\n${r.lines.join('\n')}`, { ...r });
          }
          if (a.from !== undefined) {
            const r = await service.read(owner, a.id, { from: a.from, count: a.count });
            return text(`${logPageHead(a.id, a.from, r)}\n${r.lines.join('\n')}`, { ...r });
          }
          const r = await service.read(owner, a.id, { offset: a.offset, count: a.count });
          return text(`${offsetPageHead(a.id, r)}\n${r.lines.join('\n')}`, { ...r });
        }),
    );
  }

  private registerCommands(server: McpServer): void {
    const { service, owner } = this;
    server.registerTool(
      'terminal_commands',
      {
        description: COMMANDS_DESCRIPTION,
        inputSchema: {
          ...idShape,
          count: z
            .number()
            .int()
            .min(1)
            .max(MAX_COMMAND_RECORDS)
            .optional()
            .describe(`Newest commands wanted (default ${DEFAULT_COMMANDS_COUNT})`),
        },
        outputSchema: {
          available: z.boolean(),
          total: z.number().int(),
          commands: z.array(COMMAND_SHAPE),
        },
      },
      (a) =>
        runTool(async () => {
          this.check(a.id, needRead);
          const r = await service.commands(owner, a.id, { count: a.count });
          return text(commandsText(a.id, r), { ...r });
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
        runTool(async () => {
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
        runTool(async () => {
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
        runTool(async () => {
          this.check(a.id, (g, p) => needWrite(g, p, 'close'));
          await service.close(owner, a.id);
          return text(`closed ${a.id}`);
        }),
    );
  }
}
