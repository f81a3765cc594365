// Compiles the daemon's optional native addon with the system C compiler (`cc`, or $CC):
//   agent-stub/native/malloc-trim.c -> dist/stub/native/malloc-trim.node (heap trimming)
// It is optional: without a compiler, or off Linux, the build says so and goes on, and the
// daemon runs without it (glibc's MALLOC_TRIM_THRESHOLD_ alone, docs/flow-control.md).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const outDir = path.join(root, 'dist', 'stub', 'native');
const cc = process.env.CC || 'cc';
const ADDONS = [{ name: 'malloc-trim', without: 'the daemon will run without heap trimming' }];

if (process.platform !== 'linux') {
  console.log(`build-native: skipped on ${process.platform} (the addons are Linux-only)`);
  process.exit(0);
}
fs.mkdirSync(outDir, { recursive: true });
for (const { name, without } of ADDONS) {
  const source = path.join(root, 'agent-stub', 'native', `${name}.c`);
  const out = path.join(outDir, `${name}.node`);
  const tmp = `${out}.${process.pid}.tmp`;
  try {
    execFileSync(cc, ['-shared', '-fPIC', '-O2', '-Wall', '-o', tmp, source], {
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    fs.renameSync(tmp, out);
  } catch (err) {
    fs.rmSync(tmp, { force: true });
    fs.rmSync(out, { force: true });
    console.log(
      `build-native: no ${name} addon (${err.code === 'ENOENT' ? `no C compiler \`${cc}\`` : err.message.split('\n')[0]}); ${without}`,
    );
  }
}
