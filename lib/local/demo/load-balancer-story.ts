/**
 * `npm start`'s load-balancer story (issue 39): HAProxy in front of three worker processes, each
 * serving the SDK's health check and an application only the leader answers; HAProxy routes by
 * `GET /leader`, so one address reaches whoever leads. A client sends a request every 20 ms and
 * retries a failed one once, after the 503's Retry-After. The leader is stopped (SIGTERM: a
 * hand-off) and, in the full play, killed (kill -9: a crash). Judged: the new leader answers behind
 * the same address, and every answer came from the lease's holder of the fencing token it carried.
 * How many requests failed, and how long the move took, are printed (bench/ measures them).
 * HAProxy is Debian's `haproxy`, asked for on the user's behalf as Java is; without it (and without
 * root to install it) the story is skipped, saying what to run.
 */
import { systemClock } from '../../clock.js';
import { BehindHaproxy } from '../behind-haproxy.js';
import { ensureHaproxy, HaproxyMissingError, LEADER_CHECK } from '../haproxy.js';
import type { LocalRuntime } from '../runtime.js';
import { failoverFigures, SteadyClient, succeeded, type RequestRecord } from '../steady-client.js';
import { DEMO_TIMING } from './stories.js';

/** The lease the story's workers stand for: an API that only its leader may serve. */
export const LB_LEASE = 'orders-api';
const EVERY_MS = 20;

export interface LoadBalancerStoryResult {
  ok: boolean;
  /** Why the story did not play (HAProxy missing and not installable). */
  skipped?: string;
}

export async function playLoadBalancer(rt: LocalRuntime, opts: { short?: boolean; print?: (line: string) => void } = {}): Promise<LoadBalancerStoryResult> {
  const print = opts.print ?? ((l: string) => process.stdout.write(`${l}\n`));
  const clock = systemClock;
  print(`\n▸ Clients find the leader (issue 39): HAProxy in front of three workers, routing by GET /leader (200 only on the leader)`);
  let binary: string;
  try {
    // the repository's own `npm start` asks for HAProxy on the user's behalf (and says so), as for Java
    binary = ensureHaproxy({ install: true, askedBy: 'npm start' });
  } catch (e) {
    if (!(e instanceof HaproxyMissingError)) throw e;
    print(`  skipped: ${e.message.replace(/\n/g, '\n  ')}`);
    return { ok: true, skipped: e.message };
  }
  const g = await BehindHaproxy.start(rt, { lease: LB_LEASE, identities: ['api-1', 'api-2', 'api-3'], timing: DEMO_TIMING, binary });
  const t0 = clock.now();
  const since = () => `${((clock.now() - t0) / 1000).toFixed(1).padStart(5)}s`;
  const all: RequestRecord[] = [];
  let ok = true;
  try {
    print(`  ${since()}  HAProxy ${g.url} → api-1, api-2, api-3: option httpchk GET /leader, http-check expect status 200, inter ${LEADER_CHECK.intervalMs}ms rise ${LEADER_CHECK.rise} fall ${LEADER_CHECK.fall}, observe layer7 on-error fastinter (a failed request brings the worker's next check forward to ${LEADER_CHECK.fastIntervalMs}ms), a follower checked every ${LEADER_CHECK.downIntervalMs}ms, retry-on 503 with redispatch`);
    print(`  ${since()}  a client: GET ${g.url}/work every ${EVERY_MS} ms, a failed request retried once after its Retry-After (${LEADER_CHECK.retryAfterSeconds} s)`);
    const moves = opts.short ? (['stop'] as const) : (['stop', 'kill'] as const);
    for (const move of moves) {
      const old = await g.settled();
      const client = new SteadyClient({ url: `${g.url}/work`, everyMs: EVERY_MS, retry: { after: 'retry-after' } }).start();
      await g.waitFor(`${old.identity} to answer`, () => client.records.some((r) => r.first.identity === old.identity && succeeded(r.first)));
      const token = client.records.find((r) => r.first.identity === old.identity && succeeded(r.first))?.first.fencingToken;
      print(`  ${since()}  ${old.identity} leads (token ${token}): HAProxy routes every request to it`);
      const at = clock.now();
      print(`  ${since()}  · ${move === 'stop' ? `SIGTERM ${old.identity}: it hands the lease to its successor` : `kill -9 ${old.identity}: its term has to run out (lease ${DEMO_TIMING.leaseDurationMs / 1000} s)`}`);
      await (move === 'stop' ? old.stop() : old.kill());
      const next = await g.waitFor('the new leader to answer', () => client.records.find((r) => [r.first, r.retry].some((a) => succeeded(a) && a!.identity !== old.identity)));
      await clock.sleep(1_500); // the retries of the requests that failed: after their Retry-After
      const records = await client.stop();
      all.push(...records);
      const f = failoverFigures(records, at, old.identity);
      const by = [next.first, next.retry].find((a) => succeeded(a) && a!.identity !== old.identity)!;
      print(`  ${since()}  ${by.identity} answers behind the same address (token ${by.fencingToken}), ${((f.msToNewLeader ?? 0) / 1000).toFixed(2)}s after the ${move === 'stop' ? 'SIGTERM' : 'kill'}`);
      print(`           ${f.sent} requests: ${f.failedFirst} failed at the first try, ${f.failedAfterRetry} after one retry${move === 'stop' ? (f.failedAfterRetry === 0 ? ' (the goal: none lost to a client that retries once)' : ' (the goal was none: a busy machine slowed the hand-off past the retry)') : ''}`);
      if (move !== moves.at(-1)) await g.startWorker(old.identity);
    }
    // every answer came from the holder of the term whose token it carried (the workers' own lines)
    const terms = new Map(g.all.flatMap((w) => w.events.filter((e) => e.event === 'started').map((e) => [e.fencingToken!, e.identity] as const)));
    const answers = all.flatMap((r) => [r.first, r.retry]).filter((a) => succeeded(a));
    const wrong = answers.filter((a) => terms.get(a!.fencingToken!) !== a!.identity);
    ok = wrong.length === 0;
    print(`  load balancer: ${answers.length} answers, ${ok ? 'every one by the leader of its fencing token' : `${wrong.length} NOT BY THE LEADER OF THEIR TOKEN`}`);
  } finally {
    await g.stop();
  }
  return { ok };
}
