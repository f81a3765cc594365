import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import * as z from 'zod/mini';
import { isPtyRelayError } from '../../provider/errors.js';
import {
  argv,
  bool,
  integer,
  issueText,
  oneOf,
  parseSettings,
  settings,
  text,
} from '../../relay/core/config-validate.js';
import { parseConfigText } from '../../relay/service/config.js';

/** The CONFIG_INVALID message of parsing `raw` with `schema`. */
function refusal(schema: z.ZodMiniType, raw: unknown): string {
  try {
    parseSettings(schema, raw);
  } catch (err) {
    expect(isPtyRelayError(err, 'CONFIG_INVALID')).toBe(true);
    return (err as Error).message;
  }
  throw new Error('expected CONFIG_INVALID');
}

describe('issueText: a zod issue as the config message (key path, what was expected, what came)', () => {
  const hosts = settings({
    hosts: z.optional(
      z.record(
        z.string(),
        settings({
          host: text('is required (a host name, address or ssh alias)'),
          port: z.optional(integer(1, 65535)),
          useAgent: z.optional(bool()),
          hostKeyPolicy: z.optional(oneOf(['strict', 'ask'])),
          passwordCommand: z.optional(argv()),
        }),
      ),
    ),
    origins: z.optional(z.array(text())),
  });

  it('names the key path, the expected kind and range, and what came', () => {
    expect(refusal(hosts, { hosts: { box: { host: 'b', port: 70000 } } })).toBe(
      'hosts.box.port must be an integer 1-65535, got 70000',
    );
    expect(refusal(hosts, { hosts: { box: { host: 'b', port: '22' } } })).toBe(
      'hosts.box.port must be an integer 1-65535, got "22"',
    );
    expect(refusal(hosts, { hosts: { box: { host: 'b', port: 2.5 } } })).toBe(
      'hosts.box.port must be an integer 1-65535, got 2.5',
    );
    expect(refusal(hosts, { hosts: { box: { host: 'b', useAgent: 'yes' } } })).toBe(
      'hosts.box.useAgent must be true or false, got "yes"',
    );
    expect(refusal(hosts, { hosts: { box: { host: 'b', hostKeyPolicy: null } } })).toBe(
      'hosts.box.hostKeyPolicy must be one of strict, ask, got null',
    );
    expect(refusal(hosts, { hosts: { box: { host: 'b', passwordCommand: 'pass show' } } })).toBe(
      'hosts.box.passwordCommand must be a command as an array of words, e.g. ["pass", "show", "build1"] (run without a shell), got "pass show"',
    );
    expect(refusal(hosts, { hosts: { box: { host: '' } } })).toBe(
      'hosts.box.host must be a non-empty string, got ""',
    );
    expect(refusal(hosts, { hosts: { box: {} } })).toBe(
      'hosts.box.host is required (a host name, address or ssh alias)',
    );
    expect(refusal(hosts, { hosts: { box: [] } })).toBe('hosts.box must be an object, got an array');
  });

  it('writes array indexes in brackets and calls the top `config`', () => {
    expect(refusal(hosts, { origins: ['a', 7] })).toBe('origins[1] must be a non-empty string, got 7');
    expect(refusal(hosts, 'x')).toBe('config must be an object, got "x"');
    expect(refusal(hosts, null)).toBe('config must be an object, got null');
  });

  it('names an unknown key under its object, with the keys it may have, before any value', () => {
    expect(refusal(hosts, { hots: {} })).toBe(
      'config.hots is not a known setting (expected one of: hosts, origins)',
    );
    expect(refusal(hosts, { hosts: { box: { port: 0, identityfile: 'x' } } })).toBe(
      'hosts.box.identityfile is not a known setting (expected one of: host, port, useAgent, hostKeyPolicy, passwordCommand)',
    );
  });

  it('puts an entry-wide message after a colon, and any other after a space', () => {
    const custom = (path: PropertyKey[], message: string) =>
      issueText({ code: 'custom', path, message, input: undefined });
    expect(custom(['hosts', 'a/b'], ": host names may only use letters, digits, '.', '_' and '-'")).toBe(
      "hosts.a/b: host names may only use letters, digits, '.', '_' and '-'",
    );
    expect(
      custom(['flowControl', 'ackBytes'], '(524288) must not exceed flowControl.lowWatermark (262144)'),
    ).toBe('flowControl.ackBytes (524288) must not exceed flowControl.lowWatermark (262144)');
    expect(custom(['allowedOrigins', 0], 'must be an origin')).toBe('allowedOrigins[0] must be an origin');
  });
});

describe('parseConfigText', () => {
  const file = join('/nowhere', 'ptyrelay', 'config.json');

  it('validates a text without the file existing, its relative key paths under the file dir', () => {
    const c = parseConfigText(
      JSON.stringify({ hosts: { b: { host: 'b', identityFile: 'keys/id', knownHostsFile: '~/kh' } } }),
      file,
    );
    expect(c.hosts.b).toEqual({
      host: 'b',
      identityFile: '/nowhere/ptyrelay/keys/id',
      knownHostsFile: '~/kh',
    });
    expect(c.listen).toEqual({ host: '127.0.0.1', port: 7681 });
  });

  it("refuses with loadConfig's messages: the file, then the key path", () => {
    const refused = (text: string) => {
      try {
        parseConfigText(text, file);
      } catch (err) {
        expect(isPtyRelayError(err, 'CONFIG_INVALID')).toBe(true);
        return (err as Error).message;
      }
      throw new Error('expected CONFIG_INVALID');
    };
    expect(refused('{"hosts": {"box": {"host": "b", "port": 0}}}')).toBe(
      `${file}: hosts.box.port must be an integer 1-65535, got 0`,
    );
    expect(refused('{"flowControl": {"ackBytes": 524288}}')).toBe(
      `${file}: flowControl.ackBytes (524288) must not exceed flowControl.lowWatermark (262144)`,
    );
    expect(refused('{ nope')).toMatch(new RegExp(`^config file ${file} is not valid JSON: `));
  });
});
