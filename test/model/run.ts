/**
 * Explores model.test.ts's scopes with the real protocol and prints the figures (states,
 * transitions, depth, time): `npx tsx test/model/run.ts [extra depth]` goes that much deeper than CI.
 */
import { explore } from './explorer.js';
import { electionSpec } from './election-model.js';
import { SCOPES } from './scopes.js';

const extra = Number(process.argv[2] ?? 0);
for (const s of SCOPES) {
  const r = explore(electionSpec(s.cfg), { maxDepth: s.depth + extra });
  console.log(`${s.name}: depth ${r.depth}, ${r.states} states, ${r.transitions} transitions, ${(r.ms / 1000).toFixed(1)} s${r.violation ? `, VIOLATION: ${r.violation.message}\n  ${r.violation.trace.map((t) => t.label).join('\n  ')}` : ''}`);
}
