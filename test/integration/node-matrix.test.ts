/**
 * ptyrelay on every Node line it supports: the stub daemon on host nodes 18 to 26 (locally and
 * deployed over a real sshd), the relay CLI on 24 and 26. Uses the official builds
 * `.ci/node-builds.sh` unpacks (test/support/node-builds.ts).
 */
import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import {
  chownSync,
  copyFileSync,
  linkSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectOrStartDaemon, DAEMON_NODE_OPTIONS } from '../../provider/daemon-runtime/daemon-launcher.js';
import { RELAY_NODE_OPTIONS } from '../../relay/core/relay-runtime.js';
import { stubBundlePath } from '../../relay/core/stub-bundle.js';
import { LocalPtyProvider } from '../../relay/local/local-pty-provider.js';
import { SshPtyProvider } from '../../relay/ssh/ssh-pty-provider.js';
import { allOf, capability } from '../support/capabilities.js';
import { capturedLog } from '../support/captured-log.js';
import { CLI_MAIN } from '../support/cli-runner.js';
import { daemonsOf, endProcess, killDaemonsOf } from '../support/daemon-reaper.js';
import { OutputCollector, waitFor } from '../support/local-daemon.js';
import {
  HOST_NODE_MAJORS,
  missingNodeBuilds,
  type NodeBuild,
  nodeBuilds,
  RELAY_NODE_MAJORS,
} from '../support/node-builds.js';
import {
  createShellUser,
  removeShellUser,
  type ShellUser,
  shellUsersAvailable,
} from '../support/shell-users.js';
import { hostFor, relayHome } from '../support/ssh-fixture.js';
import { type SshdInstance, sshdAvailable, startSshd } from '../support/sshd.js';

const builds = nodeBuilds();
const matrix = capability('node-matrix', missingNodeBuilds(HOST_NODE_MAJORS, builds));
const build = (major: number): NodeBuild => {
  const b = builds.get(major);
  if (!b) throw new Error(`no Node ${major} build`);
  return b;
};
/** Typed into a terminal: `42` alone on a line is only printed by a shell that ran it (not the echo). */
const SIX_TIMES_SEVEN = 'echo $((6*7))\r';
/** After `\r` (bash ends bracketed paste with `ESC[?2004l\r` before the output) or a newline. */
const FORTY_TWO = /[\r\n]42\r\n/;
const TERMINAL_WAIT_MS = 20_000;

/** argv of a process, from /proc. */
const cmdlineOf = (pid: number): string[] =>
  readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').slice(0, -1);

/** One environment variable of a process as it started, from /proc (undefined when unset). */
function startEnvOf(pid: number, name: string): string | undefined {
  const entry = readFileSync(`/proc/${pid}/environ`, 'utf8')
    .split('\0')
    .find((kv) => kv.startsWith(`${name}=`));
  return entry?.slice(name.length + 1);
}

/** Live and not a zombie (this VM's PID 1 reaps orphans lazily). */
function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return false;
  }
}

/** Parent pid of a process, from /proc. */
function ppidOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}

/** The same file (hard links included): what /proc/PID/exe names is the binary that was executed. */
function sameFile(a: string, b: string): boolean {
  const sa = statSync(a);
  const sb = statSync(b);
  return sa.dev === sb.dev && sa.ino === sb.ino;
}

describe.skipIf(!matrix)('ptyrelay on every supported Node line', () => {
  describe('a local stub daemon on each host node (18 to 26)', { timeout: 60_000 }, () => {
    for (const major of HOST_NODE_MAJORS) {
      it(`Node ${major}: the daemon runs under it, with only the documented node options on its command line, and drives a shell`, async () => {
        const node = build(major);
        const root = mkdtempSync(join(tmpdir(), `ptr-node${major}-`));
        const runtimeDir = join(root, 'run');
        const home = join(root, 'home');
        mkdirSync(home);
        let provider: LocalPtyProvider | undefined;
        try {
          const socket = await connectOrStartDaemon(stubBundlePath(), runtimeDir, [], node.bin);
          socket.destroy();
          // The provider finds the daemon of its runtime dir running and links to it.
          provider = new LocalPtyProvider({ runtimeDir });
          const { pid } = await provider.daemonInfo();
          expect(daemonsOf(runtimeDir)).toEqual([pid]);
          const exe = readlinkSync(`/proc/${pid}/exe`);
          expect(exe).toBe(realpathSync(node.bin));
          expect(execFileSync(exe, ['--version'], { encoding: 'utf8' }).trim()).toBe(`v${node.version}`);
          // `node OPTIONS STUB daemon …`: only the launcher's documented options, which this line
          // has just accepted (the daemon runs).
          expect(cmdlineOf(pid)).toEqual([
            node.bin,
            ...DAEMON_NODE_OPTIONS,
            stubBundlePath(),
            'daemon',
            '--runtime-dir',
            runtimeDir,
          ]);
          expect(startEnvOf(pid, 'NODE_OPTIONS')).toBe(process.env.NODE_OPTIONS);

          const out = new OutputCollector(provider);
          const r = await provider.spawn({
            cols: 80,
            rows: 24,
            command: 'bash',
            args: ['--norc', '--noprofile'],
            env: { HOME: home },
          });
          out.bind(r.id);
          await provider.write(r.id, SIX_TIMES_SEVEN);
          await out.waitText(FORTY_TWO, TERMINAL_WAIT_MS);
          expect(out.gaps).toEqual([]);
          await provider.shutdown(r.id);
          out.stop();

          await provider.shutdownDaemon();
          expect(running(pid)).toBe(false);
        } finally {
          await provider?.dispose();
          // A daemon left by a failed assertion (killDaemonsOf also waits for late ones: only then).
          if (daemonsOf(runtimeDir).length > 0) await killDaemonsOf(runtimeDir);
          rmSync(root, { recursive: true, force: true });
        }
      });
    }
  });

  const users = shellUsersAvailable(['/bin/bash']);
  const overSsh = allOf(sshdAvailable(), users.ok);

  describe.skipIf(!overSsh)(
    'deployed over SSH to a host whose PATH finds each node first',
    { timeout: 60_000 },
    () => {
      let home: ReturnType<typeof relayHome>;
      let sshd: SshdInstance;
      const made: ShellUser[] = [];
      const providers: SshPtyProvider[] = [];
      /** The node each user's PATH finds: a hard link of the build into the user's home (/root is 0700). */
      const nodeOf = new Map<number, string>();
      const userOf = new Map<number, ShellUser>();

      beforeAll(async () => {
        home = relayHome();
        for (const major of HOST_NODE_MAJORS) {
          const u = createShellUser(`node${major}`, '/bin/bash', {});
          made.push(u);
          const bin = join(u.home, `.node-${major}`, 'bin');
          mkdirSync(bin, { recursive: true });
          const node = join(bin, 'node');
          rmSync(node, { force: true });
          try {
            linkSync(build(major).bin, node);
          } catch {
            copyFileSync(build(major).bin, node); // another file system
          }
          // The system's node (/usr/bin) stays on PATH after it: only the first one may be found.
          const dotSsh = join(u.home, '.ssh');
          mkdirSync(dotSsh, { recursive: true });
          writeFileSync(join(dotSsh, 'environment'), `PATH=${bin}:/usr/local/bin:/usr/bin:/bin\n`);
          for (const f of [dirname(bin), bin, dotSsh, join(dotSsh, 'environment')])
            chownSync(f, u.uid, u.gid);
          nodeOf.set(major, node);
          userOf.set(major, u);
        }
        sshd = await startSshd({ user: made[0]!.name, extraConfig: ['PermitUserEnvironment yes'] });
        // One sshd for all of them: the harness's key is authorized for each user.
        const key = readFileSync(`${sshd.userKeyPath}.pub`, 'utf8');
        for (const u of made.slice(1))
          writeFileSync(join(sshd.dir, 'authorized_keys', u.name), key, { mode: 0o644 });
      });

      afterAll(async () => {
        for (const p of providers) await p.dispose();
        await sshd?.stop();
        for (const u of made) await removeShellUser(u);
        home?.cleanup();
      });

      for (const major of HOST_NODE_MAJORS) {
        it(`Node ${major}: the probe picks it, the host's daemon runs under it, and a terminal runs a command`, async () => {
          const u = userOf.get(major)!;
          const node = nodeOf.get(major)!;
          const cap = capturedLog();
          const p = new SshPtyProvider({ hosts: { h: hostFor(sshd, { user: u.name }) }, log: cap.log });
          providers.push(p);
          const out = new OutputCollector(p);
          const r = await p.spawn({ host: 'h', cols: 80, rows: 24 });
          out.bind(r.id);
          // The user's login shell (its /etc/profile sets a PATH of its own).
          await p.write(r.id, SIX_TIMES_SEVEN);
          await out.waitText(FORTY_TWO, TERMINAL_WAIT_MS);
          expect(out.gaps).toEqual([]);

          const info = p.linkInfo('h');
          expect(info?.deploy.nodeVersion).toBe(`v${build(major).version}`);
          expect(info?.deploy.nodePath).toBe(node);
          const pid = info?.daemonPid;
          expect(pid).toBeGreaterThan(0);
          // The host is this machine: the daemon is right here, running as the user, under that node.
          expect(readFileSync(`/proc/${pid}/status`, 'utf8')).toMatch(
            new RegExp(`^Uid:\\s+${u.uid}\\s`, 'm'),
          );
          expect(sameFile(readlinkSync(`/proc/${pid}/exe`), build(major).bin)).toBe(true);
          const argv = cmdlineOf(pid!);
          expect(argv.slice(0, 3 + DAEMON_NODE_OPTIONS.length)).toEqual([
            node,
            ...DAEMON_NODE_OPTIONS,
            info?.deploy.stubPath,
            'daemon',
          ]);
          // And the terminal is that daemon's.
          expect(ppidOf(r.pid)).toBe(pid);

          await p.shutdown(r.id);
          out.stop();
          await p.shutdownDaemon('h');
          await waitFor(() => !running(pid!), 15_000, `exit of the Node ${major} daemon`);
        });
      }
    },
  );

  describe('the relay CLI on Node 24 and 26', { timeout: 120_000 }, () => {
    for (const major of RELAY_NODE_MAJORS.filter((m) => m >= 24)) {
      it(`Node ${major}: serve, open local, send, read under it`, async () => {
        const node = build(major);
        const root = mkdtempSync(join(tmpdir(), `ptr-cli-node${major}-`));
        const cliHome = join(root, 'home');
        const runtimeDir = join(root, 'run');
        mkdirSync(cliHome);
        const env: NodeJS.ProcessEnv = {
          ...process.env,
          HOME: cliHome,
          PTYRELAY_RUNTIME_DIR: runtimeDir,
          PATH: `${join(node.dir, 'bin')}:${process.env.PATH}`,
        };
        for (const k of [
          'PTYRELAY_TOKEN',
          'PTYRELAY_CONFIG',
          'PTYRELAY_URL',
          'PTYRELAY_CLIENT_ID',
          'XDG_RUNTIME_DIR',
        ])
          delete env[k];
        let relay: ChildProcess | undefined;
        try {
          const version = await cli(node, ['--version'], env);
          expect(version.stdout).toMatch(new RegExp(`, node v${node.version.replace(/\./g, '\\.')}\\)\\n$`));

          // With the relay's own command line (npm start, ./ptyrelay, the relay image).
          relay = spawn(node.bin, [...RELAY_NODE_OPTIONS, CLI_MAIN, 'serve', '--listen', '127.0.0.1:0'], {
            env,
          });
          let stderr = '';
          relay.stderr?.on('data', (d) => {
            stderr += d;
          });
          relay.stdout?.resume();
          const url = await waitFor(
            () => /relay listening on (ws:\/\/127\.0\.0\.1:\d+)/.exec(stderr)?.[1],
            30_000,
            `the Node ${major} relay to listen`,
          );
          expect(readlinkSync(`/proc/${relay.pid}/exe`)).toBe(realpathSync(node.bin));
          const cenv = { ...env, PTYRELAY_URL: url };

          const opened = await cli(node, ['open', 'local'], cenv);
          const id = opened.stdout.trim();
          expect(id).toMatch(/^local\/pty-\d+$/);
          // The relay started the local daemon with its own node. Two of its links may have
          // started one at the same moment: the one that lost the daemon lock exits at once (seen
          // once here on Node 26), so exactly one must remain, not one at the first look.
          const daemons = await waitFor(
            () => {
              const d = daemonsOf(runtimeDir);
              return d.length === 1 ? d : undefined;
            },
            5_000,
            `a single Node ${major} daemon in the relay's runtime dir`,
          );
          expect(daemons).toHaveLength(1);
          const daemon = daemons[0];
          expect(readlinkSync(`/proc/${daemon}/exe`)).toBe(realpathSync(node.bin));

          await cli(node, ['send', id, 'echo $((6*7))'], cenv, [0, 3]);
          await waitFor(
            async () => /^42$/m.test((await cli(node, ['read', id], cenv)).stdout),
            15_000,
            '42 on the screen',
          );
          await cli(node, ['kill', id, '--now'], cenv);
          // The relay ends with exit code 0; its daemon keeps running (killed below, as in cli.test.ts).
          const exited = new Promise<number | null>((r) => relay?.once('exit', (code) => r(code)));
          relay.kill('SIGTERM');
          expect(await exited).toBe(0);
          relay = undefined;
        } finally {
          await endProcess(relay);
          await killDaemonsOf(runtimeDir);
          rmSync(root, { recursive: true, force: true });
        }
      });
    }
  });
});

/** Runs the built CLI with `node`; fails unless it exits with one of `codes`. */
function cli(
  node: NodeBuild,
  args: string[],
  env: NodeJS.ProcessEnv,
  codes = [0],
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = execFile(node.bin, [CLI_MAIN, ...args], { env, timeout: 60_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
      if (codes.includes(code)) resolve({ code, stdout, stderr });
      else reject(new Error(`ptyrelay ${args.join(' ')} (Node ${node.major}) exited ${code}: ${stderr}`));
    });
    child.stdin?.end();
  });
}
