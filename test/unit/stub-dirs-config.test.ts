import { describe, expect, it } from 'vitest';
import { stubDirError } from '../../provider/daemon-runtime/stub-dir-check.js';
import {
  defaultInstallBase,
  defaultRuntimeDir,
  defaultStateDir,
  STUB_DIR_SETTINGS,
} from '../../provider/daemon-runtime/stub-paths.js';
import { PtyRelayError } from '../../provider/errors.js';
import { validateConfig } from '../../relay/service/config.js';

describe("the stub's three dirs", () => {
  it('install: configured, else $XDG_CACHE_HOME/ptyrelay when absolute, else ~/.cache/ptyrelay', () => {
    expect(defaultInstallBase({ HOME: '/h' })).toBe('/h/.cache/ptyrelay');
    expect(defaultInstallBase({ HOME: '/h', XDG_CACHE_HOME: '/xc' })).toBe('/xc/ptyrelay');
    expect(defaultInstallBase({ HOME: '/h', XDG_CACHE_HOME: 'relative' })).toBe('/h/.cache/ptyrelay');
    expect(defaultInstallBase({ HOME: '/h', XDG_CACHE_HOME: '/xc' }, '~/opt/pr')).toBe('/h/opt/pr');
    expect(defaultInstallBase({ HOME: '/h' }, '/srv/pr')).toBe('/srv/pr');
  });

  it('runtime and state: their env overrides, then XDG, then under the home', () => {
    expect(defaultRuntimeDir({ HOME: '/h' })).toBe('/h/.cache/ptyrelay/run');
    expect(defaultRuntimeDir({ HOME: '/h', XDG_RUNTIME_DIR: '/run/user/7' })).toBe('/run/user/7/ptyrelay');
    expect(defaultStateDir({ HOME: '/h' })).toBe('/h/.local/state/ptyrelay');
    expect(defaultStateDir({ HOME: '/h', XDG_STATE_HOME: '/xs' })).toBe('/xs/ptyrelay');
    expect(defaultStateDir({ HOME: '/h', PTYRELAY_STATE_DIR: '/p' })).toBe('/p');
  });

  it('a dir problem is a non-retryable error naming the dir and the setting that moves it', () => {
    const e = stubDirError('install', '/h/.cache/ptyrelay', {
      problem: 'DISK_FULL',
      errno: 'ENOSPC',
      message: 'x',
    });
    expect(e).toBeInstanceOf(PtyRelayError);
    expect(e.code).toBe('DISK_FULL');
    expect(e.phase).toBe('deploy');
    expect(e.retryable).toBe(false);
    expect(e.message).toContain('/h/.cache/ptyrelay');
    expect(e.message).toContain('installDir');
    expect(e.details).toMatchObject({
      dir: '/h/.cache/ptyrelay',
      kind: 'install',
      setting: STUB_DIR_SETTINGS.install,
    });
    for (const code of ['DIR_NOT_WRITABLE', 'DIR_NOEXEC'] as const)
      expect(stubDirError('state', '/s', { problem: code, message: 'm' }).retryable).toBe(false);
  });

  it('host config takes installDir, runtimeDir and stateDir as absolute or ~/ paths', () => {
    const c = validateConfig({
      hosts: { b: { host: 'b', installDir: '~/pr', runtimeDir: '/run/pr', stateDir: '~/.st' } },
    });
    expect(c.hosts.b).toMatchObject({ installDir: '~/pr', runtimeDir: '/run/pr', stateDir: '~/.st' });
    expect(() => validateConfig({ hosts: { b: { host: 'b', installDir: 'relative/dir' } } })).toThrow(
      /hosts\.b\.installDir must be an absolute path or start with ~\//,
    );
  });
});
