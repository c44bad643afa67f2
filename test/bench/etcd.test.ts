/**
 * The hand-off's etcd baseline (bench/etcd.ts), the parts with logic: reading `etcdctl -w json
 * elect`'s output, etcd's watcher count, the comparison's figures, and etcd asked for, not taken
 * (the message naming the install line). None of it needs etcd installed: the lines below are
 * etcd 3.4.23's own output, captured.
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ensureEtcd, EtcdMissingError, etcdLacking, findEtcd, INSTALL_ETCD_ENV, parseElected, versusEtcd, watcherCount, type EtcdBinaries } from '../../bench/etcd.js';
import { ValidationError } from '../../lib/schemas/validation.js';
import { installWorld, messageOf as messageOfError } from '../support.js';

/** `etcdctl -w json elect el p1`, elected: its key el/390da2234675df06, value p1 (etcd 3.4.23). */
const ELECTED_P1 =
  '{"header":{"cluster_id":15118495548433857066,"member_id":13668033151171901709,"revision":2,"raft_term":2},"kvs":[{"key":"ZWwvMzkwZGEyMjM0Njc1ZGYwNg==","create_revision":2,"mod_revision":2,"version":1,"value":"cDE=","lease":4111120307248815878}],"count":1}';
/** The second campaigner, elected when the first resigned (its delete was revision 5). */
const ELECTED_P2 =
  '{"header":{"cluster_id":15118495548433857066,"member_id":13668033151171901709,"revision":5,"raft_term":2},"kvs":[{"key":"ZWwvMzkwZGEyMjM0Njc1ZGYwYg==","create_revision":3,"mod_revision":3,"version":1,"value":"cDI=","lease":4111120307248815883}],"count":1}';

describe('parseElected: etcdctl elect’s line once elected', () => {
  it('reads the key, the proposal, its create revision and the revision it was read at', () => {
    expect(parseElected(ELECTED_P1, 'el')).toEqual({ key: 'el/390da2234675df06', proposal: 'p1', createRevision: 2, revision: 2 });
    expect(parseElected(ELECTED_P2, 'el')).toEqual({ key: 'el/390da2234675df0b', proposal: 'p2', createRevision: 3, revision: 5 });
  });

  it('etcdctl’s plain output (no -w json) is an error that says to run it with -w json', () => {
    expect(() => parseElected('el/390da2234675df0f', 'el')).toThrow(/not JSON \(run it with -w json\)/);
  });

  it('a key of another election, or a prefix that only looks alike, is an error naming both', () => {
    expect(() => parseElected(ELECTED_P1, 'other')).toThrow(/key "el\/390da2234675df06", not one of election "other"/);
    expect(() => parseElected(ELECTED_P1, 'e')).toThrow(/not one of election "e"/);
  });

  it('output of another command (no key, or a non-base64 key) is a ValidationError naming the field', () => {
    const noKey = '{"header":{"revision":7},"kvs":[],"count":0}';
    expect(() => parseElected(noKey, 'el')).toThrow(ValidationError);
    expect(() => parseElected(noKey, 'el')).toThrow(/kvs: must hold exactly/);
    const badKey = ELECTED_P1.replace('ZWwvMzkwZGEyMjM0Njc1ZGYwNg==', 'not base64!');
    expect(() => parseElected(badKey, 'el')).toThrow(/kvs\[0\]\.key/);
  });
});

describe('watcherCount: etcd’s /metrics', () => {
  it('reads etcd_debugging_mvcc_watcher_total, not the watch-stream count beside it', () => {
    const text = ['# HELP etcd_debugging_mvcc_watch_stream_total Total number of watch streams.', '# TYPE etcd_debugging_mvcc_watch_stream_total gauge', 'etcd_debugging_mvcc_watch_stream_total 3', '# TYPE etcd_debugging_mvcc_watcher_total gauge', 'etcd_debugging_mvcc_watcher_total 2', 'etcd_disk_wal_fsync_duration_seconds_count 5'].join('\n');
    expect(watcherCount(text)).toBe(2);
  });
  it('an etcd without the metric is an error saying so', () => {
    expect(() => watcherCount('etcd_server_has_leader 1\n')).toThrow(/no etcd_debugging_mvcc_watcher_total/);
  });
});

describe('versusEtcd: both hand-offs and their ratios', () => {
  it('medians, nearest-rank p99 and Conclave ÷ etcd', () => {
    const v = versusEtcd([120, 80, 100, 300], [10, 5, 8, 40]);
    expect(v.conclave).toMatchObject({ n: 4, median: 110, p99: 300 });
    expect(v.etcd).toMatchObject({ n: 4, median: 9, p99: 40 });
    expect(v.medianRatio).toBeCloseTo(110 / 9);
    expect(v.p99Ratio).toBe(7.5);
  });
  it('no ratio unless both ran', () => {
    expect(versusEtcd([], [5])).toEqual({ conclave: undefined, etcd: expect.objectContaining({ median: 5 }), medianRatio: undefined, p99Ratio: undefined });
  });
});

describe('findEtcd and etcdLacking: both binaries, by name', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });
  /** A directory holding files of these names, executable or not. */
  const dirWith = (files: Record<string, boolean>) => {
    const d = mkdtempSync(join(tmpdir(), 'conclave-etcd-path-'));
    dirs.push(d);
    for (const [name, exec] of Object.entries(files)) {
      writeFileSync(join(d, name), '');
      chmodSync(join(d, name), exec ? 0o755 : 0o644);
    }
    return d;
  };

  it('takes the first executable of each name on PATH; a file that is not executable does not count', () => {
    const a = dirWith({ etcd: false, etcdctl: true });
    const b = dirWith({ etcd: true });
    expect(findEtcd([a, b].join(delimiter))).toEqual({ etcd: join(b, 'etcd'), etcdctl: join(a, 'etcdctl') });
    expect(findEtcd(a)).toEqual({ etcdctl: join(a, 'etcdctl') });
  });

  it.each([
    { found: {}, want: 'no `etcd` and no `etcdctl` on PATH' },
    { found: { etcd: '/usr/bin/etcd' }, want: 'no `etcdctl` on PATH' },
    { found: { etcdctl: '/usr/bin/etcdctl' }, want: 'no `etcd` on PATH' },
    { found: { etcd: '/usr/bin/etcd', etcdctl: '/usr/bin/etcdctl' }, want: undefined },
  ])('$found → $want', ({ found, want }) => expect(etcdLacking(found)).toBe(want));
});

describe('ensureEtcd: asked for, not taken', () => {
  const saved = process.env[INSTALL_ETCD_ENV];
  afterEach(() => {
    if (saved === undefined) delete process.env[INSTALL_ETCD_ENV];
    else process.env[INSTALL_ETCD_ENV] = saved;
  });
  const BOTH: EtcdBinaries = { etcd: '/usr/bin/etcd', etcdctl: '/usr/bin/etcdctl' };
  const world = (o: { found?: Partial<EtcdBinaries>; root: boolean; installs?: boolean }) => installWorld<Partial<EtcdBinaries>>({ installed: BOTH, ...o, found: o.found ?? {} });
  const messageOf = (f: () => unknown) => messageOfError(f, EtcdMissingError);

  it('both found: nothing to do', () => {
    const w = world({ found: BOTH, root: true });
    expect(ensureEtcd({ ...w.opts, install: true })).toEqual(BOTH);
    expect(w.calls).toEqual([]);
  });

  it('etcdctl missing, not asked — even as root: installs nothing; the message names what is missing, the install line per system and how to ask', () => {
    delete process.env[INSTALL_ETCD_ENV];
    const w = world({ found: { etcd: '/usr/bin/etcd' }, root: true });
    const message = messageOf(() => ensureEtcd(w.opts));
    expect(w.calls).toEqual([]);
    for (const hint of ['no `etcdctl` on PATH', "Debian/Ubuntu: sudo sh -c 'apt-get update && apt-get install -y etcd-server etcd-client'", 'sudo dnf install etcd', 'brew install etcd', 'CONCLAVE_INSTALL_ETCD=1']) expect(message).toContain(hint);
  });

  it('asked by CONCLAVE_INSTALL_ETCD=1, as root: says so, then installs both packages', () => {
    process.env[INSTALL_ETCD_ENV] = '1';
    const w = world({ root: true });
    expect(ensureEtcd(w.opts)).toEqual(BOTH);
    expect(w.calls).toEqual([expect.stringMatching(/CONCLAVE_INSTALL_ETCD=1 asks for it: installing etcd-server etcd-client from Debian/), 'install']);
  });

  it('asked, not root: the sudo line; a failed install: the line to run', () => {
    expect(messageOf(() => ensureEtcd({ ...world({ root: false }).opts, install: true }))).toMatch(/needs root.*sudo sh -c 'apt-get update && apt-get install -y etcd-server etcd-client'/s);
    expect(messageOf(() => ensureEtcd({ ...world({ root: true, installs: false }).opts, install: true }))).toMatch(/Installing etcd-server etcd-client failed \(exit 100\)/);
  });
});
