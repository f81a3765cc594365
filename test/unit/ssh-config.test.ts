import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseJumpChain, parseJumpSpec } from '../../relay/ssh/host-config.js';
import {
  loadUserSshConfig,
  parseSshConfig,
  resolveSshConfig,
  SshConfigError,
} from '../../relay/ssh/ssh-config.js';
import { capability, filesMissing } from '../support/capabilities.js';

const SSH_CLIENT = '/usr/bin/ssh';
const haveSsh = capability(
  'ssh-client',
  filesMissing([SSH_CLIENT], 'the ssh -G cross-check; apt-get install openssh-client'),
);

const home = mkdtempSync(join(os.tmpdir(), 'ptyrelay-sshcfg-'));
mkdirSync(join(home, '.ssh'), { recursive: true });
afterAll(() => rmSync(home, { recursive: true, force: true }));
const ctx = { homeDir: home, localUser: 'alice' };
const resolve = (text: string, alias: string) => resolveSshConfig(parseSshConfig(text), alias, ctx);

describe('parseSshConfig', () => {
  it('splits into a global block followed by Host/Match blocks', () => {
    const blocks = parseSshConfig(
      '# c\nUser g\n\nHost a b\n  Port 1\nMatch host x\n  User m\nHOST=c\n  IdentityFile "x y" # trailing\n',
    );
    expect(blocks.map((b) => [b.kind, b.patterns])).toEqual([
      ['global', []],
      ['host', ['a', 'b']],
      ['match', ['host', 'x']],
      ['host', ['c']],
    ]);
    expect(blocks[0]!.directives).toEqual([{ keyword: 'user', args: ['g'], line: 2 }]);
    expect(blocks[3]!.directives[0]!.args).toEqual(['x y']);
  });

  it('handles Key=value, Key = value, quotes and escapes', () => {
    const [g] = parseSshConfig(
      'Port=2222\nUser = bob\nIdentityFile \'a b\' "c\'d" e\\ f\nProxyJump "j"#x\nHostName a\\\\b',
    );
    expect(g!.directives.map((d) => [d.keyword, d.args])).toEqual([
      ['port', ['2222']],
      ['user', ['bob']],
      ['identityfile', ['a b', "c'd", 'e f']],
      ['proxyjump', ['j#x']],
      ['hostname', ['a\\b']],
    ]);
  });

  it('rejects an unterminated quote', () => {
    expect(() => parseSshConfig('User "bob')).toThrow(SshConfigError);
  });
});

describe('resolveSshConfig', () => {
  it('keeps the first obtained value and accumulates IdentityFile', () => {
    const cfg = resolve(
      [
        'Host web',
        '  HostName web.example.com',
        '  User deploy',
        '  IdentityFile ~/.ssh/web',
        'Host *',
        '  HostName ignored',
        '  User nobody',
        '  Port 2200',
        '  IdentityFile ~/.ssh/default',
        '  ConnectTimeout 7',
        '  ServerAliveInterval 15',
        '  IdentitiesOnly yes',
        '  StrictHostKeyChecking Accept-New',
        '  UserKnownHostsFile ~/.ssh/kh1 /etc/kh2',
        '  UserKnownHostsFile ~/ignored',
      ].join('\n'),
      'web',
    );
    expect(cfg).toEqual({
      hostName: 'web.example.com',
      user: 'deploy',
      port: 2200,
      identityFiles: [join(home, '.ssh/web'), join(home, '.ssh/default')],
      connectTimeoutSec: 7,
      serverAliveIntervalSec: 15,
      identitiesOnly: true,
      strictHostKeyChecking: 'accept-new',
      userKnownHostsFiles: [join(home, '.ssh/kh1'), '/etc/kh2'],
    });
  });

  it('returns only identityFiles for an empty config', () => {
    expect(resolve('', 'x')).toEqual({ identityFiles: [] });
  });

  it('applies global options before the first Host to every alias', () => {
    expect(resolve('User g\nHost a\n  User a', 'a').user).toBe('g');
  });

  it('matches Host patterns with *, ? and negation, case-insensitively', () => {
    const text = [
      'Host *.prod !db.prod',
      '  User prod',
      'Host db?',
      '  User dbn',
      'Host MiXeD',
      '  User mixed',
      'Host *',
      '  User fallback',
    ].join('\n');
    expect(resolve(text, 'api.prod').user).toBe('prod');
    expect(resolve(text, 'db.prod').user).toBe('fallback');
    expect(resolve(text, 'db1').user).toBe('dbn');
    expect(resolve(text, 'db12').user).toBe('fallback');
    expect(resolve(text, 'mixed').user).toBe('mixed');
    expect(resolve('Host !a\n  User x', 'b').user).toBeUndefined();
  });

  it('applies Match all / host / originalhost / user / localuser blocks, with negation', () => {
    const text = [
      'Host box',
      '  HostName box.example',
      'Match host box.example user deploy',
      '  Port 2201',
      'Match originalhost box !localuser bob',
      '  ConnectTimeout 5',
      'Match user root',
      '  Port 9',
      'Match exec "true"',
      '  IdentityFile /never',
      'Match all',
      '  User deploy',
    ].join('\n');
    // `Match user deploy` compares the user obtained so far: not yet set when it is read.
    expect(resolve(text, 'box')).toEqual({
      hostName: 'box.example',
      connectTimeoutSec: 5,
      user: 'deploy',
      identityFiles: [],
    });
    expect(resolve(`User deploy\n${text}`, 'box').port).toBe(2201);
    expect(
      resolveSshConfig(parseSshConfig(text), 'box', { homeDir: home, localUser: 'bob' }).connectTimeoutSec,
    ).toBeUndefined();
  });

  it('names the file and line of a bad line', () => {
    expect(() => parseSshConfig('Host a\nMatch bogus x', '/etc/x.conf')).toThrow(
      '/etc/x.conf:2: unsupported Match criterion',
    );
    expect(() => parseSshConfig('Match host', 'f')).toThrow('f:1: Match host needs an argument');
    expect(() => resolveSshConfig(parseSshConfig('\n\nPort abc', '/c'), 'x', ctx)).toThrow('/c:3: bad port');
    expect(() => resolve('StrictHostKeyChecking sometimes', 'x')).toThrow(/bad StrictHostKeyChecking/);
  });

  it('expands ~ and %h %u %r %p %d %n %% in IdentityFile, and %h in HostName', () => {
    const cfg = resolve(
      [
        'Host box',
        '  HostName %h.internal',
        '  User root',
        '  Port 2022',
        '  IdentityFile ~/.ssh/%h_%r_%u_%p',
        '  IdentityFile %d/k%%_%n_%z',
        '  IdentityFile none',
      ].join('\n'),
      'box',
    );
    expect(cfg.hostName).toBe('box.internal');
    expect(cfg.identityFiles).toEqual([join(home, '.ssh/box.internal_root_alice_2022'), `${home}/k%_box_%z`]);
  });

  it('defaults %r to the local user and %p to 22', () => {
    expect(resolve('IdentityFile /k/%r-%p-%h', 'h').identityFiles).toEqual(['/k/alice-22-h']);
  });

  it('treats ProxyJump none and UserKnownHostsFile none as set-but-empty', () => {
    const text = 'Host direct\n  ProxyJump none\n  UserKnownHostsFile none\nHost *\n  ProxyJump bastion';
    expect(resolve(text, 'direct').proxyJump).toBeUndefined();
    expect(resolve(text, 'direct').userKnownHostsFiles).toEqual([]);
    expect(resolve(text, 'other').proxyJump).toBe('bastion');
    expect(resolve('ConnectTimeout none', 'x').connectTimeoutSec).toBeUndefined();
  });

  it('rejects invalid numbers and booleans in applied lines', () => {
    expect(() => resolve('Port 70000', 'x')).toThrow(SshConfigError);
    expect(() => resolve('Port abc', 'x')).toThrow(/bad port/);
    expect(() => resolve('IdentitiesOnly maybe', 'x')).toThrow(SshConfigError);
    expect(resolve('Host other\n  Port abc', 'x').port).toBeUndefined();
  });
});

describe('Include', () => {
  const sshDir = join(home, '.ssh');
  writeFileSync(join(sshDir, 'base.conf'), 'Host inc\n  HostName from-include\n  User inc-user\n');
  mkdirSync(join(sshDir, 'conf.d'), { recursive: true });
  writeFileSync(join(sshDir, 'conf.d', '20-b.conf'), 'Port 2020\nHost *\n  IdentityFile ~/b\n');
  writeFileSync(join(sshDir, 'conf.d', '10-a.conf'), 'IdentityFile ~/a\n');
  writeFileSync(join(sshDir, 'conf.d', '.hidden.conf'), 'IdentityFile ~/hidden\n');
  writeFileSync(join(sshDir, 'conf.d', 'notes.txt'), 'IdentityFile ~/txt\n');
  writeFileSync(join(sshDir, 'loop.conf'), 'Include loop.conf\n');

  it('reads files relative to ~/.ssh, with a glob in the last segment, in sorted order', () => {
    const cfg = resolve('Include base.conf conf.d/*.conf ~/.ssh/missing.conf\nHost *\n  Port 1', 'inc');
    expect(cfg).toMatchObject({ hostName: 'from-include', user: 'inc-user', port: 2020 });
    expect(cfg.identityFiles).toEqual([join(home, 'a'), join(home, 'b')]);
  });

  it('applies an Include inside a Host block only when that block matches', () => {
    const text = 'Host wanted\n  Include conf.d/10-a.conf\nHost *\n  Include conf.d/20-b.conf\n';
    expect(resolve(text, 'wanted').identityFiles).toEqual([join(home, 'a'), join(home, 'b')]);
    expect(resolve(text, 'other').identityFiles).toEqual([join(home, 'b')]);
    expect(resolve('Host nope\n  Include base.conf', 'inc').hostName).toBeUndefined();
  });

  it('restores the including block state after the Include', () => {
    const text = 'Host a\n  Include base.conf\n  User after-include\n';
    expect(resolve(text, 'a').user).toBe('after-include');
    expect(resolve(text, 'inc').user).toBeUndefined();
  });

  it('stops runaway recursion', () => {
    expect(() => resolve('Include loop.conf', 'x')).toThrow(/too deep/);
  });

  it('loadUserSshConfig reads ~/.ssh/config and tolerates its absence', () => {
    const other = mkdtempSync(join(os.tmpdir(), 'ptyrelay-sshcfg-empty-'));
    try {
      expect(loadUserSshConfig(other, 'x', 'bob')).toEqual({ identityFiles: [] });
    } finally {
      rmSync(other, { recursive: true, force: true });
    }
    writeFileSync(join(sshDir, 'config'), 'Include base.conf\nHost x\n  User %r-literal\n');
    expect(loadUserSshConfig(home, 'inc', 'bob')).toMatchObject({
      hostName: 'from-include',
      user: 'inc-user',
    });
  });
});

describe.skipIf(!haveSsh)('agrees with ssh -G', () => {
  it('for precedence, patterns, negation and tokens', () => {
    const file = join(home, 'gcheck.conf');
    writeFileSync(
      file,
      [
        'Host *.prod !db.prod',
        '  User prod',
        '  IdentityFile /keys/%h-%r-%p',
        'Host api.prod',
        '  HostName %h.example',
        '  Port 2201',
        '  ProxyJump jump@bastion:22',
        'Host *',
        '  User fallback',
        '  Port 22',
        '  IdentityFile /keys/default',
        '',
      ].join('\n'),
    );
    for (const alias of ['api.prod', 'db.prod', 'misc']) {
      const res = spawnSync(SSH_CLIENT, ['-G', '-F', file, alias], { encoding: 'utf8' });
      expect(res.status).toBe(0);
      const g = new Map<string, string[]>();
      for (const line of res.stdout.split('\n')) {
        const [k, ...v] = line.split(' ');
        if (k) g.set(k, [...(g.get(k) ?? []), v.join(' ')]);
      }
      const ours = resolveSshConfig(parseSshConfig(readFileSync(file, 'utf8')), alias, {
        homeDir: home,
        localUser: 'root',
      });
      expect(ours.hostName ?? alias).toBe(g.get('hostname')![0]);
      expect(ours.user).toBe(g.get('user')![0]);
      expect(String(ours.port ?? 22)).toBe(g.get('port')![0]);
      // ssh -G prints IdentityFile before token expansion.
      const tokens: Record<string, string> = {
        h: g.get('hostname')![0]!,
        r: g.get('user')![0]!,
        p: g.get('port')![0]!,
      };
      const theirFiles = g
        .get('identityfile')!
        .map((f) => f.replace(/%([hrp])/g, (_m, k: string) => tokens[k]!));
      expect(ours.identityFiles).toEqual(theirFiles);
      expect(ours.proxyJump).toBe(g.get('proxyjump')?.[0]);
    }
  });
});

describe.skipIf(!haveSsh)('agrees with ssh -G on the options ptyrelay applies', () => {
  /** `ssh -G` of one alias as a map of keyword → values. */
  function sshG(file: string, alias: string): Map<string, string[]> {
    const res = spawnSync(SSH_CLIENT, ['-G', '-F', file, alias], { encoding: 'utf8' });
    expect(res.status, res.stderr).toBe(0);
    const g = new Map<string, string[]>();
    for (const line of res.stdout.split('\n')) {
      const [k, ...v] = line.split(' ');
      if (k) g.set(k, [...(g.get(k) ?? []), v.join(' ')]);
    }
    return g;
  }
  /** ssh -G prints StrictHostKeyChecking yes/no as true/false. */
  const G_STRICT: Record<string, string> = {
    true: 'yes',
    false: 'no',
    ask: 'ask',
    'accept-new': 'accept-new',
  };
  const cases: Record<string, string[]> = {
    'Match host (after HostName) and user': [
      'Host m1',
      '  HostName real.example',
      '  User ops',
      'Match host real.example user ops',
      '  Port 2202',
      '  StrictHostKeyChecking accept-new',
    ],
    'Match originalhost and negated user': [
      'Match originalhost m2 !user root',
      '  IdentitiesOnly yes',
      '  ConnectTimeout 4',
      'Match user root',
      '  StrictHostKeyChecking no',
    ],
    'StrictHostKeyChecking yes and a ProxyJump chain': [
      'Host m3',
      '  StrictHostKeyChecking yes',
      '  ProxyJump a@j1:2222,j2,ssh://j3:2200',
      '  IdentitiesOnly no',
    ],
    'StrictHostKeyChecking off and ask (first wins)': [
      'Host m4',
      '  StrictHostKeyChecking off',
      'Host *',
      '  StrictHostKeyChecking ask',
    ],
    'defaults (ask, IdentitiesOnly no)': ['Host other', '  Port 1'],
  };
  for (const [name, lines] of Object.entries(cases)) {
    it(name, () => {
      const file = join(home, 'gopts.conf');
      writeFileSync(file, `${lines.join('\n')}\n`);
      for (const alias of ['m1', 'm2', 'm3', 'm4', 'm5']) {
        for (const localUser of ['root']) {
          const g = sshG(file, alias);
          const ours = resolveSshConfig(parseSshConfig(readFileSync(file, 'utf8'), file), alias, {
            homeDir: home,
            localUser,
          });
          expect(ours.hostName ?? alias).toBe(g.get('hostname')![0]);
          expect(ours.user ?? localUser).toBe(g.get('user')![0]);
          expect(String(ours.port ?? 22)).toBe(g.get('port')![0]);
          expect(ours.strictHostKeyChecking ?? 'ask').toBe(G_STRICT[g.get('stricthostkeychecking')![0]!]);
          expect(ours.identitiesOnly ?? false).toBe(g.get('identitiesonly')![0] === 'yes');
          // ssh -G prints the hops normalised ([user@]host[:port]); compare them hop by hop.
          const hops = (list: string | undefined) =>
            list === undefined ? undefined : parseJumpChain(list).map(parseJumpSpec);
          expect(hops(ours.proxyJump)).toEqual(hops(g.get('proxyjump')?.[0]));
          if (alias === 'm3' && name.includes('ProxyJump')) expect(hops(ours.proxyJump)).toHaveLength(3);
          expect(String(ours.connectTimeoutSec ?? 'none')).toBe(g.get('connecttimeout')![0]);
        }
      }
    });
  }
});
