import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { marshall as sdkMarshall, unmarshall as sdkUnmarshall } from '@aws-sdk/util-dynamodb';
import { describe, expect, it } from 'vitest';
import { seededRandom } from '../../lib/clock.js';
import { marshall, unmarshall } from '../../lib/stores/codec.js';

/** The SDK's answer and ours: the same value, or the same error message. */
function both<T>(ours: () => T, sdk: () => T): { ours: unknown; sdk: unknown } {
  const run = (f: () => T) => {
    try {
      return { value: f() };
    } catch (e) {
      return { error: (e as Error).message };
    }
  };
  return { ours: run(ours), sdk: run(sdk) };
}

/** A random value of the kinds rows hold, and of the kinds only the SDK's path handles. */
function randomValue(r: () => number, depth: number): unknown {
  const pick = Math.floor(r() * (depth > 2 ? 9 : 12));
  switch (pick) {
    case 0:
      return ['', 'a', 'lease-1', 'ünïcødé', '0'][Math.floor(r() * 5)];
    case 1:
      return [0, -0, 1, -7, 1.5, 1e-7, Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER, 1_800_000_000_123][Math.floor(r() * 9)];
    case 2:
      return r() < 0.5;
    case 3:
      return null;
    case 4:
      return undefined;
    case 5:
      return [Number.NaN, Number.POSITIVE_INFINITY, 2 ** 60][Math.floor(r() * 3)];
    case 6:
      return new Set(['x', 'y']);
    case 7:
      return new Uint8Array([1, 2]);
    case 8:
      return () => 1;
    case 9:
    case 10: {
      const o: Record<string, unknown> = {};
      const n = Math.floor(r() * 4);
      for (let i = 0; i < n; i++) o[`k${i}`] = randomValue(r, depth + 1);
      return o;
    }
    default:
      return Array.from({ length: Math.floor(r() * 4) }, () => randomValue(r, depth + 1));
  }
}

describe('codec: marshall and unmarshall as the SDK does them', () => {
  it('gives the SDK’s item or error for thousands of random rows, with and without removeUndefinedValues', () => {
    const r = seededRandom(17);
    let fast = 0;
    for (let i = 0; i < 4000; i++) {
      const row: Record<string, unknown> = {};
      const n = 1 + Math.floor(r() * 6);
      for (let k = 0; k < n; k++) row[`f${k}`] = randomValue(r, 0);
      for (const options of [undefined, { removeUndefinedValues: true }]) {
        const { ours, sdk } = both(() => marshall(row, options), () => sdkMarshall(row, options));
        expect(ours, JSON.stringify(row)).toStrictEqual(sdk);
        if ('value' in (sdk as object)) {
          const item = (sdk as { value: Record<string, AttributeValue> }).value;
          const back = both(() => unmarshall(item), () => sdkUnmarshall(item));
          expect(back.ours).toStrictEqual(back.sdk);
          fast++;
        }
      }
    }
    expect(fast).toBeGreaterThan(1000); // most rows marshalled: the comparison saw real items
  });

  it('returns exactly the SDK’s shapes for a lease row', () => {
    const row = { name: 'jobs', holderIdentity: 'w-1', fencingToken: 7, leaseDurationSeconds: 15, released: false, note: null, runs: [{ window: 'a', at: 1 }], preferredHolder: undefined };
    expect(marshall(row, { removeUndefinedValues: true })).toEqual(sdkMarshall(row, { removeUndefinedValues: true }));
    const item = sdkMarshall(row, { removeUndefinedValues: true });
    expect(unmarshall(item)).toEqual(sdkUnmarshall(item));
    expect(unmarshall(item)['fencingToken']).toBe(7);
  });

  it('leaves numbers beyond the safe integers, sets and binary to the SDK', () => {
    const item = { big: { N: '123456789012345678901' }, set: { SS: ['a', 'b'] }, bin: { B: new Uint8Array([1]) }, small: { N: '5' } };
    const out = unmarshall(item);
    expect(out['big']).toBe(123456789012345678901n);
    expect(out['set']).toEqual(new Set(['a', 'b']));
    expect(out['small']).toBe(5);
    expect(() => marshall({ n: 2 ** 60 })).toThrow(/MAX_SAFE_INTEGER/);
    expect(() => marshall({ u: undefined })).toThrow(/removeUndefinedValues/);
    expect(marshall({ u: undefined, s: 'x' }, { removeUndefinedValues: true })).toEqual({ s: { S: 'x' } });
  });
});
