import { seededRandom } from '../lib/clock.js';

/** A small seeded generator (mulberry32): the same seed gives the same schedules on every machine. */
export interface Rng {
  (): number;
  int(min: number, max: number): number;
  pick<T>(xs: readonly T[]): T;
  chance(p: number): boolean;
}

export function rng(seed: number): Rng {
  const next = seededRandom(seed) as Rng;
  next.int = (min, max) => min + Math.floor(next() * (max - min + 1));
  next.pick = (xs) => xs[Math.floor(next() * xs.length)]!;
  next.chance = (p) => next() < p;
  return next;
}

/** A seed for schedule `index` of run `seed`: each schedule can be replayed on its own. */
export const scheduleSeed = (seed: number, index: number): number => (Math.imul(seed >>> 0, 0x9e3779b1) ^ Math.imul(index + 1, 0x85ebca6b)) >>> 0;
