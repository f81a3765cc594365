// Checks that no product function (provider/, agent-stub/, relay/, web/) is longer than
// MAX_LINES lines, first to last line inclusive, with the TypeScript compiler's own parser:
// function declarations, methods, constructors, accessors, arrow functions and function
// expressions, nested ones included. A function that is genuinely one sequence may stay long
// when the line directly above it (or above its variable statement, property or assignment)
// is a comment `// long-function: <the reason>`.
// Exits 1 with one line per offender (`file:line name N lines`); `npm run lint` runs it.
// `node scripts/check-function-length.mjs [root]` checks another tree (the tests do).
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { productSources } from './lib/product-sources.mjs';

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..');
const TREES = ['provider', 'agent-stub', 'relay', 'web'];
/** Longest function without a stated reason (issue 51: a long closure hides its structure). */
export const MAX_LINES = 80;
/** The comment that lets a function stay long; a reason must follow it. */
const REASON = /^\s*\/\/\s*long-function:\s*\S/;

/** Every .ts file of the product trees (tests, benches and generated output are not checked). */
const sources = (root) => productSources(root, TREES);

function isFunction(node) {
  return (
    ts.isFunctionDeclaration(node) ||
    ts.isMethodDeclaration(node) ||
    ts.isConstructorDeclaration(node) ||
    ts.isGetAccessorDeclaration(node) ||
    ts.isSetAccessorDeclaration(node) ||
    ts.isArrowFunction(node) ||
    ts.isFunctionExpression(node)
  );
}

/** The text of a declaration's name, when it has a plain one. */
function nameText(name) {
  if (!name) return undefined;
  if (ts.isIdentifier(name) || ts.isPrivateIdentifier(name) || ts.isStringLiteral(name)) return name.text;
  if (ts.isNumericLiteral(name)) return name.text;
  return name.getText();
}

/** The statement-level node whose leading line may carry the reason for `fn` (besides `fn` itself). */
function holderOf(fn) {
  const p = fn.parent;
  if (ts.isVariableDeclaration(p) && p.initializer === fn) {
    const list = p.parent;
    return ts.isVariableStatement(list.parent) ? list.parent : p;
  }
  if ((ts.isPropertyAssignment(p) || ts.isPropertyDeclaration(p)) && p.initializer === fn) return p;
  if (ts.isBinaryExpression(p) && p.right === fn && p.operatorToken.kind === ts.SyntaxKind.EqualsToken) {
    return ts.isExpressionStatement(p.parent) ? p.parent : p;
  }
  return undefined;
}

/** How a function is named in a report: `Class.method`, the variable or property it is held in, or `<arrow>`. */
function describe(fn, outer) {
  const cls = fn.parent && ts.isClassLike(fn.parent) ? `${fn.parent.name?.text ?? '<class>'}.` : '';
  if (ts.isConstructorDeclaration(fn)) return `${cls}constructor`;
  const own = nameText(fn.name);
  if (own) return `${cls}${own}`;
  const holder = holderOf(fn);
  const p = fn.parent;
  if (holder && ts.isVariableDeclaration(p)) return nameText(p.name);
  if (holder && (ts.isPropertyAssignment(p) || ts.isPropertyDeclaration(p)))
    return `${cls}${nameText(p.name)}`;
  if (holder && ts.isBinaryExpression(p)) return p.left.getText();
  const kind = ts.isArrowFunction(fn) ? 'arrow' : 'function';
  return outer ? `<${kind} in ${outer}>` : `<${kind}>`;
}

/** True when the line just above `node`'s first line (its code, after any JSDoc) is a reason. */
function reasonAbove(sf, lines, node) {
  const line = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line;
  return line > 0 && REASON.test(lines[line - 1]);
}

/** The offenders of one file: `{ line, name, length }` for every function over MAX_LINES without a reason. */
function longFunctions(path, text) {
  const sf = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const lines = text.split('\n');
  const out = [];
  const visit = (node, outer) => {
    let inner = outer;
    if (isFunction(node)) {
      const name = describe(node, outer);
      inner = name;
      const first = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line;
      const last = sf.getLineAndCharacterOfPosition(node.getEnd()).line;
      const length = last - first + 1;
      if (length > MAX_LINES) {
        const holder = holderOf(node);
        const excused = reasonAbove(sf, lines, node) || (holder && reasonAbove(sf, lines, holder));
        if (!excused) out.push({ line: first + 1, name, length });
      }
    }
    ts.forEachChild(node, (child) => visit(child, inner));
  };
  visit(sf, undefined);
  return out;
}

/** The functions over MAX_LINES lines without a `// long-function:` reason in the tree at `root`. */
export function checkFunctionLength(root = repoRoot) {
  const files = sources(root);
  const problems = [];
  for (const f of files) {
    for (const { line, name, length } of longFunctions(f, readFileSync(join(root, f), 'utf8'))) {
      problems.push(`${f}:${line} ${name} ${length} lines`);
    }
  }
  return { files: files.length, problems };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  const root = process.argv[2] ? resolve(process.argv[2]) : repoRoot;
  const { files, problems } = checkFunctionLength(root);
  for (const p of problems) console.error(`check-function-length: ${p}`);
  if (problems.length > 0) {
    console.error(
      `check-function-length: ${problems.length} functions over ${MAX_LINES} lines in ${files} files; ` +
        'split them, or say why one must stay long in a `// long-function: <reason>` line above it',
    );
    process.exit(1);
  }
  console.log(`check-function-length: ${files} files, no function over ${MAX_LINES} lines without a reason`);
}
