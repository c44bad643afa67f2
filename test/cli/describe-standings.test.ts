/**
 * `conclave describe lease`'s Best candidate is the one decide() acts on (a review of KEP-4355's
 * election: on a vacant lease it named a candidate that had ignored its last ping, which decide()
 * leaves out, while Next step elected another), and on a lease the coordinator does not elect it
 * says who elects instead of naming a best candidate.
 */
import { describe, expect, it } from 'vitest';
import { REPORT_ANSWER_MS, describeJson, describeLines } from '../../lib/cli/describe.js';
import { REPORT_ANSWER_MS as SDK_REPORT_ANSWER_MS } from '../../lib/sdk/step.js';
import { standings } from '../../lib/cli/explain.js';
import { notElected } from '../../lib/cli/priority.js';
import { judgedLease, type SessionSeen } from '../../lib/cli/judged.js';
import { decide } from '../../lib/election/decide.js';
import { SESSION_COMPONENT } from '../../lib/schemas/identity.js';
import { parse } from '../../lib/schemas/validation.js';
import { SetStrategyArgs } from '../../lib/cli/args.js';
import { electionConfig } from '../../lib/schemas/config.js';
import { MAX_RENEW_INTERVAL_MS, type Candidate } from '../../lib/schemas/candidate.js';
import type { Lease } from '../../lib/schemas/lease.js';
import type { Snapshot } from '../../lib/cli/read.js';
import { cand, lease, MIN, NOW } from '../fixtures.js';

const config = electionConfig();
const describeOf = (l: Lease | undefined, candidates: Candidate[]) => describeLines('component-A', { read: { key: { name: 'component-A' }, item: l, revision: l?.revision ?? 0 }, candidates } as unknown as Snapshot, NOW, config);
const line = (lines: string[], field: string) => lines.find((l) => l.startsWith(`${field}:`))?.replace(/^[^:]+:\s+/, '');
const stateOf = (lines: string[], name: string) => lines.find((l) => new RegExp(`^ {2}\\d+ +${name} `).test(l))?.split(/\s{3,}/).at(-1);

/** x (the oldest) ignored its last ping 2 minutes ago; y is fresh. */
const x = cand('x', '1.29.0', '1.29.0', { pingTime: NOW - 2 * MIN, renewTime: NOW - 10 * MIN, ackedPingTime: 0 });
const y = cand('y', '1.30.0', '1.30.0');

describe('describe lease: the best candidate by the rule decide() elects by', () => {
  it('vacant: a candidate that ignored its last ping is left out, as decide() leaves it out (before: named best while Next step elected y)', () => {
    const lines = describeOf(lease(undefined, { lastHolderIdentity: 'h' }), [x, y]);
    expect(line(lines, 'Next step')).toBe('elect y with a fencing token above 7');
    expect(line(lines, 'Best candidate')).toBe('y: the only candidate that counts');
    expect(stateOf(lines, 'x')).toBe('ignored its last ping: not asked nor elected while the lease is vacant until it renews (a candidate that answers is elected instead)');
  });

  it('vacant, and no candidate that answers could win: every one is asked again, and none is called best', () => {
    const lines = describeOf(lease(undefined, { lastHolderIdentity: 'h' }), [x]);
    expect(line(lines, 'Next step')).toMatch(/^open election component-A#13 \(vacant: noHolder\) and ping x$/);
    expect(line(lines, 'Best candidate')).toBe('none (no live candidate with valid versions that answers pings)');
    expect(stateOf(lines, 'x')).toBe('ignored its last ping: to be asked again at the next check (no candidate that answers could win)');
  });

  it('held: one that ignored its last ping is passed over only for askAgainAfterMs, as before', () => {
    const held = lease('y');
    const recent = cand('x', '1.29.0', '1.29.0', { pingTime: NOW - config.askAgainAfterMs / 2, renewTime: NOW - 10 * MIN, ackedPingTime: 0 });
    expect(standings(held, [recent, y], NOW, config).best?.candidate.name).toBe('y');
    // pinged longer ago than askAgainAfterMs (x, 2 minutes): asked again at a re-election, so preferred
    expect(standings(held, [x, y], NOW, config).best?.candidate.name).toBe('x');
    // the same row on the lease vacant: still left out
    expect(standings(lease(undefined), [x, y], NOW, config).best?.candidate.name).toBe('y');
  });

  it("says the SDK's own wait for a vacancy report's answer (the CLI ships no SDK module, so it keeps a copy)", () => {
    expect(REPORT_ANSWER_MS).toBe(SDK_REPORT_ANSWER_MS);
  });

  it('names no best candidate where the coordinator does not elect, and says who does', () => {
    const third = (s: string) => cand('t', '1.31.0', '1.31.0', { preferredStrategies: [s] });
    expect(line(describeOf(lease('y', { strategy: 'NoCoordination' }), [x, y]), 'Best candidate')).toBe(
      "none: under NoCoordination the coordinator elects nobody; workers run with mode 'NoCoordination' race for the lease; coordinated workers (candidates) take it only once it stands vacant and a vacancy report goes unanswered for 10s (or their fallbackAfterMs passes), each take reported to onError as a NoCoordinatorError: run them with mode 'NoCoordination'",
    );
    expect(line(describeOf(lease(undefined), [y, third('example.com/my-strategy')]), 'Best candidate')).toBe(
      'none: a third party elects under "example.com/my-strategy"; the coordinator leaves the lease alone (with no third party running, a worker takes the vacant lease by its fallback)',
    );
    const a = cand('a', '1.31.0', '1.31.0', { preferredStrategies: ['OldestEmulationVersion'] });
    expect(line(describeOf(lease(undefined), [a, third('example.com/my-strategy')]), 'Best candidate')).toBe(
      "none: the coordinator elects nobody while the candidates' strategies contradict each other (Strategy above); a worker may take the lease vacant by its fallback",
    );
    // an operator's OldestEmulationVersion wins over the candidates' preference: the coordinator elects
    expect(line(describeOf(lease(undefined, { strategy: 'OldestEmulationVersion' }), [y, third('example.com/my-strategy')]), 'Best candidate')).toMatch(/^y: /);
  });

  it('versions with build metadata: ordered as semver orders them (build ignored), ties by registration, said so', () => {
    const p = cand('p', '1.30.0', '1.31.0+git.bbb', { createdAt: NOW - 2 * 60 * MIN });
    const q = cand('q', '1.30.0', '1.31.0+git.aaa');
    const lines = describeOf(lease(undefined), [q, p]);
    expect(line(lines, 'Best candidate')).toMatch(/^p: same versions as q \(equal as semver orders them: build metadata is ignored\), registered earlier/);
    expect(line(lines, 'Next step')).toBe('elect p with a fencing token above 7');
  });
});

describe("describe lease: a candidate that stands down (standsDownUntil) is judged as decide() judges it (before: called fresh and the best while decide() passed it over)", () => {
  // x: the oldest, fresh, but its work failed at two starts in a row: marked until 5 minutes on
  const until = NOW + 5 * MIN;
  const down = cand('x', '1.29.0', '1.29.0', { standsDownUntil: until });
  const said = `stands down until ${new Date(until).toISOString()} (in 5m; its work failed at two starts in a row): not elected, named successor nor preferred until its candidacy's next renewal`;
  const unranked = (lines: string[], name: string) => lines.find((l) => new RegExp(`^ {2}- +${name} `).test(l))?.split(/\s{3,}/).at(-1);

  it('vacant: not the best, listed among those that do not count, and the next step elects another', () => {
    const lines = describeOf(lease(undefined, { lastHolderIdentity: 'h' }), [down, y]);
    expect(line(lines, 'Next step')).toBe('elect y with a fencing token above 7');
    expect(line(lines, 'Best candidate')).toBe('y: the only candidate that counts');
    expect(unranked(lines, 'x')).toBe(said);
    expect(stateOf(lines, 'y')).toBe('fresh');
  });

  it('held by another: not preferred over the holder, and the successor named is another', () => {
    const w = cand('w', '1.31.0', '1.31.0');
    const lines = describeOf(lease('y', { successor: 'x' }), [down, w, y]);
    expect(standings(lease('y'), [down, w, y], NOW, config).best?.candidate.name).toBe('y');
    expect(line(lines, 'Best candidate')).toBe('y: older emulation version than w (1.30.0 < 1.31.0)');
    expect(line(lines, 'Next step')).toMatch(/^designate w successor: /);
    expect(unranked(lines, 'x')).toBe(said);
  });

  it('its own term, while it lasts: counted as the holder, and said to stand down', () => {
    const lines = describeOf(lease('x'), [down, y]);
    expect(stateOf(lines, 'x')).toBe(`holder, stands down until ${new Date(until).toISOString()} (in 5m; its work failed at two starts in a row): counted only as the holder while its term lasts; not elected, named successor nor preferred until its candidacy's next renewal`);
    expect(standings(lease('x'), [down, y], NOW, config).best?.candidate.name).toBe('x');
    expect(line(lines, 'Next step')).toMatch(/^designate y successor: /);
  });

  it('every live candidate stands down: none is called best, and the next step says why nothing is done', () => {
    const lines = describeOf(lease(undefined), [down]);
    expect(line(lines, 'Best candidate')).toBe('none (no live candidate with valid versions that answers pings and does not stand down)');
    expect(line(lines, 'Next step')).toBe('nothing: no candidate renewed recently enough to count, or each that did stands down (its work failed at two starts in a row)');
  });

  it('a mark run out, or one further ahead than any stand-down (a clock running ahead), is no stand-down, as decide() reads it', () => {
    for (const at of [NOW - 1, NOW + MAX_RENEW_INTERVAL_MS + config.clockSkewMs + 1]) {
      const lines = describeOf(lease(undefined), [cand('x', '1.29.0', '1.29.0', { standsDownUntil: at }), y]);
      expect(line(lines, 'Next step')).toMatch(/^elect x with a fencing token above 7/);
      expect(stateOf(lines, 'x')).toBe('fresh');
    }
  });
});

describe("describe lease and the CLI's other judges: a candidate standing down counts in the strategy consensus, as decide() counts it (before: the coordinator dropped it, so Next step elected a under OldestEmulationVersion while Strategy and Best candidate said the candidates agree on t's strategy)", () => {
  // a prefers OldestEmulationVersion; t, the newest binary, prefers another: t's first choice governs (strategy.ts)
  const a = cand('a', '1.31.0', '1.31.0');
  const t = (strategy: string, extra: Partial<Candidate> = {}) => cand('t', '1.32.0', '1.32.0', { preferredStrategies: [strategy], standsDownUntil: NOW + 5 * MIN, ...extra });
  const vacant = lease(undefined, { lastHolderIdentity: 'h' });

  it.each(['example.com/my-strategy', 'NoCoordination'])('%s: the strategy, the best candidate and the next step agree, marked as unmarked', (s) => {
    const marked = describeOf(vacant, [a, t(s)]);
    const unmarked = describeOf(vacant, [a, t(s, { standsDownUntil: undefined })]);
    expect(line(marked, 'Strategy')).toBe(`not set: the candidates agree on ${s}`);
    expect(line(marked, 'Best candidate')).toMatch(/^none: /);
    expect(line(marked, 'Next step')).toMatch(/^nothing: /);
    for (const f of ['Strategy', 'Best candidate', 'Next step']) expect(line(marked, f), f).toBe(line(unmarked, f));
    // release and set-priority say the coordinator does not elect there, as it does not
    expect(notElected(vacant, [a, t(s)], NOW, { config })).toBe(`its candidates agree on ${s}`);
    expect(decide('component-A', vacant, [a, t(s)], NOW, config)).toMatchObject({ kind: 'leaveAlone', strategy: s });
  });
});

describe("describe lease -o json: candidates in the order of the lease as judged, as the text shows them and decide() counts them (before: the raw lease, so a holder standing down on a session was listed after the ranked ones)", () => {
  // x holds the lease on session s-x (its own stamp a minute old, its session renewed 2 s ago: held as judged), and stands down
  const held = lease('x', { holderInstance: 'x_1@p1', session: 's-x', leaseDurationSeconds: 15, renewTime: NOW - MIN, acquireTime: NOW - MIN });
  const row = { component: SESSION_COMPONENT, name: 's-x', holderIdentity: 's-x_1', hostname: 'web-1', leaseDurationSeconds: 60, acquireTime: NOW - 10 * MIN, renewTime: NOW - 2_000, revision: 3, process: 'p1' };
  const session: SessionSeen = { name: 's-x', row, readAt: NOW, judging: { row: { name: 's-x', renewTime: row.renewTime, process: 'p1' } } };
  const x = cand('x', '1.29.0', '1.29.0', { standsDownUntil: NOW + 5 * MIN });
  const snap = { read: { key: { name: 'component-A' }, item: held, revision: held.revision }, candidates: [y, x], session } as unknown as Snapshot;

  it('the holder standing down, its term live on its session: ranked first in both', () => {
    expect(decide('component-A', judgedLease(held, session, NOW), [y, x], NOW, config)).toMatchObject({ kind: 'leaveAlone', reason: 'leaderHealthy' });
    const text = describeLines('component-A', snap, NOW, config);
    expect(stateOf(text, 'x')).toMatch(/^holder, stands down until /);
    expect(describeJson(snap, NOW, config).candidates.map((c) => c.name)).toEqual(['x', 'y']);
  });
});

describe('set-strategy: the rule a worker’s preferredStrategies meet', () => {
  const problems = (input: object) => {
    const r = SetStrategyArgs.safeParse({ lease: 'l', ...input });
    return r.success ? [] : r.error.issues.map((i) => i.message);
  };
  it('a name without "/" must be one Conclave knows, --third-party or not (before: any name was set with --third-party)', () => {
    const told = `"OldestEmulatedVersion" is not a strategy Conclave knows (did you mean "OldestEmulationVersion"?); a third party's strategy is a qualified name with a domain prefix, such as "example.com/my-strategy" (set with --third-party)`;
    expect(problems({ strategy: 'OldestEmulatedVersion' })).toEqual([told]);
    expect(problems({ strategy: 'OldestEmulatedVersion', thirdParty: true })).toEqual([told]);
    expect(problems({ strategy: 'NoCoordination' })).toEqual([]);
  });
  it("a third party's qualified name still needs --third-party: it stops the coordinator electing on the lease", () => {
    expect(problems({ strategy: 'example.com/my-strategy' })).toEqual([
      `"example.com/my-strategy" is a third party's strategy: the coordinator would leave the lease alone, to whatever elects under that name; add --third-party to set it (Conclave runs OldestEmulationVersion, NoCoordination)`,
    ]);
    expect(problems({ strategy: 'example.com/my-strategy', thirdParty: true })).toEqual([]);
    expect(problems({ strategy: 'a/b/c', thirdParty: true })).toEqual([expect.stringMatching(/^"a\/b\/c" is no qualified name: /)]);
    expect(parse(SetStrategyArgs, { lease: 'l', strategy: 'example.com/my-strategy', thirdParty: true }, 'set-strategy arguments').strategy).toBe('example.com/my-strategy');
  });
});

// a review of the operator CLI (2026-12-07, twelfth): "(takes the lease at once if it falls vacant)"
// was printed for any successor named, whatever its row and the lease showed
describe('describe lease: whether the successors named take the lease, as their SDKs judge it (takersOf)', () => {
  const s = cand('s', '1.30.0', '1.30.0', { identity: 's_1' });
  const t = cand('t', '1.31.0', '1.31.0');
  const held = (extra: Partial<Lease> = {}) => lease('h', { successor: 's', successorInstance: 's_1', secondSuccessor: 't', ...extra });

  it('each live, not standing down, nobody else preferred: taken at once, then a moment later', () => {
    expect(line(describeOf(held(), [s, t]), 'Successor')).toBe('s (takes the lease at once if it falls vacant), then t (if the successor has not, a moment later)');
  });

  it('a successor that stands down is not said to take it (its SDK refuses the take then); the second takes it a moment later', () => {
    const down = { ...s, standsDownUntil: NOW + 30_000 };
    expect(line(describeOf(held(), [down, t]), 'Successor')).toBe(
      's (does not take the lease if it falls vacant now: it stands down until 2026-01-01T12:00:30.000Z (its work failed at two starts in a row)), then t (takes the lease a moment after it falls vacant)',
    );
  });

  it('neither while another is preferred; nor one whose row is gone, stale or names another start-up', () => {
    expect(line(describeOf(held({ preferredHolder: 'y' }), [s, t, y]), 'Successor')).toBe('s (does not take the lease if it falls vacant now: y is preferred), then t (does not take the lease if it falls vacant now: y is preferred)');
    expect(line(describeOf(held(), [{ ...s, identity: 's_2' }, { ...t, renewTime: NOW - 40 * MIN }]), 'Successor')).toBe(
      's (does not take the lease if it falls vacant now: its worker started again since it was named), then t (does not take the lease if it falls vacant now: its candidate row is stale)',
    );
    expect(line(describeOf(held({ secondSuccessor: undefined }), []), 'Successor')).toBe('s (does not take the lease if it falls vacant now: it has no candidate row)');
  });

  it('a vacant lease: the names only, as before', () => {
    expect(line(describeOf(lease(undefined, { successor: 's', secondSuccessor: 't' }), [s, t]), 'Successor')).toBe('s, then t');
  });
});

describe("describe lease's Next step says when a re-election takes a pending preference back (a review, 2026-12-08: it said only 'open re-election')", () => {
  // X preferred (older emulation than the holder H); Y, better than X, pinged since and not renewed for 5 minutes
  const H = cand('H', '1.30.0', '1.30.0');
  const X = cand('X', '1.29.0', '1.29.0', { identity: 'X_1' });
  const Y = cand('Y', '1.30.0', '1.30.0', { priority: 10, renewTime: NOW - 5 * MIN });

  it('a preference pending: the step names it withdrawn', () => {
    const lines = describeOf(lease('H', { preferredHolder: 'X', successor: 'X', successorInstance: 'X_1' }), [H, X, Y]);
    expect(line(lines, 'Next step')).toMatch(/^open re-election component-A#\d+: ping Y while H keeps leading, then preempt it for a better candidate that answers; the preference for X is withdrawn meanwhile \(a better candidate appeared\)$/);
  });

  it('none pending: the step as before', () => {
    const lines = describeOf(lease('H'), [H, Y]);
    expect(line(lines, 'Next step')).toMatch(/^open re-election component-A#\d+: ping Y while H keeps leading, then preempt it for a better candidate that answers$/);
  });
});
