/**
 * What the docs claim, held to the code: the figures README.md (and docs/deploy.md) state about
 * what the construct synthesizes, and every relative link in README.md, CHANGELOG.md and docs/*.md,
 * anchors included. A figure that moves in the code makes this fail until the sentence says so too.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Stack, type CfnResource } from 'aws-cdk-lib';
import type { Template } from 'aws-cdk-lib/assertions';
import * as cr from 'aws-cdk-lib/custom-resources';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Conclave } from '@conclave/cdk';
import { buildAssets, synth, type Synthesized } from '../infra/support.js';
import { anchors, prose, slug } from './markdown.js';
import { WORKER_WRITES } from '../../infra/access.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const read = (file: string): string => readFileSync(join(root, file), 'utf8');
/** The files whose figures are pinned here. */
const FIGURE_FILES = ['README.md', 'docs/deploy.md'];
/**
 * The files whose links are checked: README.md, CHANGELOG.md (at the root, so a row moved there
 * word for word from docs/ must have its links made root-relative) and every page of docs/
 * (generated docs/api/ aside).
 */
const LINKED_FILES = ['README.md', 'CHANGELOG.md', ...readdirSync(join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

/** Every number a file states as `<N> <what>` (e.g. "12 CloudWatch alarms"), outside code blocks. */
function statedCounts(markdown: string, what: string): number[] {
  const pattern = new RegExp(`(\\d+) ${what.replace(/ /g, '\\s+')}`, 'g');
  return [...prose(markdown).matchAll(pattern)].map((m) => Number(m[1]));
}

/** Inline links `[text](target)` outside code blocks and code spans: their targets. */
function links(markdown: string): string[] {
  const text = prose(markdown).replace(/`[^`\n]*`/g, '');
  return [...text.matchAll(/\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]!);
}

/** What is wrong with a relative link from `file`, or undefined when it points at something that exists. */
function brokenLink(file: string, target: string): string | undefined {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target)) return undefined; // https:, mailto:: not this test's business
  const [path, anchor] = target.split('#', 2) as [string, string | undefined];
  const to = path === '' ? join(root, file) : resolve(join(root, dirname(file)), decodeURIComponent(path));
  if (relative(root, to).startsWith('..')) return `${file}: ${target} → ${to} is outside the repository`;
  if (!existsSync(to)) return `${file}: ${target} → ${relative(root, to)} does not exist`;
  if (anchor !== undefined && statSync(to).isFile() && to.endsWith('.md') && !anchors(readFileSync(to, 'utf8')).has(decodeURIComponent(anchor).toLowerCase()))
    return `${file}: ${target} → no heading in ${relative(root, to)} makes the anchor #${anchor}`;
  return undefined;
}

describe('the docs helpers', () => {
  it('make GitHub anchors from headings', () => {
    expect(slug('Monthly cost: 100 leases × 3 candidates')).toBe('monthly-cost-100-leases--3-candidates');
    expect(slug('Short-lived code: `withLease`, `tryWithLease`, `runOnce`')).toBe('short-lived-code-withlease-trywithlease-runonce');
    expect(slug("Where Conclave departs from Kubernetes, and why")).toBe('where-conclave-departs-from-kubernetes-and-why');
    expect([...anchors('# A\n## B\n```sh\n# not a heading\n```\n## B\n')]).toEqual(['a', 'b', 'b-1']);
  });

  it('read counts and links outside code only', () => {
    const md = 'It has 5 Lambda functions.\n```text\n7 Lambda functions\n[x](nowhere.md)\n```\nSee [here](docs/deploy.md) and `[not](a-link.md)`.';
    expect(statedCounts(md, 'Lambda functions')).toEqual([5]);
    expect(links(md)).toEqual(['docs/deploy.md']);
  });

  it('find a broken link, and a broken anchor', () => {
    expect(brokenLink('README.md', 'docs/nowhere.md')).toMatch(/does not exist/);
    expect(brokenLink('README.md', 'docs/deploy.md#no-such-heading')).toMatch(/no heading/);
    expect(brokenLink('README.md', 'https://example.com/x')).toBeUndefined();
    // docs/safety.md's links, moved word for word to CHANGELOG.md at the root
    expect(brokenLink('CHANGELOG.md', '#at-most-one-leader')).toMatch(/no heading in CHANGELOG.md/);
    expect(brokenLink('CHANGELOG.md', 'benchmarks.md#region-loss')).toMatch(/does not exist/);
    expect(brokenLink('CHANGELOG.md', '../CHANGELOG.md#history-of-the-measurements')).toMatch(/outside the repository/);
    expect(brokenLink('CHANGELOG.md', 'docs/benchmarks.md#region-loss')).toBeUndefined();
  });
});

describe('every relative link in README.md, CHANGELOG.md and docs/*.md points at something that exists', () => {
  it.each(LINKED_FILES)('%s', (file) => {
    const targets = links(read(file));
    expect(targets.length, `${file} has links`).toBeGreaterThan(0);
    expect(targets.map((t) => brokenLink(file, t)).filter((b) => b !== undefined)).toEqual([]);
  });
});

describe('the figures the docs state about the construct are what it synthesizes', () => {
  let s: Synthesized<Stack>;
  let t: Template;
  let conclave: Conclave;
  beforeAll(async () => {
    await buildAssets();
    // the construct with its defaults, as the README's example uses it (the push path on)
    s = synth((app) => {
      const stack = new Stack(app, 'Claims');
      conclave = new Conclave(stack, 'Conclave', { tablePrefix: 'conclave' });
      return stack;
    });
    t = s.template;
  });
  afterAll(() => s?.cleanup());

  /** Conclave's own functions; any other function in the template must be aws-cdk-lib's custom-resource provider. */
  const ownFunctions = (): string[] => {
    const all = Object.keys(t.findResources('AWS::Lambda::Function'));
    const own = Object.values(conclave.functions).map((f) => s.stack.getLogicalId(f.node.defaultChild as CfnResource));
    const provider = `AWS${cr.AwsCustomResource.PROVIDER_FUNCTION_UUID.replace(/-/g, '')}`;
    expect(all.filter((id) => !own.includes(id) && !id.startsWith(provider)), 'Lambda functions that are neither Conclave\'s nor aws-cdk-lib\'s custom-resource provider').toEqual([]);
    expect(own.every((id) => all.includes(id))).toBe(true);
    return own;
  };

  it.each(FIGURE_FILES)('%s: "N Lambda functions"', (file) => {
    const stated = statedCounts(read(file), 'Lambda functions');
    if (file === 'README.md') expect(stated.length, 'README.md states how many Lambda functions the construct synthesizes').toBeGreaterThan(0);
    for (const n of stated) expect(n, `${file} says ${n} Lambda functions`).toBe(ownFunctions().length);
  });

  it.each(FIGURE_FILES)('%s: "N CloudWatch alarms"', (file) => {
    const stated = statedCounts(read(file), 'CloudWatch alarms');
    if (file === 'README.md') expect(stated.length, 'README.md states how many CloudWatch alarms the construct synthesizes').toBeGreaterThan(0);
    const alarms = Object.keys(t.findResources('AWS::CloudWatch::Alarm')).length;
    for (const n of stated) expect(n, `${file} says ${n} CloudWatch alarms`).toBe(alarms);
  });
});

describe('docs/architecture.md draws the elector as a state machine and its flows as Mermaid sequence diagrams', () => {
  it('opens with the elector’s state diagram, then one sequenceDiagram per flow, none with a ";" (Mermaid reads it as a line break)', () => {
    const blocks = [...read('docs/architecture.md').matchAll(/```mermaid\n([\s\S]*?)```/g)].map((m) => m[1]!);
    expect(blocks.length).toBeGreaterThanOrEqual(6);
    // issue 37: a newcomer meets the elector's states first
    expect(blocks[0]!.trimStart().startsWith('stateDiagram-v2')).toBe(true);
    expect(blocks[0]).toContain('Leading');
    for (const b of blocks.slice(1)) expect(b.trimStart().startsWith('sequenceDiagram')).toBe(true);
    for (const b of blocks) expect(b).not.toContain(';');
  });
});

describe("the API reference tells each way a call's TableWait ends (lib/table-wait.ts)", () => {
  it.each(['sdk.withlease.md', 'sdk.getleader.md', 'sdk.listidentities.md'])('%s: its @throws TableNotFoundError names none found, DescribeTable refused, CREATING waited for, and ACTIVE given up on after one more try', (page) => {
    const line = read(`docs/api/${page}`).split('\n').find((l) => l.startsWith('TableNotFoundError '));
    expect(line, `docs/api/${page} has a TableNotFoundError @throws`).toBeDefined();
    expect(line).toContain('where DescribeTable finds none either');
    expect(line).toContain('where DescribeTable is refused, after 60 s of tries');
    expect(line).toContain('(CREATING) is waited for');
    // before: the ACTIVE case (81c6ed8: one more try, then rejected, saying so) was not told
    expect(line).toContain('where DescribeTable shows it ACTIVE, after one more try');
  });
});

describe("test/guards.ts's explore guard states the model check's figure as docs/safety.md's table gives it", () => {
  it("names the largest scope's time alone on the machine (the table's rows not timed at load)", () => {
    const lines = read('docs/safety.md').split('\n');
    const header = lines.findIndex((l) => l.startsWith('| scope | depth | states | time'));
    expect(header).toBeGreaterThan(0);
    const end = lines.findIndex((l, i) => i > header && !l.startsWith('|'));
    const table = lines.slice(header + 2, end);
    const idle = table.map((l) => l.split('|')[4]!.trim()).filter((t) => !/at load/.test(t)).map((t) => Number(/^([\d.]+) s\b/.exec(t)![1]));
    expect(idle.length).toBeGreaterThanOrEqual(10);
    const largest = Math.max(...idle);
    // before: "the largest scope over three minutes when idle", beside a table whose largest is 121.0 s
    const comments = read('test/guards.ts').replace(/\n\s*\*\s*/g, ' '); // a comment's lines joined
    expect(comments).toContain(`the largest scope ${largest.toFixed(1)} s when idle`);
  });
});

describe('a rule the design docs state once, where it belongs, the other places linking to it', () => {
  /** The sections of a Markdown file (its prose), each under its `##`/`###` heading. */
  const sections = (file: string): { file: string; heading: string; text: string }[] =>
    prose(read(file))
      .split(/^(?=#{2,3} )/m)
      .map((s) => ({ file, heading: /^#{2,3} (.*)/.exec(s)?.[1] ?? '(top)', text: s.replace(/\s+/g, ' ') }));
  it('the failed-mark hold (a mark that fails holds the next election) is stated in docs/safety.md, Sessions, alone', () => {
    const stating = ['docs/architecture.md', 'docs/safety.md']
      .flatMap(sections)
      .filter((s) => /\b(?:mark (?:that )?fails|whose mark fails)\b[^.]*\bholds\b/.test(s.text))
      .map((s) => `${s.file}, ${s.heading}`);
    // before: architecture.md's operator's-delete bullet stated it a third time, beside Sessions and Nothing is lost's Records
    expect(stating).toEqual(['docs/safety.md, Sessions']);
    expect(read('docs/architecture.md')).toMatch(/mark fails[^.]*\(safety\.md#sessions\)/);
  });
});

describe("the model check's figures are docs/safety.md's alone", () => {
  it('docs/architecture.md, The model check, states no counts, planted-bug steps or coverage of its own: it links to safety.md#the-model-check', () => {
    const section = prose(read('docs/architecture.md')).split(/^## /m).find((s) => s.startsWith('The model check'));
    expect(section).toBeDefined();
    // before: a table of five scopes from 2026-11-29 (86,712 states …), a planted-bug table, and a "Not covered" list naming sessions and NoCoordination, which safety.md's 24 scopes cover
    expect(section).not.toMatch(/^\| scope \|/m);
    expect(section).not.toMatch(/^\| planted bug/m);
    expect(section).not.toMatch(/\*\*Not covered:\*\* sessions/);
    expect(section).toContain('(safety.md#the-model-check)');
  });
});

// a review (2026-12-06): the table had drifted from the grant (holderAddress, session, the second
// successor, identityClaim, the candidates' renewal statement, the run-once fence were missing)
describe("deploy.md's table of what a worker may write", () => {
  it('lists each statement of WORKER_WRITES, its attributes and ReturnValues as the grant has them', () => {
    const md = read('docs/deploy.md');
    const table = md.slice(md.indexOf('| table | statement | attributes | ReturnValues |')).split('\n\n')[0]!;
    const rows = table
      .split('\n')
      .slice(2)
      .map((l) => l.split(' | ').map((c) => c.replace(/^\| |\s*\|$/g, '')))
      .map(([table, , attributes, returnValues]) => ({ table, attributes: [...attributes!.matchAll(/`([^`]+)`/g)].map((m) => m[1]), returnValues: [...returnValues!.matchAll(/`([^`]+)`/g)].map((m) => m[1]) }));
    const granted = Object.entries(WORKER_WRITES).flatMap(([table, statements]) => statements.map((w) => ({ table, attributes: [...w.attributes], returnValues: [...w.returnValues] })));
    expect(rows).toEqual(granted);
  });
});
