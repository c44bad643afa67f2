import { ReplicatedWriteConflictException } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { ConflictError, retryOnConflict } from '../../lib/stores/errors.js';

const replicated = () => new ReplicatedWriteConflictException({ message: 'One or more items in this request are being modified by a request in another Region', $metadata: {} });

describe('retryOnConflict', () => {
  it('reads and decides again after a lost race, and after a write another Region was changing at the moment (not applied)', async () => {
    const steps: number[] = [];
    const value = await retryOnConflict(async (attempt) => {
      steps.push(attempt);
      if (attempt === 1) throw new ConflictError('lease "a"', 3);
      if (attempt === 2) throw replicated();
      return 'written';
    });
    expect({ value, steps }).toEqual({ value: 'written', steps: [1, 2, 3] });
  });

  it('throws the last lost race once the attempts are spent, and any fault at once', async () => {
    let tries = 0;
    await expect(retryOnConflict(async () => { tries++; throw replicated(); }, 3)).rejects.toBeInstanceOf(ReplicatedWriteConflictException);
    expect(tries).toBe(3);
    tries = 0;
    await expect(retryOnConflict(async () => { tries++; throw new Error('AccessDeniedException'); })).rejects.toThrow('AccessDeniedException');
    expect(tries).toBe(1);
  });
});
