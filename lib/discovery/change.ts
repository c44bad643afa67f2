/**
 * What a leader-change event means for a lease's name: a term began (point the name at its holder's
 * address), or a term ended with no new leader yet (the name must stop pointing at its holder).
 * Pure: the EventBridge event in, a LeaderChange (or why it changes nothing) out.
 */
import * as z from 'zod';
import { EVENT_SOURCE, parseEvent } from '../events/schemas.js';
import { parse } from '../schemas/validation.js';

/** One change of a lease's leadership, ordered by (fencingToken, began before ended). */
export type LeaderChange =
  | {
      readonly kind: 'began';
      readonly lease: string;
      /** The new term's token. */
      readonly fencingToken: number;
      readonly holder: string;
      /** Where clients reach the holder, as it advertised it; undefined: it advertised none. */
      readonly address: string | undefined;
      /** The event's id (`<stream record>:<kind>`): the same for a redelivery. */
      readonly eventId: string;
    }
  | {
      readonly kind: 'ended';
      readonly lease: string;
      /** The token of the term that ended. */
      readonly fencingToken: number;
      /** Released (a release, an operator's), lost (the platform stopped the holder), expired (its term ran out and an election opened). */
      readonly why: 'released' | 'lost' | 'expired';
      readonly eventId: string;
    };

/** The EventBridge envelope the function is invoked with (the rule's target input is the whole event). */
const Envelope = z.object({
  source: z.literal(EVENT_SOURCE, `must be "${EVENT_SOURCE}": only Conclave's events name leaders`),
  'detail-type': z.string(),
  /** The publishing deployment's leases table ARN (lib/events/publisher.ts). */
  resources: z.array(z.string()).optional(),
  detail: z.unknown(),
});

/**
 * The LeaderChange of an event from the Conclave bus, or `{ ignored }` for one that changes no
 * name (an Election Started of a re-election, or of a lease that had no holder), or that another
 * deployment published (given `leasesTableArn`, its `resources` do not name it). Throws a
 * ValidationError naming the field for an event that does not parse: the rule matches only the
 * detail-types of DISCOVERY_DETAIL_TYPES, so such an event is malformed, not merely uninteresting.
 */
export function changeOfEvent(raw: unknown, leasesTableArn?: string): LeaderChange | { readonly ignored: string; readonly foreign?: true } {
  const envelope = parse(Envelope, raw, 'leader-discovery event');
  // another deployment's event on a shared bus (the rule matches this one's; a rule left from before it did not)
  if (leasesTableArn !== undefined && !envelope.resources?.includes(leasesTableArn))
    return { ignored: `published by another deployment: its resources (${JSON.stringify(envelope.resources ?? [])}) do not name this deployment's leases table ${leasesTableArn}`, foreign: true };
  const event = parseEvent(envelope['detail-type'], envelope.detail);
  switch (event.detailType) {
    case 'Leader Elected': {
      const d = event.detail;
      return { kind: 'began', lease: d.lease, fencingToken: d.fencingToken, holder: d.holder, address: d.address, eventId: d.id };
    }
    case 'Lease Released':
      return { kind: 'ended', lease: event.detail.lease, fencingToken: event.detail.fencingToken, why: 'released', eventId: event.detail.id };
    case 'Leader Lost':
      return { kind: 'ended', lease: event.detail.lease, fencingToken: event.detail.fencingToken, why: 'lost', eventId: event.detail.id };
    case 'Election Started': {
      const d = event.detail;
      // the election removed an expired or reported holder in the same write: its term's token is the lease's still
      if (d.previousHolder === undefined || d.reelection) return { ignored: d.reelection ? 'a re-election: the holder leads on' : 'no holder was removed (the lease was vacant already)' };
      return { kind: 'ended', lease: d.lease, fencingToken: d.fencingToken, why: 'expired', eventId: d.id };
    }
    default:
      return { ignored: `${event.detailType} names no new leader and ends no term` };
  }
}
