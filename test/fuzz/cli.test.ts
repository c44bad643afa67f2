/**
 * The CLI's argument validation under random argv: every command with valid, odd and junk values,
 * flags in any order, against DynamoDB Local (or an unreachable endpoint). The CLI answers with
 * exit code 0, 1 (a ValidationError or another what-to-do message) or 2 (usage) — never "unexpected
 * error (a bug …)", never a crash.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Pace } from '../../lib/cli/context.js';
import { main } from '../../lib/cli/main.js';
import { manualClock } from '../../lib/clock.js';
import { testTables, type TestTables } from '../support.js';

let t: TestTables;
let prefix: string;
let eventsFile: string;
beforeAll(async () => {
  t = await testTables('fuzz-cli');
  prefix = t.names.leases.replace(/-leases$/, '');
  eventsFile = join(mkdtempSync(join(tmpdir(), 'conclave-fuzz-cli-')), 'events.jsonl');
  const good = { time: new Date().toISOString(), source: 'conclave', detailType: 'Lease Released', detail: { id: 'r:lease-released', lease: 'fuzz-lease', time: new Date().toISOString(), previousHolder: 'a', fencingToken: 1 } };
  writeFileSync(eventsFile, `${JSON.stringify(good)}\nnot json\n{"detailType":"Leader Elected","detail":{}}\n`);
});
afterAll(() => t.drop());

/** watch and events --follow stop after two rounds. */
const twoRounds = (): Pace => {
  const ac = new AbortController();
  let n = 0;
  return {
    signal: ac.signal,
    sleep: async () => {
      if (++n >= 2) ac.abort();
    },
  };
};

const value = fc.oneof(
  { arbitrary: fc.constantFrom('fuzz-lease', 'w1', '5', '30m', 'OldestEmulationVersion'), weight: 3 },
  fc.constantFrom('fuzz-lease', 'w1', 'w2', '10', '0', '-1', '1.5', '2147483648', 'abc', '', ' ', '90s', '1h30m', '10m5h', '0s', 'OldestEmulationVersion', 'NoCoordination', 'Bogus-Strategy', 'Leader Elected', 'http://x', '-o', 'json', 'a/b', '💥', '--'),
  fc.string({ maxLength: 8 }),
);
const flag = (name: string, withValue = true): fc.Arbitrary<string[]> => (withValue ? fc.tuple(fc.constant(name), value).map(([f, v]) => [f, v]) : fc.constant([name]));
const opt = (a: fc.Arbitrary<string[]>) => fc.option(a, { nil: [] as string[] });
/** The writes' confirmation: skipped, or (without it) refused — stdin is never a terminal here. */
const yes: fc.Arbitrary<string[]> = fc.constantFrom('--yes', '-y').map((f) => [f]);

const command = fc.oneof(
  fc.tuple(fc.constant(['get', 'leases'])).map(([c]) => c),
  fc.tuple(fc.constant(['get', 'candidates']), opt(value.map((v) => [v]))).map((p) => p.flat()),
  fc.tuple(fc.constant(['describe', 'lease']), value).map(([c, v]) => [...c, v]),
  fc.tuple(fc.constant(['set-priority']), value, value, opt(value.map((v) => [v])), opt(flag('--for')), opt(flag('--clear', false)), opt(yes)).map((p) => p.flat()),
  fc.tuple(fc.constant(['set-strategy']), value, opt(value.map((v) => [v])), opt(flag('--clear', false)), opt(flag('--third-party', false)), opt(flag('--create', false)), opt(yes)).map((p) => p.flat()),
  fc.tuple(fc.constant(['preempt']), value, opt(flag('--to')), opt(flag('--for')), opt(yes)).map((p) => p.flat()),
  fc.tuple(fc.constant(['release']), value, opt(flag('--force', false)), opt(flag('--timeout')), opt(yes)).map((p) => p.flat()),
  fc.tuple(fc.constant(['watch']), opt(value.map((v) => [v])), opt(flag('--interval')), fc.constant(['--count']), value).map((p) => p.flat()),
  fc.tuple(fc.constant(['events']), opt(flag('--follow', false)), opt(flag('--lease')), opt(flag('--type'))).map((p) => p.flat()),
  fc.array(value, { maxLength: 4 }),
);

describe('CLI arguments', () => {
  const codes: number[] = [];
  it('every argv ends in exit 0, 1 or 2 with a message — never an unexpected error', async () => {
    const endpoint = inject('ddbEndpoint');
    await fc.assert(
      fc.asyncProperty(
        command,
        fc.oneof({ arbitrary: fc.constant(['--endpoint', endpoint]), weight: 4 }, fc.constant(['--endpoint', 'localhost']), fc.constant(['--endpoint', 'http://127.0.0.1:1'])),
        fc.oneof({ arbitrary: fc.constant(['--table-prefix', '__PREFIX__']), weight: 4 }, { arbitrary: fc.constant(['--table-prefix', '__PREFIX__', '-o', 'json']), weight: 2 }, flag('--table-prefix'), flag('--leases-table'), flag('--output'), flag('--election-config'), fc.constant(['--table-prefix', '__PREFIX__', '--election-config', '{"ackWindowMs":2000,"clockSkewMs":0}'])),
        fc.boolean(),
        async (cmd, endpointArgs, extra, globalsFirst) => {
          const globals = [...endpointArgs, ...extra.map((x) => (x === '__PREFIX__' ? prefix : x))];
          const argv = cmd[0] === 'events' ? [...cmd, '--events-file', eventsFile] : cmd;
          const out: string[] = [];
          const err: string[] = [];
          const code = await main(globalsFirst ? [...globals, ...argv] : [...argv, ...globals], {
            out: (s) => out.push(s),
            err: (s) => err.push(s),
            color: false,
            env: {},
            clock: manualClock(),
            pace: twoRounds(),
            stdinIsTTY: false,
          });
          codes.push(code);
          expect([0, 1, 2], err.join('\n')).toContain(code);
          expect(err.join('\n')).not.toMatch(/unexpected error/);
          if (code !== 0) expect(err.join('\n').length).toBeGreaterThan(0);
        },
      ),
      // one argv known to run to the end, so the check below never rests on the draw alone (a CI run drew none)
      { numRuns: 80, examples: [[['get', 'leases'], ['--endpoint', endpoint], ['--table-prefix', '__PREFIX__'], true]] },
    );
    expect(codes.filter((c) => c === 0).length, 'some commands ran to the end against DynamoDB Local').toBeGreaterThan(0);
  });
});
