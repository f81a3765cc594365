import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import * as z from 'zod';
import { LSP_OPERATIONS, toSeamPosition } from '../../provider/lsp-seam.js';
import { canCreate, type Grant, needCreate } from '../core/grant.js';
import { pickWorkspaceRoot, toolResult, toolResultText } from '../core/lsp-consumer.js';
import type { HostCodeNavigation } from '../core/rpc-types.js';
import { runTool } from './tool-result-text.js';

export const LSP_TOOL = 'lsp';

const DESCRIPTION = `Code navigation on a host, answered by a language server running where the code is. Operations: goToDefinition, findReferences (always includes the declaration itself), goToImplementation (an empty answer is legal: not every language has implementations), hover (type and documentation as text). Positions are 1-based: line 1 is the first line, column 1 the first character, columns counted in UTF-16 code units (an emoji or other character outside the BMP counts 2). Locations come back as path:line:column, paths relative to the workspace root.`;

/**
 * The MCP `lsp` tool (docs/agents.md, docs/lsp.md): the model's words for the seam. It flips the
 * model's 1-based position to the seam's 0-based one (minus one), picks the workspace root when
 * the model gives none (the nearest ancestor holding `.git`), and shows the locations 1-based and
 * relative to the workspace the provider resolved. Registered only when some host enables code
 * navigation; reading code needs a token that may create terminals on that host.
 */
export function registerLspTool(server: McpServer, nav: HostCodeNavigation, grant: Grant): void {
  const hosts = nav.hosts().filter((h) => canCreate(grant, h));
  if (hosts.length === 0) return;
  server.registerTool(
    LSP_TOOL,
    {
      description: `${DESCRIPTION} Hosts: ${hosts.join(', ')}.`,
      inputSchema: {
        host: z.string().optional().describe(`Host name (default "${hosts[0]}")`),
        operation: z.enum(LSP_OPERATIONS),
        file: z.string().min(1).describe('The file: an absolute path on the host, or relative to root'),
        line: z.number().int().min(1).describe('1-based line'),
        column: z.number().int().min(1).describe('1-based column, in UTF-16 code units'),
        root: z
          .string()
          .optional()
          .describe(
            'Workspace root (absolute path on the host); default: the nearest directory above the file holding .git',
          ),
      },
    },
    (a, extra) =>
      runTool(async () => {
        const host = a.host ?? hosts[0]!;
        needCreate(grant, host);
        const root = await pickWorkspaceRoot(host, a.file, a.root, (h, f) => nav.workspaceRoot(h, f));
        const query = {
          operation: a.operation,
          filePath: a.file,
          position: toSeamPosition(a.line, a.column),
          workspaceRoot: root,
        };
        const r = toolResult(await nav.query(host, query, extra.signal));
        return {
          content: [{ type: 'text', text: toolResultText(r, a.operation) }],
          structuredContent: { ...r },
        };
      }),
  );
}
