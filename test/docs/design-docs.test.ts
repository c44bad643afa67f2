/**
 * Issue 37, item 8 ("docs as design"): docs/safety.md and docs/benchmarks.md hold today's
 * guarantees and figures in tables, each with the command or test that reproduces it; the argument
 * behind a row is stated once, below its table; history lives in CHANGELOG.md; advice to operators
 * lives in docs/deploy.md. What is pinned here is the shape a reader relies on.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { creationSeconds } from '../../lib/local/stream-poller.js';
import { prose, slug } from './markdown.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const read = (file: string): string => readFileSync(join(root, file), 'utf8');

/** The rows of the table whose header line starts with `header`, each split into its cells. */
function tableRows(markdown: string, header: string): string[][] {
  const lines = prose(markdown).split('\n');
  const start = lines.findIndex((l) => l.startsWith(header));
  expect(start, `a table headed "${header}"`).toBeGreaterThanOrEqual(0);
  const rows: string[][] = [];
  for (let i = start + 2; i < lines.length && lines[i]!.startsWith('|'); i++) rows.push(lines[i]!.split(/(?<!\\)\|/).slice(1, -1).map((c) => c.trim()));
  return rows;
}

describe("docs/safety.md's Planted bugs table states today's seeds", () => {
  it('coordinatorIgnoresSession: the seed that catches it, with no history of how it got there (that is in CHANGELOG.md)', () => {
    const row = tableRows(read('docs/safety.md'), '| planted bug |').find((r) => r[0]!.includes('`coordinatorIgnoresSession'));
    expect(row).toBeDefined();
    // before: "(5019 since a confirmation or renewal onto a session that may have landed unanswered holds the session's renewals)"
    for (const cell of row!) expect(cell).not.toMatch(/\b\d{4} since\b/);
    expect(read('CHANGELOG.md').replace(/\s+/g, ' ')).toContain(
      "(5019 since a confirmation or renewal onto a session that may have landed unanswered holds the session's renewals)",
    );
  });
});

/** The text of a Markdown file's section under the heading that starts with `heading`, up to the next heading of its level or above. */
function section(markdown: string, heading: string): string | undefined {
  const lines = prose(markdown).split('\n');
  const start = lines.findIndex((l) => /^#{2,4} /.test(l) && l.replace(/^#+ /, '').startsWith(heading));
  if (start < 0) return undefined;
  const level = /^#+/.exec(lines[start]!)![0].length;
  const end = lines.findIndex((l, i) => i > start && /^#+ /.test(l) && /^#+/.exec(l)![0].length <= level);
  return lines.slice(start, end < 0 ? undefined : end).join('\n').replace(/\s+/g, ' ');
}

describe('upgrade advice lives in docs/deploy.md, the guarantee in docs/safety.md', () => {
  it("a rolling deployment's old writers of endedTerms: deploy.md's Upgrading says what to do; safety.md's Sessions states the exposure and links to it", () => {
    const upgrading = section(read('docs/deploy.md'), 'Upgrading');
    expect(upgrading, 'docs/deploy.md has an "Upgrading" section').toBeDefined();
    expect(upgrading).toMatch(/retire CLIs built before/);
    expect(upgrading).toMatch(/force no mass release/);
    const sessions = section(read('docs/safety.md'), 'Sessions')!;
    // before: Sessions held the advice itself ("retire CLIs built before it when upgrading, and force no mass release during the deployment")
    expect(sessions).not.toMatch(/retire CLIs|force no mass release/);
    expect(sessions).toContain('(deploy.md#upgrading)');
    expect(sessions).toContain('"started afresh by a function of before"');
  });
});

describe("docs/deploy.md tells the operator what a failing session mark does, and links to the guarantee", () => {
  it('A stream record that keeps failing: the hold on the next election is linked to docs/safety.md#sessions, not restated', () => {
    const text = section(read('docs/deploy.md'), 'A stream record that keeps failing')!;
    // before: "a mark the session row refuses for now is deferred to the timer queue, the lease's next election held long enough without it until it lands"
    expect(text).not.toMatch(/held long enough/);
    expect(text).toMatch(/deferred to the timer queue(?:[^.]|\.md)*\(safety\.md#sessions\)/);
  });
});

describe("docs/safety.md's threat model: a row is a claim and a link, the argument under its heading", () => {
  it('the worker process itself: one or two sentences linking to the suspend argument, which is a subsection of Clocks', () => {
    const md = read('docs/safety.md');
    const row = tableRows(md, '| principal |').find((r) => r[0] === 'the worker process itself');
    expect(row).toBeDefined();
    // before: one cell of 5,724 characters holding the whole laptop-sleep argument
    expect(row![3]!.length).toBeLessThanOrEqual(600);
    const link = /\]\(#([\w-]+)\)/.exec(row![3]!)?.[1];
    expect(link).toBeDefined();
    const lines = prose(md).split('\n');
    const heading = lines.findIndex((l) => /^#### /.test(l) && slug(l.replace(/^#### /, '')) === link);
    expect(heading, `a #### heading making #${link}`).toBeGreaterThan(0);
    const parent = lines.slice(0, heading).reverse().find((l) => /^#{2,3} /.test(l));
    expect(parent).toBe('### Clocks');
    const sub = section(md, lines[heading]!.replace(/^#### /, ''))!;
    for (const name of ['sleptSince', 'gainedSince', 'SINCE_BOOT_DRIFT', 'a laptop that slept past its lease', 'a laptop that sleeps while its take of the lease is in flight'])
      expect(sub).toContain(name);
  });
});

describe('tables hold a claim, a figure and a command or test; the argument goes below, once', () => {
  it.each(['docs/safety.md', 'docs/benchmarks.md', 'docs/deploy.md'])('%s: no table cell is longer than 600 characters', (file) => {
    const long = prose(read(file))
      .split('\n')
      .map((l, i) => ({ l, line: i + 1 }))
      .filter(({ l }) => l.startsWith('|'))
      .flatMap(({ l, line }) => l.split(/(?<!\\)\|/).slice(1, -1).map((c) => ({ line, length: c.trim().length, start: c.trim().slice(0, 60) })))
      .filter((c) => c.length > 600);
    // before: 16 such cells (safety.md's threat model, checker, simulator and regression-seed rows; benchmarks.md's comparison and cost rows), the longest 5,724 characters
    // deploy.md, before it was checked here: the push path's row of What gets deployed (650) and the iot:Connect row of grantWorker's IoT grant (1,087)
    expect(long).toEqual([]);
  });
});

describe('docs/benchmarks.md holds today\'s figures, each with its command, and the shortest explanation (issue 37, item 8)', () => {
  it('is condensed: at most 700 lines, every section a figure of today links to still there', () => {
    const md = read('docs/benchmarks.md');
    // before: 959 lines, Cost of scale alone 276 (the model, its calibration and the limits told as narration beside their tables)
    expect(md.split('\n').length - 1).toBeLessThanOrEqual(700);
    for (const heading of ['Figures today', 'Repeated crashes', 'Hand-off', 'Cost at rest', 'Cost of scale', 'Region loss', 'Clients behind a load balancer', 'Simulator speed'])
      expect(section(md, heading), `a section "${heading}"`).toBeDefined();
  });
});

describe("docs/safety.md's Sessions: each guarantee once, each test it cites there to find", () => {
  const sessions = (): string => section(read('docs/safety.md'), 'Sessions')!;

  it('is condensed: at most 440 lines, the candidate rows (which hold no term) under Nothing is lost', () => {
    const lines = prose(read('docs/safety.md')).split('\n');
    const start = lines.indexOf('### Sessions');
    const end = lines.findIndex((l, i) => i > start && /^#{2,3} /.test(l));
    // before: 460 lines, a candidate row's timing among the session rows
    expect(end - start).toBeLessThanOrEqual(440);
    expect(sessions()).not.toContain('**A candidate row the schema refuses');
    expect(section(read('docs/safety.md'), 'Nothing is lost')).toContain('**A candidate row the schema refuses whose stamp does not parse**');
  });

  it('every test name it quotes after a test file is in that file', () => {
    const missing: string[] = [];
    let file: string | undefined;
    for (const m of sessions().matchAll(/`(test\/[\w/.-]+\.test\.ts)`|"([^"]+)"/g)) {
      if (m[1] !== undefined) {
        file = m[1];
        continue;
      }
      const parts = m[2]!.split('…').map((p) => p.trim()).filter((p) => p.length > 8);
      if (file === undefined || parts.length === 0 || m[2] === '63 s of two leaders') continue; // a phrase, not a test's name
      const source = read(file).replace(/\s+/g, ' ');
      if (!parts.every((p) => source.includes(p))) missing.push(`${file}: "${m[2]}"`);
    }
    expect(missing).toEqual([]);
  });
});

describe("docs/safety.md's Sessions says what grantWorker grants on session partitions as infra/ grants it", () => {
  it("the grant's own partition read and written; every other session partition read (GetItem and Query: test/infra/grant-worker.test.ts), never written", () => {
    const text = section(read('docs/safety.md'), 'Sessions')!;
    // before: "allows writes (UpdateItem, DeleteItem, Query) to the grant's own session partition …, and only GetItem on the others";
    // infra/deployment.ts grants GetItem and Query on every session partition (grantSessionReads, query: true), for getLeader and a follower's query of a holder's own process's sessions
    expect(text).not.toMatch(/only GetItem on the others/);
    expect(text).toMatch(/`grantWorker` allows GetItem, UpdateItem, DeleteItem and Query on the grant's own session partition[^.]*reads alone \(GetItem, Query\) on the others, writing none/);
  });
});

describe("docs/safety.md's arguments: condensed, and a named paragraph found under the heading that links to it", () => {
  /** A `##`/`###` section's length in lines, its heading included, up to the next heading of either level. */
  const linesOf = (md: string, heading: string): number => {
    const lines = prose(md).split('\n');
    const start = lines.indexOf(heading);
    expect(start, heading).toBeGreaterThan(0);
    const end = lines.findIndex((l, i) => i > start && /^#{2,3} /.test(l));
    return end - start;
  };

  it('the whole page is at most 1,300 lines', () => {
    // before (issue 37, item 8): 1,723 lines, 194,133 characters
    expect(read('docs/safety.md').split('\n').length - 1).toBeLessThanOrEqual(1300);
  });

  it('every repository path it names in code spans is there', () => {
    const paths = [...new Set([...prose(read('docs/safety.md')).matchAll(/`((?:lib|test|sim|chaos|bench|functions|infra|packages)\/[\w./-]+)`/g)].map((m) => m[1]!))];
    expect(paths.length).toBeGreaterThan(50);
    // before: `lib/sim/dynamodb-model/` and `test/sdk/sim-harness.ts`, moved to sim/ by issue 37's one simulation home
    expect(paths.filter((p) => !existsSync(join(root, p)))).toEqual([]);
  });

  it('At most one leader, Sessions and Session rows written by others state each guarantee, mechanism and bound once, short', () => {
    const md = read('docs/safety.md');
    // before (issue 37, item 8): 217, 334 and 143 lines of exact argument, the history of their fixes among it
    expect(linesOf(md, '### At most one leader')).toBeLessThanOrEqual(130);
    expect(linesOf(md, '### Sessions')).toBeLessThanOrEqual(210);
    expect(linesOf(md, '### Session rows written by others')).toBeLessThanOrEqual(100);
  });

  it('a link to a section followed by an italic name ("[Sessions](#sessions), *A term ended by someone else*") lands on the section whose bold lead has that name', () => {
    const md = read('docs/safety.md');
    const text = prose(md);
    const sectionOf = (anchor: string): string => {
      const parts = text.split(/^(?=#{2,3} )/m);
      const found = parts.find((p) => slug(/^#{2,3} (.*)/.exec(p)?.[1] ?? '') === anchor);
      expect(found, `a section making #${anchor}`).toBeDefined();
      return found!.replace(/\s+/g, ' ');
    };
    const wrong = [...text.replace(/\s+/g, ' ').matchAll(/\]\(#([\w-]+)\),? \*([^*]+)\*/g)]
      .filter(([, anchor, name]) => !sectionOf(anchor!).includes(`**${name}`))
      .map(([m]) => m);
    // before: the threat model sent *Inside one grant* to Sessions, which it had left for Session rows written by others
    expect(wrong).toEqual([]);
  });
});

describe("docs/safety.md's At most one leader says what token a row written again carries, as lib/election/plan.ts writes it", () => {
  it('a row created without a term takes its first token from the clock (fencingTokenFloor), not 0', () => {
    // the coordinator's row for an election on a missing lease, and the CLI's --create
    expect(read('lib/election/plan.ts')).toMatch(/fencingToken: fencingTokenFloor\(now\)/);
    expect(read('lib/cli/lease-writes.ts')).toMatch(/fencingToken: fencingTokenFloor\(now\)/);
    const text = section(read('docs/safety.md'), 'At most one leader')!;
    // before: "A row written again carries no term's token of the deleted row: none (0) until its first term"
    expect(text).not.toMatch(/\b0 until its first term|none \(0\)/);
    expect(text).toMatch(/a row written again[^.]*`fencingTokenFloor`/);
  });
});

describe("docs/deploy.md's Events and metrics says which detail.time a stream read again carries, on AWS and in local mode", () => {
  it('AWS: the record\'s own time, the same again; local mode: up to the seconds creationSeconds can lose once the minute has passed', () => {
    const text = section(read('docs/deploy.md'), 'Events and metrics')!;
    // before: "publishes the events of records handled long before again, with the same ids and the same `detail.time`", for local mode too
    expect(text).not.toMatch(/with the same ids and the same `detail\.time`/);
    // DynamoDB Local rounds a record's time down to the minute; the local poller stamps a record read within that minute with the second it was read
    const minute = new Date(Date.UTC(2026, 10, 23, 12, 0, 0));
    const firstRead = creationSeconds(minute, minute.getTime() + 59_999)!;
    const readAgain = creationSeconds(minute, minute.getTime() + 120_000)!;
    const lost = firstRead - readAgain;
    expect(lost).toBe(59);
    const local = /In local mode(?:[^.]|\.(?=\w))*?up to (\d+) s earlier/.exec(text); // one sentence: a dot inside a file name goes on
    expect(local, 'deploy.md says how much earlier a local re-read may stamp an event').not.toBeNull();
    expect(Number(local![1])).toBe(lost);
    expect(text).toMatch(/On AWS(?:[^.]|\.(?=\w))*the same `detail\.time`/);
  });
});

describe('a figure architecture.md or deploy.md cites to docs/benchmarks.md is one the section it links to holds', () => {
  /** benchmarks.md's `##`/`###` section making `anchor`, whitespace folded. */
  const benchSection = (anchor: string): string => {
    const parts = prose(read('docs/benchmarks.md')).split(/^(?=#{2,3} )/m);
    const found = parts.find((p) => slug(/^#{2,3} (.*)/.exec(p)?.[1] ?? '') === anchor);
    expect(found, `benchmarks.md has a section making #${anchor}`).toBeDefined();
    return found!.replace(/\s+/g, ' ');
  };

  it.each(['docs/architecture.md', 'docs/deploy.md'])('%s: Repeated crashes and Cost at rest (dollars, requests, seconds)', (file) => {
    // the prose, tables aside (a table row is not one sentence)
    const text = prose(read(file)).split('\n').filter((l) => !l.startsWith('|')).join('\n').replace(/\s+/g, ' ');
    const wrong: string[] = [];
    for (const m of text.matchAll(/\(benchmarks\.md#(repeated-crashes|cost-at-rest)\)/g)) {
      const start = text.lastIndexOf('. ', m.index) + 2;
      const end = text.indexOf('. ', m.index);
      const sentence = text.slice(start, end < 0 ? undefined : end);
      const section = benchSection(m[1]!);
      for (const f of sentence.matchAll(/\$(\d[\d.,]*\d)|(?<![\w.,])(\d[\d.,]*(?:–\d[\d.,]*)?) (?:s|req|requests)\b/g))
        if (!section.includes(f[1] ?? f[2]!)) wrong.push(`${m[1]}: ${f[0]}`);
    }
    // before: architecture.md's third crash "taken over 12–34 s past expiry" and the second successor's
    // "43.75 instead of 28.93 requests …, $0.414 instead of $0.363" (CHANGELOG.md's figures of 2026-11-30,
    // never in that section); deploy.md's "33.1 requests a minute per lease …, $0.370" where the section gives 32.33 and $0.359
    expect(wrong).toEqual([]);
  });
});

describe("docs/safety.md's The model check: what is explored in tables, each scope with the command that reproduces it", () => {
  it('a table of scopes (depth, states, time, to reproduce), a table of what is branched over and checked, and no paragraph of thousands of characters on one line', () => {
    const text = section(read('docs/safety.md'), 'The model check')!;
    expect(text).toContain('| scope | depth | states | time');
    expect(text).toMatch(/\| scope \| depth \| states \| time [^|]*\| to reproduce, and notes \|/);
    expect(text).toContain('| what a scope explores, as its configuration allows | how |');
    for (const row of ['checked in every reachable state', 'not modelled', 'not covered']) expect(text).toContain(`| ${row} |`);
    const lines = prose(read('docs/safety.md')).split('\n');
    const start = lines.indexOf('## The model check');
    const end = lines.findIndex((l, i) => i > start && /^## /.test(l));
    // before: what is explored, checked and not modelled was one paragraph of 5,769 characters on one line, with footnotes of up to 901
    expect(lines.slice(start, end).filter((l) => !l.startsWith('|') && l.length > 4_000)).toEqual([]);
  });
});

describe("docs/architecture.md's Inside the elector names the lock, the step's events and effects as the code has them (issue 37: a newcomer finds them there)", () => {
  /** The `kind`s of the union type `name` in lib/sdk/step.ts, up to the next blank-line-separated declaration. */
  const kinds = (source: string, name: string): string[] => {
    const start = source.indexOf(`export type ${name} =`);
    expect(start, `lib/sdk/step.ts declares ${name}`).toBeGreaterThanOrEqual(0);
    const body = source.slice(start, source.indexOf(';\n', source.indexOf('\n  |', start)) + 1);
    return [...body.matchAll(/\{ readonly kind: '(\w+)'/g)].map((m) => m[1]!);
  };

  it('every LeaseLock method, every Event and Effect kind (the follower\'s included), and the three entry points', () => {
    const inside = section(read('docs/architecture.md'), 'Inside the elector')!;
    const step = read('lib/sdk/step.ts');
    const lock = read('lib/sdk/lock.ts');
    const iface = lock.slice(lock.indexOf('export interface LeaseLock {'), lock.indexOf('\n}\n', lock.indexOf('export interface LeaseLock {')));
    const methods = [...iface.matchAll(/^ {2}(\w+)\(/gm)].map((m) => m[1]!);
    expect(methods.length).toBeGreaterThan(10);
    const events = [...kinds(step, 'FollowerEvent'), ...kinds(step, 'Event')];
    // `lead` is the follower's effect decide consumes itself: the shell never sees it
    const effects = [...kinds(step, 'FollowerEffect'), ...kinds(step, 'Effect')].filter((k) => k !== 'lead');
    const missing = [...methods, ...events, ...effects].filter((n) => !inside.includes(`\`${n}\``));
    // before: the lock's `decline`, the event `slept` and the effect `takeAgain` were not named
    expect(missing).toEqual([]);
    for (const entry of ['`LeaseLock`', '`dynamoLeaseLock`', '`MemoryLeaseTable`', '`decide`', '`followerStep`', '`LeaderElector.run`', '`takePart`', '`feed`', '`carry`', '`note`'])
      expect(inside).toContain(entry);
    // one event followed end to end: read → decide → effects → carried out → answer fed back
    expect(inside).toContain('**One event, end to end: a poll\'s read.**');
  });
});

describe('docs/architecture.md is condensed (issue 37, item 8)', () => {
  it('at most 1,175 lines, every section another doc or the code links to still there', () => {
    const md = read('docs/architecture.md');
    // before: 1,359 lines, 118,345 characters ("Why the step decides as it does" 211 lines of rules and their history;
    // local mode one paragraph of 140). Issue 37's goal for this page is 1,100
    expect(md.split('\n').length - 1).toBeLessThanOrEqual(1175);
    for (const heading of ['Inside the elector', 'Why the step decides as it does', 'An election: pings and acks', 'Crash failover: succession', 'A graceful hand-off', 'A term held on a session', 'The platform signal', 'Wake-ups: the push path', 'Fencing tokens', 'Functions and events', 'Location-aware election', 'Packages and local mode', 'The model check'])
      expect(section(md, heading), `a section "${heading}"`).toBeDefined();
  });
});
