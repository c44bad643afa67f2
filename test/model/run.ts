/**
 * Explores model.test.ts's scopes with the real protocol and prints the figures (states,
 * transitions, depth, time and CPU time): `npx tsx test/model/run.ts [extra depth]` goes that much deeper than CI.
 */
import { explore } from './explorer.js';
import { electionSpec } from './election-model.js';
import { SCOPES } from './scopes.js';

const extra = Number(process.argv[2] ?? 0);
for (const s of SCOPES) {
  const cpu = process.cpuUsage();
  const r = explore(electionSpec(s.cfg), { maxDepth: s.depth + extra });
  // (the process's CPU time as well as the wall's: on a shared machine the wall time says more about the neighbours)
  const { user, system } = process.cpuUsage(cpu);
  console.log(`${s.name}: depth ${r.depth}, ${r.states} states, ${r.transitions} transitions, ${(r.ms / 1000).toFixed(1)} s, ${((user + system) / 1e6).toFixed(1)} s of CPU${r.violation ? `, VIOLATION: ${r.violation.message}\n  ${r.violation.trace.map((t) => t.label).join('\n  ')}` : ''}`);
}
