import { type LspOperation, toSeamPosition } from '../../provider/lsp-seam.js';
import { pickWorkspaceRoot, toolResult, toolResultText } from '../core/lsp-consumer.js';
import { type Command, output, usageError } from './command.js';
import { withTimeout } from './one-shot-timeout.js';
import { connectRelay } from './relay-connect.js';

/** The words of `nav` for the seam's operations. */
const OPERATIONS: Record<string, LspOperation> = {
  def: 'goToDefinition',
  refs: 'findReferences',
  impl: 'goToImplementation',
  hover: 'hover',
};

/** `FILE:LINE:COL` (1-based; the column in UTF-16 code units); the file may hold colons itself. */
export function parseFilePosition(arg: string): { file: string; line: number; column: number } {
  const m = /^(.+):([1-9]\d*):([1-9]\d*)$/.exec(arg);
  if (!m) throw usageError(`expected FILE:LINE:COL with LINE and COL from 1, got ${JSON.stringify(arg)}`);
  return { file: m[1]!, line: Number(m[2]), column: Number(m[3]) };
}

const nav: Command = {
  usage: 'nav HOST def|refs|impl|hover FILE:LINE:COL [--root DIR]',
  summary:
    'Code navigation on a host by its language servers: definition, references, implementation, hover.',
  help: `  FILE     a path on HOST: absolute, or relative to --root
  LINE:COL 1-based; COL counts UTF-16 code units (a character outside the BMP, an emoji, counts 2)
  --root DIR  the workspace root on HOST (default: the nearest directory above FILE holding .git)
def, refs and impl print one path:line:col per location, paths relative to the workspace; refs
always include the declaration. hover prints the text. The host must enable providers in the
relay config (lsp.hosts.HOST); see docs/lsp.md.`,
  positionals: [3, 3],
  completions: [['@hosts'], Object.keys(OPERATIONS)],
  options: { root: { type: 'string' } },
  async run(args) {
    const [host, word, at] = args.positionals as [string, string, string];
    const operation = Object.hasOwn(OPERATIONS, word) ? OPERATIONS[word] : undefined;
    if (!operation) throw usageError(`unknown operation ${JSON.stringify(word)} (def, refs, impl or hover)`);
    const { file, line, column } = parseFilePosition(at);
    const client = await connectRelay({ quiet: args.json });
    try {
      const given = args.values.root as string | undefined;
      const root = await pickWorkspaceRoot(host, file, given, (h, f) => client.lspRoot(h, f));
      const query = {
        operation,
        filePath: file,
        position: toSeamPosition(line, column),
        workspaceRoot: root,
      };
      const r = toolResult(await client.lspQuery(host, query));
      output(args, { host, operation, root, ...r }, toolResultText(r, operation));
      return 0;
    } finally {
      await client.dispose();
    }
  },
};

/** `nav`: code navigation on a host (docs/lsp.md). */
export const navCommands: Record<string, Command> = { nav: withTimeout('nav', nav) };
