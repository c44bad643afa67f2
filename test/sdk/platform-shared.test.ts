/**
 * Platform detection is one per process: the ECS agent throttles its task metadata endpoint (about
 * 40 requests a second, a burst of 60, then HTTP 429), and a review found 100 electors in one task
 * each asking it, three times at once on a 429: 180 requests, 40 electors with no platform, each
 * told that the endpoint "gave no answer". Now the electors of a process share one detection (kept
 * once it found the platform), an error answer is asked again only after a pause, the message says
 * what was answered, and a stop (SIGTERM) during detection ends the wait at once.
 */
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { detectPlatform } from '../../lib/sdk/platform.js';
import { LeaderElector } from '../../lib/sdk/elector.js';
import { waitFor } from './harness.js';
import { heldClock, loopbackServers, testTables } from '../support.js';

const servers = loopbackServers();
afterEach(() => servers.close());

const serve = async (handler: RequestListener): Promise<string> => `http://127.0.0.1:${await servers.listen(handler)}`;

const TASK = { Cluster: 'c1', TaskARN: 'arn:aws:ecs:eu-west-1:000000000000:task/c1/abc', AvailabilityZone: 'eu-west-1a' };
const PLATFORM = { kind: 'ecs', id: TASK.TaskARN, cluster: 'c1', availabilityZone: 'eu-west-1a' };
const answerTask = (res: ServerResponse) => res.writeHead(200).end(JSON.stringify(TASK));

/** heldClock's held sleeps, and timers that never fire: a request's timeout never ends it here, only its answer or a stop. */
const heldTime = () => {
  const h = heldClock();
  return { ...h, clock: { ...h.clock, setTimer: () => ({ cancel: () => undefined }) } };
};

/** Sets process.env[name] for `fn`, then puts it back. */
async function withEnv<T>(name: string, value: string, fn: () => Promise<T>): Promise<T> {
  const saved = process.env[name];
  process.env[name] = value;
  try {
    return await fn();
  } finally {
    if (saved === undefined) delete process.env[name];
    else process.env[name] = saved;
  }
}

describe('one detection per process', () => {
  it("100 electors in one ECS task ask its metadata endpoint once, and each has the platform (the agent answers 429 past a burst of 60)", async () => {
    let asked = 0;
    const ecs = await serve((_req, res) => (++asked > 60 ? res.writeHead(429).end() : answerTask(res)));
    const t = await testTables('platform-shared');
    const stop = new AbortController();
    const errors: Error[] = [];
    try {
      await withEnv('ECS_CONTAINER_METADATA_URI_V4', ecs, async () => {
        const electors = Array.from({ length: 100 }, (_, i) => new LeaderElector({ leaseName: 'many', identity: `w${i}`, mode: 'NoCoordination', tables: t.names, client: t.client, callbacks: { onStartedLeading: () => undefined }, onError: (e) => errors.push(e) }));
        const runs = electors.map((e) => e.run(stop.signal));
        await Promise.all(electors.map((e) => e.ready));
        expect(asked).toBe(1);
        expect(electors.filter((e) => e.platform === undefined).map((e) => e.options.identity)).toEqual([]);
        expect(electors[99]!.platform).toEqual(PLATFORM);
        expect(errors.filter((e) => /platform signal is off/.test(e.message))).toEqual([]);
        stop.abort();
        await Promise.all(runs);
      });
    } finally {
      stop.abort();
      await t.drop();
    }
  });

  it('callers at once share one ask; a detection that found nothing is asked again by the next caller, one that found the platform is kept', async () => {
    let asked = 0;
    const ecs = await serve((_req, res) => (++asked === 1 ? res.writeHead(200).end('{"Cluster": 3}') : answerTask(res)));
    const env = { ECS_CONTAINER_METADATA_URI_V4: ecs };
    const told: Error[] = [];
    const first = await Promise.all(Array.from({ length: 10 }, () => detectPlatform({ env, ec2: false, onUnanswered: (e) => told.push(e) })));
    expect(first).toEqual(Array(10).fill(undefined));
    expect(asked).toBe(1);
    // each caller is told (each elector names itself in what it tells)
    expect(told).toHaveLength(10);
    expect(await detectPlatform({ env, ec2: false })).toEqual(PLATFORM);
    expect(asked).toBe(2);
    expect(await Promise.all(Array.from({ length: 10 }, () => detectPlatform({ env, ec2: false })))).toEqual(Array(10).fill(PLATFORM));
    expect(asked).toBe(2);
  });
});

describe('an error answer from the task metadata endpoint', () => {
  it('is asked again only after a pause: Retry-After when the answer gives one (no longer than the longest timeout), else the try\'s timeout', async () => {
    let asked = 0;
    const answers: ((res: ServerResponse) => void)[] = [(res) => res.writeHead(429, { 'retry-after': '3' }).end(), (res) => res.writeHead(429, { 'retry-after': '3600' }).end(), answerTask];
    const ecs = await serve((_req, res) => answers[asked++]!(res));
    const h = heldTime();
    const found = detectPlatform({ env: { ECS_CONTAINER_METADATA_URI_V4: ecs }, ec2: false, clock: h.clock });
    await waitFor('a pause, or a second ask', () => h.asked.length > 0 || asked > 1);
    expect(asked).toBe(1);
    expect(h.asked).toEqual([3_000]);
    h.release();
    await waitFor('a pause, or a third ask', () => h.asked.length > 1 || asked > 2);
    expect(asked).toBe(2);
    expect(h.asked).toEqual([3_000, 4_000]);
    h.release();
    expect(await found).toEqual(PLATFORM);
    expect(asked).toBe(3);
  });

  it('429 to every try: told the status it got and that the agent throttles, not that the endpoint gave no answer', async () => {
    let asked = 0;
    const ecs = await serve((_req, res) => (asked++, res.writeHead(429).end()));
    const h = heldTime();
    const told: Error[] = [];
    let done = false;
    const found = detectPlatform({ env: { ECS_CONTAINER_METADATA_URI_V4: ecs }, ec2: false, clock: h.clock, onUnanswered: (e) => told.push(e) }).finally(() => (done = true));
    for (let paused = 0; ; paused++) {
      await waitFor('a pause, or the end', () => done || h.asked.length > paused);
      if (done) break;
      h.release();
    }
    expect(await found).toBeUndefined();
    expect(asked).toBe(3);
    expect(h.asked).toEqual([1_000, 2_000]);
    expect(told).toHaveLength(1);
    expect(told[0]!.message).toContain(`${ecs}/task`);
    expect(told[0]!.message).toMatch(/HTTP 429/);
    expect(told[0]!.message).toMatch(/throttl/);
    expect(told[0]!.message).not.toMatch(/gave no answer/);
    expect(told[0]!.message).toMatch(/platform signal is off for this worker/);
  });
});

describe('a stop during detection', () => {
  /** A task metadata endpoint that holds each request until the test answers it; `closed` counts requests whose client gave up. */
  const holding = async () => {
    const held: { req: IncomingMessage; res: ServerResponse }[] = [];
    const seen = { closed: 0 };
    const url = await serve((req, res) => {
      held.push({ req, res });
      res.on('close', () => void (res.writableFinished || seen.closed++));
    });
    return { url, held, seen };
  };

  it('the caller whose signal aborts stops waiting at once; the others still get the answer, from the same ask', async () => {
    const ecs = await holding();
    const h = heldTime();
    const opts = { env: { ECS_CONTAINER_METADATA_URI_V4: ecs.url }, ec2: false, clock: h.clock };
    const a = new AbortController();
    const told: Error[] = [];
    let bFound: unknown = 'pending';
    const first = detectPlatform({ ...opts, signal: a.signal, onUnanswered: (e) => told.push(e) });
    const second = detectPlatform({ ...opts, signal: new AbortController().signal }).then((p) => (bFound = p));
    await waitFor('the ask', () => ecs.held.length > 0);
    a.abort();
    expect(await first).toBeUndefined();
    expect(told).toEqual([]); // stopped: not the endpoint's fault
    expect(bFound).toBe('pending');
    answerTask(ecs.held[0]!.res);
    expect(await second).toEqual(PLATFORM);
    expect(ecs.held).toHaveLength(1);
  });

  it('when no caller waits any longer, the ask is given up; a later caller asks afresh', async () => {
    const ecs = await holding();
    const h = heldTime();
    const opts = { env: { ECS_CONTAINER_METADATA_URI_V4: ecs.url }, ec2: false, clock: h.clock };
    const a = new AbortController();
    const first = detectPlatform({ ...opts, signal: a.signal });
    await waitFor('the ask', () => ecs.held.length > 0);
    a.abort();
    expect(await first).toBeUndefined();
    await waitFor('the ask given up', () => ecs.seen.closed > 0);
    const later = detectPlatform(opts);
    await waitFor('a new ask', () => ecs.held.length > 1);
    answerTask(ecs.held[1]!.res);
    expect(await later).toEqual(PLATFORM);
    expect(h.asked).toEqual([]);
  });

  it('an elector stopped (SIGTERM) while its platform is being detected: run() resolves without asking again, nothing told', async () => {
    let asked = 0;
    const stop = new AbortController();
    const ecs = await serve(() => void (++asked === 1 && stop.abort())); // accepts, never answers; the stop comes with the first ask
    const t = await testTables('platform-stop');
    const errors: Error[] = [];
    try {
      await withEnv('ECS_CONTAINER_METADATA_URI_V4', ecs, async () => {
        const elector = new LeaderElector({ leaseName: 'stopped', identity: 'w1', mode: 'NoCoordination', tables: t.names, client: t.client, callbacks: { onStartedLeading: () => undefined }, onError: (e) => errors.push(e) });
        elector.ready.catch(() => undefined);
        await elector.run(stop.signal);
        expect(asked).toBe(1);
        expect(elector.platform).toBeUndefined();
        expect(errors.filter((e) => /platform signal is off/.test(e.message))).toEqual([]);
      });
    } finally {
      stop.abort();
      await t.drop();
    }
  });
});
