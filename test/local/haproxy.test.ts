/**
 * Issue 39, item 4: a real load balancer. HAProxy (Debian's package, asked for, not taken) in front
 * of three worker processes on DynamoDB Local with the local runtime and the push path; each serves
 * the SDK's health check and an application whose `GET /work` only the leader answers. HAProxy
 * checks `GET /leader`, so one address reaches whoever leads. A client sends requests at a steady
 * rate and retries a failed one once, as soon as the address reports someone routed to again
 * (HAProxy's monitor URI): a wait on a condition, so the outcome holds however slow the machine is.
 * Judged: every success came from the lease's holder of the fencing token it carried, tokens never go
 * back, and no request is lost, across a SIGTERM (hand-off) and a kill -9 (crash). How long each
 * costs is bench/'s (`npm run bench -- --only load-balancer`), not this test's.
 */
import { spawn, spawnSync } from 'node:child_process';
import { request, type ServerResponse } from 'node:http';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { systemClock } from '../../lib/clock.js';
import { BehindHaproxy } from '../../lib/local/behind-haproxy.js';
import { DEMO_ELECTION, DEMO_TIMING } from '../../lib/local/demo/stories.js';
import { portToBindLater } from '../../lib/local/dynamodb-local.js';
import { ensureHaproxy, haproxyConfig, serversDownState, startHaproxy, HaproxyMissingError, type Haproxy, INSTALL_HAPROXY_ENV, LEADER_CHECK, MONITOR_PATH } from '../../lib/local/haproxy.js';
import { startLocalRuntime, type LocalRuntime } from '../../lib/local/runtime.js';
import { answer, SteadyClient, succeeded, type Attempt, type RequestRecord } from '../../lib/local/steady-client.js';
import { ValidationError } from '../../lib/schemas/validation.js';
import { WAIT_GUARD_MS } from '../guards.js';
import { waitFor } from '../sdk/harness.js';
import { installWorld, loopbackServers, messageOf as messageOfError } from '../support.js';

describe('ensureHaproxy: asked for, not taken', () => {
  const saved = process.env[INSTALL_HAPROXY_ENV];
  afterEach(() => {
    if (saved === undefined) delete process.env[INSTALL_HAPROXY_ENV];
    else process.env[INSTALL_HAPROXY_ENV] = saved;
  });
  const world = (o: { found?: string; root: boolean; installs?: boolean }) => installWorld<string | undefined>({ found: undefined, installed: '/usr/sbin/haproxy', ...o });
  const messageOf = (f: () => unknown) => messageOfError(f, HaproxyMissingError);

  it('found: nothing to do', () => {
    const w = world({ found: '/usr/local/bin/haproxy', root: true });
    expect(ensureHaproxy({ ...w.opts, install: true })).toBe('/usr/local/bin/haproxy');
    expect(w.calls).toEqual([]);
  });

  it('missing, not asked — even as root: installs nothing, and names the install line and how to ask', () => {
    delete process.env[INSTALL_HAPROXY_ENV];
    const w = world({ root: true });
    const message = messageOf(() => ensureHaproxy(w.opts));
    expect(w.calls).toEqual([]);
    for (const hint of ["sudo sh -c 'apt-get update && apt-get install -y haproxy'", 'brew install haproxy', 'CONCLAVE_INSTALL_HAPROXY=1']) expect(message).toContain(hint);
  });

  it('asked by CONCLAVE_INSTALL_HAPROXY=1 or on the user\'s behalf, as root: says who asked, then installs', () => {
    process.env[INSTALL_HAPROXY_ENV] = '1';
    const byEnv = world({ root: true });
    expect(ensureHaproxy(byEnv.opts)).toBe('/usr/sbin/haproxy');
    expect(byEnv.calls).toEqual([expect.stringMatching(/CONCLAVE_INSTALL_HAPROXY=1 asks for it: installing haproxy from Debian/), 'install']);
    delete process.env[INSTALL_HAPROXY_ENV];
    const byTest = world({ root: true });
    ensureHaproxy({ ...byTest.opts, install: true, askedBy: 'npm test' });
    expect(byTest.calls[0]).toMatch(/npm test asks for it/);
  });

  it('asked, not root: the sudo line; a failed install: the line to run', () => {
    expect(messageOf(() => ensureHaproxy({ ...world({ root: false }).opts, install: true }))).toMatch(/needs root.*sudo sh -c 'apt-get update && apt-get install -y haproxy'/s);
    expect(messageOf(() => ensureHaproxy({ ...world({ root: true, installs: false }).opts, install: true }))).toMatch(/Installing haproxy failed \(exit 100\)/);
  });
});

describe.runIf(process.platform === 'linux')('HAProxy goes with the process that started it', () => {
  it('a process killed with SIGKILL (no exit handler runs) takes its HAProxy with it (a review, 2026-12-05: HAProxy ran on for good, on its port)', async () => {
    const script = `
      import { ensureHaproxy, startHaproxy } from ${JSON.stringify(fileURLToPath(new URL('../../lib/local/haproxy.ts', import.meta.url)))};
      const h = await startHaproxy({ servers: [{ name: 'a', host: '127.0.0.1', port: 1, checkPort: 2 }], binary: ensureHaproxy() });
      console.log(h.pid);
      (await import('node:net')).createServer().listen(0, '127.0.0.1'); // keeps it running until it is killed
    `;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    const pid = await new Promise<number>((resolve, reject) => {
      let out = '';
      child.stdout.on('data', (b: Buffer) => {
        out += b.toString();
        const m = /^(\d+)\n/.exec(out);
        if (m) resolve(Number(m[1]));
      });
      child.once('exit', (code) => reject(new Error(`the process exited (${code}) before saying HAProxy's pid`)));
    });
    const alive = () => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    expect(alive()).toBe(true);
    child.kill('SIGKILL');
    await waitFor("HAProxy gone after its starter's SIGKILL", () => !alive());
  });
});

describe('haproxyConfig', () => {
  it('every worker a server checked by GET /leader on its health port; a bad server name or setting is a ValidationError naming the field', () => {
    const cfg = haproxyConfig({ port: 8080, servers: [{ name: 'w1', host: '127.0.0.1', port: 9001, checkPort: 9101 }], stateFile: '/s' });
    for (const line of ['bind 127.0.0.1:8080', 'option httpchk GET /leader', 'http-check expect status 200', `monitor-uri ${MONITOR_PATH}`, 'server w1 127.0.0.1:9001 check port 9101', `default-server inter ${LEADER_CHECK.intervalMs}ms fastinter ${LEADER_CHECK.fastIntervalMs}ms downinter ${LEADER_CHECK.downIntervalMs}ms rise 1 fall 2`])
      expect(cfg).toContain(line);
    const bad = (f: () => unknown, field: RegExp) => {
      expect(f).toThrow(ValidationError);
      expect(f).toThrow(field);
    };
    bad(() => haproxyConfig({ port: 8080, servers: [{ name: 'w 1', host: '127.0.0.1', port: 9001, checkPort: 9101 }], stateFile: '/s' }), /name/);
    bad(() => haproxyConfig({ port: 8080, servers: [], settings: { ...LEADER_CHECK, rise: 0 }, stateFile: '/s' }), /rise/);
  });

  it("README's HAProxy configuration checks and routes as haproxyConfig does (the one this test and bench/ run): timeout check included", () => {
    // without `timeout check` HAProxy gives a check `inter` (250 ms) in all, connect and read: a leader
    // paused under a second (a GC, a busy event loop) fails two checks and is taken out
    const readme = readFileSync(fileURLToPath(new URL('../../README.md', import.meta.url)), 'utf8');
    const block = /```haproxy\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(block, 'README.md has a ```haproxy block').toBeDefined();
    // the lines that decide checking and routing; the addresses, the servers and the client timeouts are the reader's
    // every server starting down (server-state-file: the path is the reader's)
    const CHECKS = /^(timeout (connect|check)|option (httpchk|redispatch)|http-check|default-server|retry-on|retries|http-request|http-response|http-after-response|use_backend|default_backend|backend|server-state-file|load-server-state-from-file|max-spread-checks)\b/;
    const lines = (cfg: string) =>
      cfg
        .split('\n')
        .map((l) => l.replace(/#.*/, '').trim().replace(/\b(\d+)000ms\b/g, '$1s').replace(/^server-state-file \S+$/, 'server-state-file <file>'))
        .filter((l) => CHECKS.test(l))
        .sort();
    expect(lines(block!)).toEqual(lines(haproxyConfig({ port: 8080, servers: [], stateFile: '/etc/haproxy/servers-down.state' })));
  });

  it("every server starts down: serversDownState and README's state file, as HAProxy reads them (`haproxy -c`)", () => {
    const readme = readFileSync(fileURLToPath(new URL('../../README.md', import.meta.url)), 'utf8');
    const servers = ['w1', 'w2', 'w3'].map((name, i) => ({ name, host: `10.0.0.${5 + i}`, port: 8080, checkPort: 9090 }));
    const dir = mkdtempSync(join(tmpdir(), 'conclave-haproxy-state-'));
    const check = (state: string) => {
      writeFileSync(join(dir, 'servers-down.state'), state);
      writeFileSync(join(dir, 'haproxy.cfg'), haproxyConfig({ port: 8080, servers, stateFile: join(dir, 'servers-down.state') }));
      const r = spawnSync(ensureHaproxy(), ['-c', '-f', join(dir, 'haproxy.cfg')], { encoding: 'utf8' });
      expect(r.status, r.stderr).toBe(0);
      return r.stderr.split('\n').filter((l) => /server-state|corrupted/.test(l)).map((l) => l.replace(/^.*?: config : /, '').replace(/\. \d+ active.*$/, ''));
    };
    const down = servers.map((v) => `Server leader/${v.name} is DOWN, changed from server-state after a reload`);
    expect(check(serversDownState(servers))).toEqual(down);
    expect(check(/```text\n(1\n1 leader[\s\S]*?)```/.exec(readme)![1]!)).toEqual(down);
    // a line HAProxy cannot read is skipped, said in a warning: that server would start up
    expect(check(serversDownState(servers).replace(' w2 10.0.0.6 0 ', ' w2 10.0.0.6 X '))).toContain("server-state application failed for server 'leader/w2', invalid srv_op_state value 'X'");
    rmSync(dir, { recursive: true, force: true });
  });
});

describe('a server\'s host, as the server line and the state file hold it', () => {
  // found by a review (2026-12-06): any text was written as it was, so "127.0.0.1 weight 0" passed
  // (a setting HAProxy read from the server line) and made the state file unreadable, that server
  // starting up: the protection of every server starting down, silently undone
  it.each(['127.0.0.1 weight 0', '127.0.0.1 backup', '127.0.0.1#x', 'ipv4@127.0.0.1', '${WORKER_HOST}', '"127.0.0.1"', '[::1', '999.999.999.999', 'bad_.host!', ''])('refuses %j, naming the field and the fix', (host) => {
    const servers = [{ name: 'w1', host, port: 9001, checkPort: 9101 }];
    for (const f of [() => haproxyConfig({ port: 8080, servers, stateFile: '/s' }), () => serversDownState(servers)]) {
      expect(f).toThrow(ValidationError);
      expect(f).toThrow(/host: must be an IP address \(127\.0\.0\.1, ::1\) or a host name \(worker-1\.internal\).*give the address alone/);
    }
  });

  it('takes an IP address or a host name; an IPv6 address in brackets on the server line, without in the state file, and HAProxy starts each down (`haproxy -c`)', () => {
    // names HAProxy can resolve here (it resolves each at start)
    const hosts = ['127.0.0.1', '::1', '[fd00::7]', 'localhost'];
    const servers = hosts.map((host, i) => ({ name: `w${i}`, host, port: 9001 + i, checkPort: 9101 + i }));
    const dir = mkdtempSync(join(tmpdir(), 'conclave-haproxy-host-'));
    const cfg = haproxyConfig({ port: 8080, servers, stateFile: join(dir, 'servers-down.state') });
    const state = serversDownState(servers);
    for (const line of ['server w0 127.0.0.1:9001 check port 9101', 'server w1 [::1]:9002 check port 9102', 'server w2 [fd00::7]:9003 check port 9103', 'server w3 localhost:9004 check', 'server w1 [::1]:9002 track leader/w1'])
      expect(cfg).toContain(line);
    expect(state).toContain(' w1 ::1 0 ');
    expect(state).toContain(' w2 fd00::7 0 ');
    for (const host of ['worker-1.internal', 'w_2.local.', 'W3']) expect(haproxyConfig({ port: 8080, servers: [{ name: 'w', host, port: 1, checkPort: 2 }], stateFile: '/s' })).toContain(`server w ${host}:1 check`);
    writeFileSync(join(dir, 'servers-down.state'), state);
    writeFileSync(join(dir, 'haproxy.cfg'), cfg);
    const r = spawnSync(ensureHaproxy(), ['-c', '-f', join(dir, 'haproxy.cfg')], { encoding: 'utf8' });
    rmSync(dir, { recursive: true, force: true });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).not.toMatch(/server-state application failed|corrupted/);
    for (const v of servers) expect(r.stderr).toContain(`Server leader/${v.name} is DOWN, changed from server-state`);
  });
});

describe('startHaproxy', () => {
  afterEach(() => vi.restoreAllMocks());

  it('an HAProxy that accepts its monitor URI but never answers: the start timeout still fires, naming it', async () => {
    const binary = fileURLToPath(new URL('./haproxy-never-answers.mjs', import.meta.url));
    await expect(startHaproxy({ servers: [], binary, startTimeoutMs: 200 })).rejects.toThrow(/haproxy did not answer on http:\/\/127\.0\.0\.1:\d+ within its start timeout/);
  });

  it("never binds a port its servers were given (they bind theirs later: a worker behind it, started after it)", async () => {
    // every pick the same: the port a server of the configuration was given, not yet bound by it
    vi.spyOn(systemClock, 'random').mockReturnValue(0.5);
    const given = await portToBindLater(new Set(), () => 0.5);
    const haproxy = await startHaproxy({ servers: [{ name: 'w1', host: '127.0.0.1', port: given, checkPort: given + 1 }], binary: ensureHaproxy() });
    try {
      expect(haproxy.port).not.toBe(given);
    } finally {
      await haproxy.stop();
    }
  });
});

/**
 * Two stand-in workers in this process (an application port and a `/leader` port each) behind the
 * real HAProxy with haproxyConfig: whether HAProxy judges a worker by its health check or by its
 * application's answers, which the fleet below cannot show (the demo worker's application never
 * answers 500).
 */
describe("HAProxy judges a worker by its check, not by its application's own errors", () => {
  interface Stand {
    name: string;
    leading: boolean;
    /** Checks of `/leader` received, and requests to the application. */
    checks: number;
    served: number;
    appPort: number;
    healthPort: number;
  }
  const stands: Stand[] = [];
  const servers = loopbackServers();
  let haproxy: Haproxy;
  async function stand(name: string, leading: boolean): Promise<Stand> {
    const w = { name, leading, checks: 0, served: 0 } as Stand;
    // the worker's application: /boom is the application's own fault; /work only the leader answers
    w.appPort = await servers.listen((req, res) => {
      w.served++;
      res.setHeader('content-type', 'application/json');
      res.statusCode = req.url === '/boom' ? 500 : w.leading ? 200 : 503;
      res.end(JSON.stringify({ identity: w.name }));
    });
    w.healthPort = await servers.listen((_req, res) => {
      w.checks++;
      res.statusCode = w.leading ? 200 : 503;
      res.end();
    });
    stands.push(w);
    return w;
  }
  /**
   * A GET through HAProxy: its status and who answered (undefined: HAProxy's own answer). Sent again
   * once when the kept-alive connection fetch reused was closed before any answer came ('fetch
   * failed: other side closed', seen once): HTTP clients resend an idempotent request so.
   */
  const get = async (path: string) => {
    const send = () => fetch(`${haproxy.url}${path}`);
    const closedUnanswered = (e: unknown) => e instanceof TypeError && (e.cause as { code?: string } | undefined)?.code === 'UND_ERR_SOCKET';
    const res = await send().catch((e: unknown) => {
      if (closedUnanswered(e)) return send();
      throw e;
    });
    const body = await res.text();
    return { status: res.status, by: body.startsWith('{') ? (JSON.parse(body) as { identity: string }).identity : undefined };
  };

  beforeAll(async () => {
    const a = await stand('a', true);
    const b = await stand('b', false);
    haproxy = await startHaproxy({ servers: [a, b].map((w) => ({ name: w.name, host: '127.0.0.1', port: w.appPort, checkPort: w.healthPort })), binary: ensureHaproxy() });
  });
  afterAll(async () => {
    await haproxy?.stop();
    await servers.close();
  });

  it("an application's 500s leave the leader routed to; its step-down (503) is followed to the new leader", async () => {
    const [a, b] = stands as [Stand, Stand];
    // every server starts down (serversDownState), the leader routed to at its first 200
    await waitFor('the standby checked twice', () => b.checks >= 2);
    await waitFor('the leader routed to', () => haproxy.routed());
    // two of the application's own faults in a row, passed to the client as they are ...
    expect(await get('/boom')).toEqual({ status: 500, by: 'a' });
    expect(await get('/boom')).toEqual({ status: 500, by: 'a' });
    // ... leave the leader in: the next request is served, not HAProxy's 503 "No server is available"
    expect(await get('/work')).toEqual({ status: 200, by: 'a' });
    // and still after HAProxy's next check of it, which the 500s brought forward
    const checked = a.checks;
    await waitFor('a check of the leader after its 500s', () => a.checks > checked);
    expect(await haproxy.up('a')).toBe(true);
    expect(await get('/work')).toEqual({ status: 200, by: 'a' });

    // the leader steps down (its /leader and its application answer 503) and another takes over:
    // its 503s are followed, the old leader out and the new one routed to
    a.leading = false;
    b.leading = true;
    await waitFor('a request answered by the new leader', async () => (await get('/work')).by === 'b');
    await waitFor('the old leader taken out', async () => !(await haproxy.up('a')));
    const served = a.served;
    for (let i = 0; i < 10; i++) expect(await get('/work')).toEqual({ status: 200, by: 'b' });
    expect(a.served).toBe(served);
  });
});

/**
 * A stand-in worker that closes a request's connection without answering, as a worker exiting
 * after a hand-off did with the requests HAProxy had sent it (`closeAllConnections`): while it is
 * the only worker routed to (the new leader not checked yet), HAProxy's retries all go back to it.
 */
describe('a request HAProxy could not get answered reaches the client as a 503 with Retry-After, not a 502', () => {
  let haproxy: Haproxy;
  const servers = loopbackServers();
  /** The requests the application was sent, HAProxy's retries included. */
  const seen: string[] = [];
  beforeAll(async () => {
    const port = await servers.listen((req, res) => {
      // /gone: the connection closed with the request unanswered; /bad: the application's own 502
      seen.push(`${req.method} ${req.url}`);
      if (req.url === '/gone') return void req.socket.destroy();
      if (req.url === '/refused') return void res.writeHead(503).end(); // a worker that does not lead: nothing done
      res.statusCode = 502;
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ identity: 'a' }));
    });
    const checkPort = await servers.listen((_req, res) => res.end());
    haproxy = await startHaproxy({ servers: [{ name: 'a', host: '127.0.0.1', port, checkPort }], binary: ensureHaproxy() });
    await waitFor('the stand-in routed to', () => haproxy.routed());
  });
  afterAll(async () => {
    await haproxy?.stop();
    await servers.close();
  });

  it("HAProxy's own 502 (its retries met a closed connection each time) becomes a 503 with Retry-After; the application's own 502 passes as it is", async () => {
    // found 2026-12-02: in SIGTERM hand-offs under a request stream HAProxy answered 502 (SH--,
    // without Retry-After) to 1-3 requests in 5 of 15: clients that retry after a 503's Retry-After were not told to
    const get = async (path: string) => {
      const res = await fetch(`${haproxy.url}${path}`);
      await res.text();
      return { status: res.status, retryAfter: res.headers.get('retry-after') };
    };
    expect(await get('/gone')).toEqual({ status: 503, retryAfter: String(LEADER_CHECK.retryAfterSeconds) });
    expect(await get('/bad')).toEqual({ status: 502, retryAfter: null });
  });

  it('a request that may change something (POST, PUT, DELETE) reaches a worker once when it closed the connection unanswered (it may have been carried out), and is tried again after its 503 (nothing done), as a GET is after either', async () => {
    // found 2026-12-05: `retry-on empty-response` sent a POST the old leader had applied before
    // closing its connection to the next routed worker, which applied it again in the new term
    // each on a connection of its own (HAProxy closes one a 503 of its own answered)
    const send = (method: string, path = '/gone') =>
      new Promise<{ status: number | undefined; tries: number }>((resolve, reject) => {
        seen.length = 0;
        const req = request(`${haproxy.url}${path}`, { method, agent: false }, (res) => {
          res.resume();
          res.on('end', () => resolve({ status: res.statusCode, tries: seen.length }));
        });
        req.on('error', reject);
        req.end(method === 'GET' || method === 'OPTIONS' ? undefined : 'pay 100');
      });
    for (const method of ['POST', 'PUT', 'DELETE', 'PATCH']) expect(await send(method), method).toEqual({ status: 503, tries: 1 });
    for (const method of ['GET', 'OPTIONS']) expect(await send(method), method).toEqual({ status: 503, tries: 1 + LEADER_CHECK.retries });
    // a review of the first cut (HAProxy's disable-l7-retry): a POST met by a stepped-down worker's 503 was no longer tried on the new leader
    for (const method of ['POST', 'DELETE', 'GET']) expect(await send(method, '/refused'), method).toEqual({ status: 503, tries: 1 + LEADER_CHECK.retries });
  });
});

/**
 * A leader and a standby as stand-ins (no traffic): how often HAProxy checks a worker it counts down.
 * A standby that becomes the leader is routed to at its next check, so that interval is the hand-off
 * window's tail. Judged by the order of events at each worker's own `/leader` server, never by
 * counts against the clock: HAProxy waits `inter` or `downinter` after each answer, so an answer
 * this process is slow to send lengthens every wait of both, and the checks counted in a window depend on the machine.
 */
describe('a worker counted down is checked every downinter, sooner than the leader (inter)', () => {
  type Name = 'a' | 'b';
  /** Answered together this many times, the standby is checked again first every time. */
  const ROUNDS = 5;
  let haproxy: Haproxy;
  const servers = loopbackServers();
  /** `oks`: the 200s a worker's `/leader` answered. */
  const state = { a: { leading: true, oks: 0 }, b: { leading: false, oks: 0 } };
  /**
   * How the `/leader` servers answer: at once; held until both workers' checks wait, then answered
   * together, the leader's first (`together`: `rounds` records whose next check came first); or, for
   * the standby, once HAProxy's runtime API has said whether it routes to it (`watch b`: `seen`).
   */
  let mode: 'at once' | 'together' | 'watch b' = 'at once';
  const held = new Map<Name, ServerResponse>();
  const rounds: Name[] = [];
  let roundOpen = false;
  const seen: { oks: number; routed: boolean }[] = [];
  const reply = (name: Name, res: ServerResponse) => {
    const w = state[name];
    if (w.leading) w.oks++;
    res.writeHead(w.leading ? 200 : 503).end();
  };
  beforeAll(async () => {
    const stands = [];
    for (const name of ['a', 'b'] as const) {
      const w = state[name];
      const port = await servers.listen((_req, res) => res.writeHead(w.leading ? 200 : 503).end());
      const checkPort = await servers.listen(async (_req, res) => {
        if (roundOpen) {
          rounds.push(name);
          roundOpen = false;
        }
        if (mode === 'together' && rounds.length < ROUNDS) {
          held.set(name, res);
          // a check HAProxy gave up on (its `timeout check`, a stalled process) waits no longer: it pairs with none
          res.once('close', () => held.get(name) === res && held.delete(name));
          if (held.size < 2) return;
          reply('a', held.get('a')!);
          reply('b', held.get('b')!);
          held.clear();
          roundOpen = true;
          return;
        }
        if (mode === 'watch b' && name === 'b') seen.push({ oks: w.oks, routed: await haproxy.up('b') });
        reply(name, res);
      });
      stands.push({ name, host: '127.0.0.1', port, checkPort });
    }
    haproxy = await startHaproxy({ servers: stands, binary: ensureHaproxy() });
    await waitFor('the leader routed to', () => haproxy.routed());
  });
  afterAll(async () => {
    await haproxy?.stop();
    await servers.close();
  });

  it('answered together with the leader, the standby is checked again first; a standby that leads is routed to at its first 200', async () => {
    // found 2026-12-02: a new leader waited for HAProxy's next check of it, every `inter` (250 ms),
    // as long as the leader's; with `downinter` (50 ms) a server counted down is asked 5 times as often.
    // Answered in one moment, each waits from there: the standby 50 ms, the leader 250 ms, however late
    // the answers were sent. With `inter` for both they tie, and the leader, answered first, was asked
    // first in every round tried (30 of 30). (A review, 2026-12-07: counted against four checks of the
    // leader, a 100 ms delay in every answer brought the standby's to 9, under the 10 asked for.)
    mode = 'together';
    await waitFor(`${ROUNDS} rounds`, () => rounds.length >= ROUNDS);
    mode = 'at once';
    for (const [name, res] of held) reply(name, res);
    held.clear();
    expect(rounds.slice(0, ROUNDS)).toEqual(Array<Name>(ROUNDS).fill('b'));
    // the hand-off: the standby leads, and its first 200 (rise 1) routes to it. Asked as its next check
    // arrives, before that check is answered: routed already, on its one 200 (however late this
    // process looked: a review, 2026-12-07, the checks counted until it was seen routed were 3 when it looked 600 ms late)
    state.a.leading = false;
    state.b.leading = true;
    mode = 'watch b';
    const next = await waitFor('the check after its first 200', () => seen.find((s) => s.oks === 1));
    expect(seen.filter((s) => s.oks === 0 && s.routed)).toEqual([]);
    expect(next.routed).toBe(true);
  });
});

describe('HAProxy in front of three workers: one address reaches whoever leads', () => {
  const LEASE = 'orders-api';
  let rt: LocalRuntime;
  let group: BehindHaproxy;

  beforeAll(async () => {
    rt = await startLocalRuntime({ endpoint: inject('ddbEndpoint'), prefix: `lb-${randomUUID().slice(0, 8)}`, dir: mkdtempSync(join(tmpdir(), 'conclave-lb-')), config: DEMO_ELECTION, logLevel: 'SILENT' });
    // the suite's global setup asked for HAProxy on the user's behalf (test/global-setup.ts)
    group = await BehindHaproxy.start(rt, { lease: LEASE, timing: DEMO_TIMING, binary: ensureHaproxy(), guardMs: WAIT_GUARD_MS });
  });
  afterAll(async () => {
    await group?.stop();
    await rt?.stop();
  });

  /**
   * The client every phase runs: a request every 20 ms, a failed one retried once when someone is
   * routed to again and, when a worker refused it (503: it stepped down), HAProxy has taken that
   * worker out (its checks, brought forward by the 503, failed): the condition a client honouring
   * the 503's `Retry-After: 1` waits a second for, waited on as a condition.
   */
  // the refuser seen out first, then someone routed: sampled the other way round, `routed` could
  // count the refuser in the moment before it went out, and the retry meet nobody (HAProxy's own
  // 503; seen once on a busy machine). A refuser that stepped down does not come back in.
  // A worker killed answers nothing, so HAProxy's own 503 names no refuser: it too is seen out first
  // (HAProxy counts it up until `fall` checks fail; a retry routed to it meets HAProxy's 1 s
  // turn-around and its 503 again: seen once on a busy machine). Watched once for every request
  // (`killedOut`): each failed request polling the runtime API every 20 ms filled its socket's backlog
  // A worker stepping down refuses with its 503, which HAProxy retries on the next server (retry-on
  // 503, redispatch): with none up, HAProxy's own 503 comes back, naming nobody. So a failure that
  // names nobody during a step-down waits for the leaver to be out too: `routed` could still count
  // it, and the retry meet its refusal and HAProxy's 503 again (seen in a fresh-clone CI run on a busy machine)
  const out = async (identity: string) => !(await group.haproxy.up(identity));
  let killedOut = true;
  let leaving: string | undefined;
  const routedAgain = async (failed: Attempt) =>
    (failed.identity === undefined ? killedOut && (leaving === undefined || (await out(leaving))) : await out(failed.identity)) && (await group.haproxy.routed());
  const client = () => new SteadyClient({ url: `${group.url}/work`, everyMs: 20, retry: { after: 'routed', routed: routedAgain, pollMs: 20, maxWaitMs: WAIT_GUARD_MS } }).start();
  const tries = (records: readonly RequestRecord[]): Attempt[] => records.flatMap((r) => (r.retry ? [r.first, r.retry] : [r.first]));
  /** Until `n` requests sent after `after` were answered by `identity`. */
  const answeredBy = (c: SteadyClient, identity: string, n: number, after = 0) =>
    waitFor(`${n} answers by ${identity}`, () => tries(c.records).filter((a) => succeeded(a) && a.identity === identity && a.sentAt >= after).length >= n);

  /**
   * What every phase holds to: each success names the term it was served in (identity and fencing
   * token), and that term is one its worker began (its own `started` line); a success never carries
   * a lower token than one answered before it was sent; and a worker that refused a request (503:
   * routed to while not leading) had led before, so HAProxy never sent work to a worker that never
   * led (a standby): `refusers` lists whom it may have been.
   */
  function judge(records: readonly RequestRecord[], refusers: readonly string[]) {
    const terms = new Map(group.all.flatMap((w) => w.events.filter((e) => e.event === 'started').map((e) => [e.fencingToken!, e.identity] as const)));
    const ok = tries(records).filter(succeeded);
    expect(ok.length).toBeGreaterThan(0);
    for (const a of ok) expect({ token: a.fencingToken, by: terms.get(a.fencingToken!) }).toEqual({ token: a.fencingToken, by: a.identity });
    for (const a of ok) for (const b of ok) if (a.doneAt < b.sentAt) expect(b.fencingToken!).toBeGreaterThanOrEqual(a.fencingToken!);
    const refused = tries(records).filter((a) => a.status === 503 && a.identity !== undefined);
    expect([...new Set(refused.map((a) => a.identity))].filter((id) => !refusers.includes(id!))).toEqual([]);
  }
  /** The lease names `identity` as holder, with the token its answers carried. */
  async function holds(identity: string, records: readonly RequestRecord[]) {
    const lease = (await rt.deps.coordinator.leases.read(LEASE)).item!;
    const last = records.map(answer).filter((a) => a?.identity === identity).at(-1)!;
    expect({ holder: lease.holderIdentity, token: lease.fencingToken, address: lease.holderAddress }).toEqual({ holder: identity, token: last.fencingToken, address: group.appUrl(identity) });
  }

  it('every request reaches the leader: the lease holder, with its fencing token and advertised address', async () => {
    const leader = await group.settled();
    const c = client();
    await answeredBy(c, leader.identity, 25);
    const records = await c.stop();
    judge(records, [leader.identity]);
    expect(records.every((r) => answer(r)?.identity === leader.identity)).toBe(true);
    await holds(leader.identity, records);
  });

  it('an HAProxy started in front of a leader (a start, or a reload) sends no request to a follower, from the moment it listens', async () => {
    // found 2026-12-02: HAProxy counted every server up until its first check of it (within
    // `fastinter` of its start): requests went to followers, and a follower's 503 reached a client
    // when HAProxy's retries met followers only. Three starts: each a fresh HAProxy, as a reload is
    const leader = await group.settled();
    const followers = group.workers.filter((w) => w !== leader).map((w) => w.identity);
    for (let start = 0; start < 3; start++) {
      let c: SteadyClient | undefined;
      const haproxy = await startHaproxy({
        servers: group.servers,
        binary: ensureHaproxy(),
        // from its spawn on, a request every 2 ms: those sent before it listens fail to connect and are retried
        onSpawn: (url) => {
          const routed = async () => (await fetch(`${url}${MONITOR_PATH}`).then((r) => r.status, () => undefined)) === 200;
          c = new SteadyClient({ url: `${url}/work`, everyMs: 2, retry: { after: 'routed', routed, pollMs: 20, maxWaitMs: WAIT_GUARD_MS } }).start();
        },
      });
      try {
        await waitFor('answers by the leader', () => tries(c!.records).filter((a) => succeeded(a) && a.identity === leader.identity).length >= 25);
        const records = await c!.stop();
        const answered = tries(records).filter((a) => a.status !== undefined);
        // every answer came from HAProxy's first moments on: none by a follower (a refusal or a success) ...
        expect(answered.filter((a) => a.identity !== undefined && a.identity !== leader.identity)).toEqual([]);
        // ... HAProxy's own 503 (nobody routed to yet) only for a request sent before the leader's first answer ...
        const firstOk = answered.filter(succeeded).sort((a, b) => a.doneAt - b.doneAt)[0]!;
        expect(answered.filter((a) => !succeeded(a) && a.sentAt > firstOk.doneAt)).toEqual([]);
        // ... each answered on its one retry, and HAProxy sent no request to a follower at all
        expect(records.filter((r) => !answer(r))).toEqual([]);
        expect(await Promise.all(followers.map(async (f) => [f, await haproxy.sentTo(f)]))).toEqual(followers.map((f) => [f, 0]));
      } finally {
        await c?.stop();
        await haproxy.stop();
      }
    }
  });

  it('SIGTERM (hand-off): a client that retries once loses no request, and the new leader answers behind the same address', async () => {
    const old = await group.settled();
    const c = client();
    await answeredBy(c, old.identity, 5);
    leaving = old.identity;
    await old.stop();
    const next = await waitFor('another worker to answer', () => tries(c.records).find((a) => succeeded(a) && a.identity !== old.identity)?.identity);
    // requests sent after the first answer by the new leader, answered: every earlier retry has had its turn
    const seen = tries(c.records).find((a) => a.identity === next)!.doneAt;
    await answeredBy(c, next, 10, seen);
    const records = await c.stop();
    judge(records, [old.identity]);
    // the client's stream spans the hand-over: answered by the old leader, then by the next
    expect(records.findIndex((r) => answer(r)?.identity === next)).toBeGreaterThan(records.findIndex((r) => answer(r)?.identity === old.identity));
    // a request refused at first (the old leader refused it, or nobody was routed to yet) was answered
    // on its one retry. Whether any was refused at first is the machine's timing: HAProxy itself
    // retries a 503 on the next server (retry-on 503, redispatch), so on a busy machine every refusal
    // may already have been redispatched to the new leader (a fresh-clone CI run at 8202ed3 saw none)
    expect(records.filter((r) => !answer(r))).toEqual([]);
    await holds(next, records);
    leaving = undefined;
    await group.startWorker(old.identity);
  });

  it('kill -9 (crash): requests are routed to the new leader once its term begins, and none is answered by a worker that does not lead', async () => {
    const old = await group.settled();
    const c = client();
    await answeredBy(c, old.identity, 5);
    killedOut = false;
    await old.kill();
    void waitFor('the killed worker out', () => out(old.identity)).then(() => (killedOut = true));
    const next = await waitFor('another worker to answer', () => tries(c.records).find((a) => succeeded(a) && a.identity !== old.identity)?.identity);
    const seen = tries(c.records).find((a) => a.identity === next)!.doneAt;
    await answeredBy(c, next, 10, seen);
    const records = await c.stop();
    // a dead worker refuses nothing: it does not answer at all, and HAProxy answers 503 for it
    judge(records, []);
    expect(records.filter((r) => !succeeded(r.first)).length).toBeGreaterThan(0);
    expect(records.filter((r) => !answer(r))).toEqual([]);
    await holds(next, records);
  });
});
