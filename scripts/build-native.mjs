// Compiles agent-stub/native/malloc-trim.c into dist/stub/native/malloc-trim.node with the system C
// compiler (`cc`, or $CC). The addon is optional: without a compiler, or off Linux, the build says so
// and goes on, and the daemon then runs without trimming its heaps (docs/benchmarks.md, issue 19).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const source = path.join(root, 'agent-stub', 'native', 'malloc-trim.c');
const outDir = path.join(root, 'dist', 'stub', 'native');
const out = path.join(outDir, 'malloc-trim.node');
const cc = process.env.CC || 'cc';

if (process.platform !== 'linux') {
  console.log(`build-native: skipped on ${process.platform} (glibc's malloc_trim is Linux-only)`);
  process.exit(0);
}
fs.mkdirSync(outDir, { recursive: true });
const tmp = `${out}.${process.pid}.tmp`;
try {
  // No stack protector: the addon then needs nothing from glibc but malloc_trim (GLIBC_2.2.5),
  // so it loads on any glibc host the stub supports.
  execFileSync(cc, ['-shared', '-fPIC', '-O2', '-Wall', '-fno-stack-protector', '-o', tmp, source], {
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  fs.renameSync(tmp, out);
} catch (err) {
  fs.rmSync(tmp, { force: true });
  fs.rmSync(out, { force: true });
  console.log(
    `build-native: no malloc-trim addon (${err.code === 'ENOENT' ? `no C compiler \`${cc}\`` : err.message.split('\n')[0]}); the daemon will run without heap trimming`,
  );
}
