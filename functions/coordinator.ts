import type { Context, ScheduledEvent } from 'aws-lambda';
import { onTick, type FunctionDeps } from '../lib/functions/core.js';
import { depsFromEnv, lazy } from '../lib/functions/env.js';
import { observed } from '../lib/functions/lambda.js';
import { parseTick } from '../lib/functions/records.js';
import { isSessionComponent } from '../lib/schemas/identity.js';

/** The scheduled tick: reconcile every lease (within the invocation's time: a round may take several), collect garbage, report leaderless leases. */
export const makeHandler = (deps: FunctionDeps) =>
  observed(deps, async (event: ScheduledEvent, context: Context) => {
    parseTick(event);
    const r = await onTick(deps, context.getRemainingTimeInMillis?.()); // (absent from the simulator's context: one pass, as before)
    return { leases: r.leases, leaderless: r.leaderless.length, errors: r.errors.map((e) => ({ lease: e.lease, error: e.error.message })), broken: r.broken.map((b) => ({ lease: b.lease, fields: b.error.fields, error: b.error.message })), unjudged: r.unjudged.map((u) => ({ lease: u.term.lease, session: u.term.session, fields: u.fields })), refusedSessions: r.refusedSessions.map((x) => ({ session: x.key.name, ...(isSessionComponent(x.key.component) ? {} : { component: x.key.component }), leases: x.leases, ...(x.deleteAfter === undefined ? {} : { deleteAfter: new Date(x.deleteAfter).toISOString() }), deleted: x.deleted })), collectedCandidates: r.collectedCandidates.length, collectedIdentities: r.collectedIdentities.length, ...(r.round ? { round: r.round } : {}) };
  });

export const handler = lazy(() => makeHandler(depsFromEnv('coordinator')));
