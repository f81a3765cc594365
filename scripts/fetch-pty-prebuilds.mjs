// Fetches the prebuilt node-pty binaries for remote Linux hosts (@lydell/node-pty-linux-*, same version as
// the installed node-pty) into vendor/node-pty-prebuilds/<platform>/pty.node, using only `npm pack`.
// A binary whose sha256 is not the one pinned in relay/deploy/pty-prebuild-pins.ts is not kept.
// Offline or failing, it warns and exits 0: those platforms are then simply not deployable
// (the local arch still has node-pty's own build).
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const PLATFORMS = ['linux-x64', 'linux-arm64'];
// npm's defaults retry for minutes when the registry is unreachable; a build should not hang that long.
const NPM_NETWORK_FLAGS = [
  '--fetch-timeout=20000',
  '--fetch-retries=1',
  '--fetch-retry-mintimeout=1000',
  '--fetch-retry-maxtimeout=2000',
  '--prefer-offline',
];
const NPM_TIMEOUT_MS = 90_000;

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const vendorRoot = path.join(root, 'vendor');
const outRoot = path.join(vendorRoot, 'node-pty-prebuilds');
const ptyPkg = createRequire(path.join(root, 'package.json'))('node-pty/package.json');
const version = ptyPkg.version;
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
// The pins, compiled by `tsc` earlier in `npm run build`.
const { prebuiltPinProblem } = await import(
  path.join(root, 'dist', 'relay', 'deploy', 'pty-prebuild-pins.js')
);

fs.mkdirSync(outRoot, { recursive: true });
// Keeps vendor/ out of git without touching the repo's .gitignore. npm pack would honour that file
// too and leave the prebuilds out of the package (package.json `files` names them): an .npmignore
// beside it takes its place for npm.
fs.writeFileSync(path.join(vendorRoot, '.gitignore'), '*\n');
fs.writeFileSync(path.join(vendorRoot, '.npmignore'), '# the prebuilds ship in the package\n');

function current(dir) {
  try {
    const info = JSON.parse(fs.readFileSync(path.join(dir, 'source.json'), 'utf8'));
    const bytes = fs.readFileSync(path.join(dir, 'pty.node'));
    const sha256 = createHash('sha256').update(bytes).digest('hex');
    return (
      info.version === version &&
      sha256 === info.sha256 &&
      !prebuiltPinProblem(path.basename(dir), version, sha256)
    );
  } catch {
    return false;
  }
}

for (const platform of PLATFORMS) {
  const dir = path.join(outRoot, platform);
  if (current(dir)) continue;
  const spec = `@lydell/node-pty-${platform}@${version}`;
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ptyrelay-prebuild-'));
  try {
    const out = execFileSync(npm, ['pack', spec, '--json', '--pack-destination', tmp, ...NPM_NETWORK_FLAGS], {
      cwd: tmp,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: NPM_TIMEOUT_MS,
    });
    const [packed] = JSON.parse(out);
    execFileSync('tar', ['-xzf', path.join(tmp, packed.filename), '-C', tmp, 'package/pty.node']);
    const bytes = fs.readFileSync(path.join(tmp, 'package', 'pty.node'));
    const sha256 = createHash('sha256').update(bytes).digest('hex');
    fs.rmSync(dir, { recursive: true, force: true });
    const problem = prebuiltPinProblem(platform, version, sha256);
    if (problem)
      throw new Error(
        `Error: ${spec}: ${problem} (check it, then pin it in relay/deploy/pty-prebuild-pins.ts)`,
      );
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, 'pty.node'), bytes, { mode: 0o755 });
    const info = { package: packed.name, version: packed.version, integrity: packed.integrity, sha256 };
    fs.writeFileSync(path.join(dir, 'source.json'), `${JSON.stringify(info, null, 2)}\n`);
    console.log(`fetch-pty-prebuilds: ${spec} -> ${path.relative(root, dir)}`);
  } catch (err) {
    const lines = String(err.stderr || err.message || err)
      .trim()
      .split('\n');
    const why = (lines.find((l) => /error code|Error:/.test(l)) ?? lines[0]).replace(/^npm error\s*/, '');
    console.warn(
      `fetch-pty-prebuilds: ${spec} unavailable (${why}); ` +
        `${platform} hosts can only get node-pty's own build, and only when this machine is ${platform}`,
    );
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}
