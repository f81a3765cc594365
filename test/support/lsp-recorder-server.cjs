// A language server written for the tests: it answers `initialize` and `shutdown`, never answers
// any other request, and appends every message it receives to the file named by its first
// argument (one JSON line each: method, id, and the id a `$/cancelRequest` cancels). It reads the
// raw messages (vscode-jsonrpc's reader and writer, no connection: a connection would consume the
// cancel itself). With `--crash-on METHOD` it writes an error line to stderr and exits 3 when
// METHOD arrives. It ends when its stdin closes (its daemon went away): it never outlives a test.
const { appendFileSync } = require('node:fs');
const rpc = require('vscode-jsonrpc/node');

const [record, flag, crashOn] = process.argv.slice(2);
const reader = new rpc.StreamMessageReader(process.stdin);
const writer = new rpc.StreamMessageWriter(process.stdout);
const answer = (id, result) => writer.write({ jsonrpc: '2.0', id, result });

reader.listen((msg) => {
  const cancels = msg.method === '$/cancelRequest' ? { cancels: msg.params.id } : {};
  appendFileSync(record, `${JSON.stringify({ method: msg.method, id: msg.id, ...cancels })}\n`);
  if (flag === '--crash-on' && msg.method === crashOn) {
    process.stderr.write(`recorder: fatal error: asked for ${msg.method}\n`);
    process.exit(3);
  }
  if (msg.method === 'initialize') answer(msg.id, { capabilities: { definitionProvider: true } });
  else if (msg.method === 'shutdown') answer(msg.id, null);
  else if (msg.method === 'exit') process.exit(0);
});
process.stdin.on('end', () => process.exit(0));
