/**
 * docs/deploy.md's load-balancer arithmetic, held to the health check its example configures and
 * to the code's defaults. Found from outside (2026-12-02): the crash bound left out the skew margin
 * the coordinator waits before judging a term over (`clockSkewMs`); "a new leader takes requests
 * 2 × 5 = 10 s after it first answers 200" (the first 200 a check sees is the first of the two it
 * needs: it is within 10 s of starting to lead); and a leader that hangs rather than refusing is
 * out only after each failed check waited out its timeout, not within 10 s.
 */
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ElectionConfigSchema } from '../../lib/schemas/config.js';
import { LeaderElector } from '../../lib/sdk/elector.js';
import { defaultRenewIntervalMs } from '../../lib/sdk/elector-options.js';
import { HEIR_WAIT_MAX_MS } from '../../lib/sdk/step.js';
import { DynamoDBModel } from '../../sim/dynamodb-model/index.js';
import { prose } from './markdown.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const deploy = readFileSync(join(root, 'docs/deploy.md'), 'utf8');
/** The section on the load balancer, its code and its prose. */
const section = deploy.split(/^(?=### )/m).find((s) => s.startsWith('### A load balancer'))!;
/** The section's prose in one line: a sentence may wrap anywhere. */
const text = prose(section).replace(/\s+/g, ' ');

/** The target group's health check the example gives (`const leaderCheck = {...}`), in seconds and counts. */
function leaderCheck() {
  const line = /const leaderCheck = \{(.*)\};/.exec(section)?.[1];
  expect(line, 'docs/deploy.md gives `const leaderCheck = { ... }`').toBeDefined();
  const seconds = (k: string) => Number(new RegExp(`${k}: Duration\\.seconds\\((\\d+)\\)`).exec(line!)![1]);
  const count = (k: string) => Number(new RegExp(`${k}: (\\d+)`).exec(line!)![1]);
  return { interval: seconds('interval'), timeout: seconds('timeout'), healthy: count('healthyThresholdCount'), unhealthy: count('unhealthyThresholdCount') };
}

const client = new DynamoDBModel({ now: () => 0 }).client({ name: 'test' });
const defaults = new LeaderElector({ leaseName: 'x', identity: 'w', mode: 'NoCoordination', client, callbacks: { onStartedLeading: () => undefined } }).options;
const leaseSeconds = defaults.leaseDurationMs / 1000;
const skewSeconds = ElectionConfigSchema.parse({}).clockSkewMs / 1000;
/** How long a cancelled leader with an heir leads on without the push path, at most, at the defaults: until its next renewal is due (handOffDelay), a renew interval. */
const leadOnSeconds = defaultRenewIntervalMs({ mode: 'coordinated', renewDeadlineMs: defaults.renewDeadlineMs, retryPeriodMs: defaults.retryPeriodMs }) / 1000;

describe("docs/deploy.md's load-balancer timing is the arithmetic of its health check and the code's defaults", () => {
  const c = leaderCheck();

  it('a new leader takes requests within healthyThresholdCount x interval of starting to lead', () => {
    expect(text).toContain(`within ${c.healthy} × ${c.interval} = ${c.healthy * c.interval} s of starting to lead`);
    expect(text).not.toContain('after it first answers 200');
  });

  it("a crash costs up to the lease duration plus clockSkewMs plus healthyThresholdCount x interval", () => {
    expect(text).toContain(`the lease duration (${leaseSeconds} s by default)`);
    expect(text).toContain(`(\`clockSkewMs\`, ${skewSeconds} s by default)`);
    expect(text).toContain(`up to about ${leaseSeconds + skewSeconds + c.healthy * c.interval} s with these settings, the lease duration plus \`clockSkewMs\` plus \`healthyThresholdCount × interval\``);
  });

  it('a leader that refuses is out within unhealthyThresholdCount x interval; one that hangs, plus the timeout', () => {
    expect(text).toContain(`gets none within ${c.unhealthy} × ${c.interval} = ${c.unhealthy * c.interval} s`);
    expect(text).toContain(`one that hangs (accepts, never answers) within ${c.unhealthy} × ${c.interval} + ${c.timeout} = ${c.unhealthy * c.interval + c.timeout} s, \`interval × unhealthyThresholdCount + timeout\``);
  });
});

describe("docs/deploy.md on an ECS deploy that replaces the leader: the target group's deregistration delay comes first", () => {
  // found from outside (2026-12-02): an ECS service attached to a target group deregisters a task
  // and waits the deregistration delay (300 s by default) before its SIGTERM, so the delay is paid
  // by every deploy that replaces the leader; the table said it "delays a deploy, not a failover"
  const c = leaderCheck();
  const delays = [...section.matchAll(/deregistrationDelay: Duration\.seconds\((\d+)\)/g)].map((m) => Number(m[1]));

  it('the example sets a short delay on every leader target group', () => {
    expect(delays.length).toBeGreaterThanOrEqual(2);
    expect(new Set(delays).size).toBe(1);
  });

  it('says the order (deregistered, the delay, then SIGTERM), what it costs, and the setting', () => {
    expect(text).not.toContain('delays a deploy, not a failover');
    expect(text).toContain('deregisters the task from the target group, waits the target group\'s deregistration delay');
    expect(text).toContain('and only then sends SIGTERM');
    expect(text).toContain(`the deregistration delay plus the hand-off plus up to ${c.healthy} × ${c.interval} = ${c.healthy * c.interval} s`);
    expect(text).toContain('With the default delay (300 s)');
    // found by a review (2026-12-07, twelfth): "about 15 s in all" left out the hand-off's wait: without
    // the push path a cancelled leader with an heir leads on until its next renewal is due (handOffDelay)
    expect(text).toContain(`\`deregistration_delay.timeout_seconds\`) to a few seconds, as the example does (${delays[0]} s: up to about ${delays[0]! + leadOnSeconds + c.healthy * c.interval} s in all, ${delays[0]! + c.healthy * c.interval} s with the push path)`);
  });

  it("a hand-off costs healthyThresholdCount x interval with the push path; without it, a renew interval more (the leader leads on until its heir next reads)", () => {
    expect(text).not.toContain('so it costs the 10 s alone');
    expect(text).toContain(`at once with the push path (\`PushChannel\`): it costs the ${c.healthy * c.interval} s alone`);
    expect(text).toContain(`up to a renew interval (${leadOnSeconds} s by default, ${HEIR_WAIT_MAX_MS / 1000} s at most): the heir is routed to up to ${leadOnSeconds + c.healthy * c.interval} s after the SIGTERM`);
  });
});

describe('docs/deploy.md on a request that reaches a worker not leading, behind an ALB or NLB', () => {
  // by reading (a review, 2026-12-07, fourteenth): "answer with 503 …; a client retries once" is
  // HAProxy's pattern (its configuration adds Retry-After and retries a 503 on another worker). An
  // ALB or NLB does neither: through a hand-off the old leader is still routed to until
  // unhealthyThresholdCount checks fail, the new one only after healthyThresholdCount pass, so a
  // quick retry meets the same 503
  const c = leaderCheck();

  it("asks for Retry-After of healthyThresholdCount x interval, or a redirect or proxy to getLeader()'s address, and says one quick retry is not enough", () => {
    expect(text).not.toContain('a client retries once');
    expect(text).toContain(`\`Retry-After: ${c.healthy * c.interval}\` (\`healthyThresholdCount × interval\`)`);
    expect(text).toContain("redirect (307) or proxy it to `getLeader()`'s address");
    expect(text).toContain('a quick retry is not enough');
  });
});
