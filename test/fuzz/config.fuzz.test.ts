import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { isPtyRelayError } from '../../provider/errors.js';
import {
  DEFAULT_FLOW_CONTROL,
  DEFAULT_LIMITS,
  HOST_KEYS,
  loadConfig,
  validateConfig,
} from '../../relay/service/config.js';
import { fuzzParams, TEST_TIMEOUT_MS } from './fuzz-options.js';

/** Strings a hostile or careless config may hold. */
const nastyString = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 12 }),
  fc.constantFrom(
    '',
    'local',
    '__proto__',
    'constructor',
    'toString',
    'hasOwnProperty',
    '$(touch /tmp/x)',
    '`id`',
    'a;b',
    'a\nb',
    'a\0b',
    '=ls',
    '~/d',
    '/abs',
    'rel/dir',
    'https://example.com',
    'https://example.com:8443/',
    'null',
    'build1',
    '127.0.0.1',
  ),
);
const nastyNumber = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.constantFrom(0, -1, 1, 1024, 65535, 65536, 2 ** 31, 2 ** 53, 1e308, -0, 4096 * 1024, 16 * 1024 * 1024),
);
const leaf: fc.Arbitrary<unknown> = fc.oneof(
  nastyString,
  nastyNumber,
  fc.boolean(),
  fc.constant(null),
  fc.array(nastyString, { maxLength: 3 }),
  fc.jsonValue({ maxDepth: 2 }),
);

/** An object of known keys (each value often near the right type), sometimes with a stray key. */
function section(
  keys: readonly string[],
  value: fc.Arbitrary<unknown> = leaf,
): fc.Arbitrary<Array<[string, unknown]>> {
  return fc.array(
    fc.tuple(fc.oneof({ weight: 8, arbitrary: fc.constantFrom(...keys) }, nastyString), value),
    {
      maxLength: keys.length + 1,
    },
  );
}

/** JSON text of a nested object, spliced into its parent verbatim. */
class RawJson {
  constructor(readonly text: string) {}
}

/** JSON text of an object, so keys such as `__proto__` become own keys exactly as in a config file. */
function jsonObject(pairs: Array<[string, unknown]>): RawJson {
  const body = pairs.map(
    ([k, v]) => `${JSON.stringify(k)}:${v instanceof RawJson ? v.text : JSON.stringify(v)}`,
  );
  return new RawJson(`{${body.join(',')}}`);
}

const hostValue = fc.oneof(
  leaf,
  fc.constantFrom('strict', 'ask', 'accept-new', 'no', true, false, 22, ['pass', 'show', 'x'], ['', 'x']),
);
const hostArb = section(HOST_KEYS, hostValue).map(jsonObject);
const hostsArb = fc
  .array(fc.tuple(nastyString, fc.oneof({ weight: 4, arbitrary: hostArb }, leaf)), { maxLength: 3 })
  .map(jsonObject);
const sizeValue = fc.oneof(leaf, fc.integer({ min: 0, max: 300 * 1024 * 1024 }));

/** Config text: mostly the right shape with wrong or extreme values, sometimes anything at all. */
const configText: fc.Arbitrary<string> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc
      .array(
        fc.oneof(
          hostsArb.map((v): [string, unknown] => ['hosts', v]),
          section(['host', 'port']).map((p): [string, unknown] => ['listen', jsonObject(p)]),
          section(Object.keys(DEFAULT_LIMITS), sizeValue).map((p): [string, unknown] => [
            'limits',
            jsonObject(p),
          ]),
          section(Object.keys(DEFAULT_FLOW_CONTROL), sizeValue).map((p): [string, unknown] => [
            'flowControl',
            jsonObject(p),
          ]),
          section(['maxQueueAgeMs']).map((p): [string, unknown] => ['input', jsonObject(p)]),
          section(['cert', 'key']).map((p): [string, unknown] => ['tls', jsonObject(p)]),
          section(['ownerGraceMs', 'defaultTimeoutMs', 'pollIntervalMs', 'maxReadBytes'], sizeValue).map(
            (p): [string, unknown] => ['agents', jsonObject(p)],
          ),
          section(
            ['enabled', 'segmentBytes', 'sessionBytes', 'hostBytes', 'freePercent', 'tailBytes'],
            sizeValue,
          ).map((p): [string, unknown] => ['history', jsonObject(p)]),
          fc.array(nastyString, { maxLength: 3 }).map((v): [string, unknown] => ['allowedOrigins', v]),
          fc.tuple(nastyString, leaf),
        ),
        { maxLength: 6 },
      )
      .map((pairs) => jsonObject(pairs).text),
  },
  { weight: 1, arbitrary: fc.jsonValue().map((v) => JSON.stringify(v)) },
);

/** validateConfig must return a config or throw CONFIG_INVALID; anything else is a bug. */
function validate(raw: unknown): ReturnType<typeof validateConfig> | undefined {
  try {
    return validateConfig(raw);
  } catch (err) {
    if (!isPtyRelayError(err, 'CONFIG_INVALID')) throw err;
    expect(err.message.length).toBeGreaterThan(0);
    return undefined;
  }
}

describe('fuzz: relay config', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ptr-fuzz-config-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it(
    'validateConfig gives a config or CONFIG_INVALID for any JSON, and a config it gives validates to itself',
    () => {
      fc.assert(
        fc.property(configText, (text) => {
          const raw = JSON.parse(text);
          const cfg = validate(raw);
          if (!cfg) return;
          expect(Object.getPrototypeOf(cfg.hosts)).toBe(Object.prototype);
          expect(Object.keys(cfg.hosts)).toEqual(Object.keys(raw?.hosts ?? {}));
          expect(Number.isInteger(cfg.listen.port)).toBe(true);
          expect(validate(JSON.parse(JSON.stringify(cfg)))).toEqual(cfg);
        }),
        fuzzParams('config validate', { seed: 18_421, runs: 500, longRuns: 200_000 }),
      );
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'loadConfig on any file text gives a config or CONFIG_INVALID',
    () => {
      let n = 0;
      fc.assert(
        fc.property(fc.oneof(configText, fc.string({ unit: 'binary', maxLength: 40 })), (text) => {
          const file = join(dir, `c${n++}.json`);
          writeFileSync(file, text);
          chmodSync(file, 0o600);
          try {
            loadConfig(file);
          } catch (err) {
            if (!isPtyRelayError(err, 'CONFIG_INVALID')) throw err;
          } finally {
            rmSync(file, { force: true });
          }
        }),
        fuzzParams('config load', { seed: 18_422, runs: 200, longRuns: 20_000 }),
      );
    },
    TEST_TIMEOUT_MS,
  );
});
