/** Lambda's event filtering and EventBridge's patterns as local mode applies the wiring's declarations. */
import { describe, expect, it } from 'vitest';
import { matchesFilter, matchesPattern } from '../../lib/local/event-filter.js';
import { wiring } from '../../lib/wiring.js';

describe('matchesFilter (Lambda event filtering, the subset the wiring uses)', () => {
  const renewal = { eventName: 'MODIFY', dynamodb: { NewImage: { lastWrite: { S: 'renewal' } } } };
  const other = { eventName: 'MODIFY', dynamodb: { NewImage: { name: { S: 'a' } } } };
  it('exists false on a leaf, lists of values, nested objects', () => {
    const absent = { dynamodb: { NewImage: { lastWrite: { S: [{ exists: false }] } } } };
    expect(matchesFilter(absent, renewal)).toBe(false);
    expect(matchesFilter(absent, other)).toBe(true);
    expect(matchesFilter({ dynamodb: { NewImage: { lastWrite: { S: [{ exists: true }] } } } }, renewal)).toBe(true);
    expect(matchesFilter({ eventName: ['INSERT', 'REMOVE'] }, other)).toBe(false);
    expect(matchesFilter({ eventName: ['INSERT', 'MODIFY'] }, other)).toBe(true);
    expect(matchesFilter({ dynamodb: { OldImage: { x: ['1'] } } }, other)).toBe(false);
  });
});

describe('matchesPattern (EventBridge rules on the default bus)', () => {
  const [ecs, ec2] = wiring.platform.trigger.patterns;
  const event = (source: string, detailType: string, detail: object) => ({ version: '0', id: 'e1', source, 'detail-type': detailType, detail });
  it('source, detail-type and each detail field must take a listed value', () => {
    expect(matchesPattern(ecs!, event('aws.ecs', 'ECS Task State Change', { lastStatus: 'STOPPED', taskArn: 't' }))).toBe(true);
    expect(matchesPattern(ecs!, event('aws.ecs', 'ECS Task State Change', { lastStatus: 'RUNNING' }))).toBe(false);
    expect(matchesPattern(ecs!, event('aws.ec2', 'ECS Task State Change', { lastStatus: 'STOPPED' }))).toBe(false);
    expect(matchesPattern(ec2!, event('aws.ec2', 'EC2 Instance State-change Notification', { state: 'terminated' }))).toBe(true);
    expect(matchesPattern(ec2!, event('aws.ec2', 'EC2 Instance State-change Notification', {}))).toBe(false);
  });
});
