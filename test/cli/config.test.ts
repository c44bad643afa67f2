/**
 * The CLI judges expiry, acks and staleness with the coordinator's configuration as deployed
 * (--election-config, or CONCLAVE_ELECTION_CONFIG as the functions read it), not the defaults.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../../lib/clock.js';
import { ElectionConfigSchema } from '../../lib/schemas/config.js';
import { ENV } from '../../lib/wiring.js';
import { NOW, SEC, cand, lease } from '../fixtures.js';
import { cliHarness, type CliHarness } from './harness.js';

let h: CliHarness;
/** 12 s after the 10 s term was renewed: 2 s past its end. */
const at = () => manualClock(NOW + 12 * SEC);
const dir = mkdtempSync(join(tmpdir(), 'conclave-config-'));

beforeAll(async () => {
  h = await cliHarness('cli-config');
  await h.seedLease(lease('g1', { name: 'skew' }));
  await h.seedCandidate(cand('g1', '1.30.0', '1.30.0', { leaseName: 'skew', renewTime: NOW + 12 * SEC }));
  // Pinged 3 s ago and not answered: pending inside a 5 s ack window, ignored after a 2 s one.
  await h.seedCandidate(cand('g2', '1.31.0', '1.31.0', { leaseName: 'skew', pingTime: NOW + 9 * SEC, renewTime: NOW + 8 * SEC }));
});
afterAll(() => h.t.drop());

const row = (out: string, name: string) => out.split('\n').find((l) => l.startsWith(`  `) && l.trim().split(/\s{3,}/)[1] === name)!.trim().split(/\s{3,}/);

describe('the deployed election config', () => {
  it('by default: the defaults (1 s skew, 5 s ack window), and says so', async () => {
    const r = await h.run(['describe', 'lease', 'skew'], { clock: at() });
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/^State: +vacant: expired \(the term ended 2s ago; the coordinator allows 1s of clock skew\)$/m);
    expect(row(r.out, 'g2')).toContain('pending (pinged 3s ago)');
    expect(r.out).toMatch(/^\(judged now with the coordinator's default settings: ack window 5s, clock skew 1s, candidates stale after 30m\)$/m);
  });

  it('--election-config JSON: a 5 s clock skew keeps the term held, a 2 s ack window makes the ping ignored', async () => {
    const r = await h.run(['--election-config', '{"clockSkewMs":5000,"ackWindowMs":2000}', 'describe', 'lease', 'skew'], { clock: at() });
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/^State: +held, term ends 2s ago$/m);
    expect(row(r.out, 'g2')).toContain('ignored (pinged 3s ago)');
    // the term held: a re-election of it waits its lease duration (10 s) for answers, not the ack window (before: only "ack window 2s", as its events showed 10 s)
    expect(r.out).toMatch(/^\(judged now with the election config from --election-config: ack window 2s \(a re-election of this held lease: 10s\), clock skew 5s, candidates stale after 30m\)$/m);
    const c = await h.run(['--election-config', '{"ackWindowMs":2000}', 'get', 'candidates', 'skew'], { clock: at() });
    expect(c.out).toMatch(/^g2 .* ignored \(pinged 3s ago\)/m);
  });

  it('askAgainAfterMs: a candidate that ignored its ping is passed over until then, and told when it is asked again', async () => {
    // held (a 5 s clock skew): askAgainAfterMs is a held lease's rule; a vacant one's election leaves g2 out until it renews (decide)
    const r = await h.run(['--election-config', '{"ackWindowMs":2000,"askAgainAfterMs":10000,"clockSkewMs":5000}', 'describe', 'lease', 'skew'], { clock: at() });
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/ missed its ping at \S+Z \(3s ago\): passed over \(may be dead\) until it renews or answers when asked again, in 7s$/m);
    const later = await h.run(['--election-config', '{"ackWindowMs":2000,"askAgainAfterMs":2000,"clockSkewMs":5000}', 'describe', 'lease', 'skew'], { clock: at() });
    expect(later.out).toContain('ignored its last ping: to be asked again at the next check');
    const vacant = await h.run(['--election-config', '{"ackWindowMs":2000,"askAgainAfterMs":10000}', 'describe', 'lease', 'skew'], { clock: at() });
    expect(vacant.out).toContain('ignored its last ping: not asked nor elected while the lease is vacant until it renews (a candidate that answers is elected instead)');
  });

  it('a file, e.g. the coordinator function’s CONCLAVE_ELECTION_CONFIG saved by the AWS CLI', async () => {
    const file = join(dir, 'deployed.json');
    writeFileSync(file, '{"ackWindowMs":2000,"clockSkewMs":5000,"candidateStaleAfterMs":1800000,"candidateRepingAfterMs":900000}\n');
    const r = await h.run(['--election-config', file, 'describe', 'lease', 'skew'], { clock: at() });
    expect(r.out).toMatch(/^State: +held, term ends 2s ago$/m);
    expect(r.out).toContain(`(judged now with the election config from --election-config (${file}): ack window 2s (a re-election of this held lease: 10s), clock skew 5s`);
  });

  it('CONCLAVE_ELECTION_CONFIG, the variable the functions read, stands in for the flag', async () => {
    expect(ENV.electionConfig).toBe('CONCLAVE_ELECTION_CONFIG');
    const r = await h.run(['describe', 'lease', 'skew'], { clock: at(), env: { CONCLAVE_ELECTION_CONFIG: '{"clockSkewMs":5000}' } });
    expect(r.out).toMatch(/^State: +held, term ends 2s ago$/m);
    expect(r.out).toMatch(/judged now with the election config from CONCLAVE_ELECTION_CONFIG: /);
    const flag = await h.run(['--election-config', '{}', 'describe', 'lease', 'skew'], { clock: at(), env: { CONCLAVE_ELECTION_CONFIG: '{"clockSkewMs":5000}' } });
    expect(flag.out).toMatch(/^State: +vacant: expired/m);
  });

  it.each([
    ['{"ackWindowMs":-1}', /^error: invalid election config \(--election-config\): ackWindowMs: must be whole milliseconds above 0, e.g. 5000 \(the default\)$/],
    // a misspelt field: named, with the fields there are (the schema's own)
    ['{"ackWindow":2000}', new RegExp(`^error: invalid election config \\(--election-config\\): ackWindow: unknown field "ackWindow": the fields are ${Object.keys(ElectionConfigSchema.shape).join(', ')}$`)],
    ['{"ackWindowMs":', /^error: invalid election config \(--election-config\): \(root\): must be JSON such as \{"ackWindowMs":2000\}/],
    [join(dir, 'missing.json'), /^error: --election-config: no file at .*missing\.json - pass the JSON itself/],
  ])('%s is refused, naming the field', async (value, message) => {
    const r = await h.run(['--election-config', value, 'describe', 'lease', 'skew'], { clock: at() });
    expect(r.code).toBe(1);
    expect(r.err).toMatch(message);
  });
});
