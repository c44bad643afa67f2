/** Local mode runs the very modules the construct bundles: each literal import is the wiring's entry. */
import { describe, expect, it } from 'vitest';
import { handlerModules } from '../../lib/local/handlers.js';
import { wiring, type FunctionName } from '../../lib/wiring.js';

describe('the local handler map', () => {
  it('names every wired function, and nothing else', () => {
    expect(Object.keys(handlerModules).sort()).toEqual(Object.keys(wiring).sort());
  });

  it.each(Object.keys(wiring) as FunctionName[])('%s loads the module the wiring names as its entry', async (name) => {
    const entry = wiring[name].entry.replace(/\.ts$/, '.js');
    const byWiring: unknown = await import(/* @vite-ignore */ `../../${entry}`);
    const mod = await handlerModules[name]();
    expect(mod).toBe(byWiring);
    expect(typeof mod.makeHandler).toBe('function');
  });
});
