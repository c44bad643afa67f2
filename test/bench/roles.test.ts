/**
 * The role a worker's request is counted under: the table says candidate or identity; on the
 * leases table, leading that lease says leader, and the lease as last read or written says
 * whether this worker is its designated successor.
 */
import { describe, expect, it } from 'vitest';
import { RoleTracker } from '../../bench/roles.js';

const tables = { leases: 'p-leases', candidates: 'p-candidates', identities: 'p-identities' };
const get = (name: string) => ({ TableName: tables.leases, Key: { name: { S: name } } });
const item = (name: string, successor?: string) => ({ Item: { name: { S: name }, ...(successor ? { successor: { S: successor } } : {}) } });

describe('request roles', () => {
  it('by table: candidate and identity rows', () => {
    const r = new RoleTracker(tables, 'w2');
    expect(r.roleOf({ TableName: tables.candidates })).toBe('candidate');
    expect(r.roleOf({ TableName: tables.identities })).toBe('identity');
    expect(r.roleOf(get('a'))).toBe('follower');
  });

  it('successor while the lease last seen names this worker, follower once it names another', () => {
    const r = new RoleTracker(tables, 'w2');
    r.observe(get('a'), item('a', 'w2'));
    expect(r.roleOf(get('a'))).toBe('successor');
    expect(r.roleOf(get('b'))).toBe('follower'); // per lease
    r.observe(get('a'), { Attributes: { name: { S: 'a' }, successor: { S: 'w3' } } }); // a write's ALL_NEW answer
    expect(r.roleOf(get('a'))).toBe('follower');
    r.observe(get('a'), item('a', 'w2'));
    r.observe(get('a'), item('a')); // no successor named
    expect(r.roleOf(get('a'))).toBe('follower');
  });

  it('answers from other tables, and answers without an item, teach nothing', () => {
    const r = new RoleTracker(tables, 'w2');
    r.observe(get('a'), item('a', 'w2'));
    r.observe({ TableName: tables.candidates, Key: { name: { S: 'a' } } }, item('a'));
    r.observe(get('a'), {});
    expect(r.roleOf(get('a'))).toBe('successor');
  });

  it('leader of a lease it leads, in a process with many; any lease for the one-lease worker', () => {
    const many = new RoleTracker(tables, 'w1');
    many.leading('a', true);
    expect(many.roleOf(get('a'))).toBe('leader');
    expect(many.roleOf(get('b'))).toBe('follower');
    many.leading('a', false);
    expect(many.roleOf(get('a'))).toBe('follower');

    const one = new RoleTracker(tables, 'w1');
    one.leading(undefined, true);
    expect(one.roleOf({ TableName: tables.leases })).toBe('leader');
    one.leading(undefined, false);
    expect(one.roleOf({ TableName: tables.leases })).toBe('follower');
  });
});
