/**
 * The read models the dashboard and the agent list are built from, per service, as a fold that can
 * stop at any instant: the same pure projections the projector runs (services, agents, call-stats,
 * in-ivr, queued-callers), applied to one service's documents only. Snapshots of this state plus the
 * few events after them answer "as it was at T" without folding the service's whole history.
 */
import type { RecordedEvent } from '../gateways/event-store/port.js';
import type { Doc } from '../gateways/read-store/port.js';
import { isEvent, numberField } from '../commands/platform-events.js';
import type { Projection } from '../projections/projection.js';
import { collectionOf } from '../projections/projection.js';
import { servicesProjection } from '../projections/services.js';
import { agentsProjection } from '../projections/agents.js';
import { callStatsProjection, inIvrProjection, queuedCallersProjection } from '../projections/calls.js';

/** What the fold needs of an event. */
export type TimelineEvent = Pick<RecordedEvent, 'type' | 'data' | 'time' | 'position'>;

/** One service's documents, by `<collection>\u0000<id>`. */
export type TimelineState = Map<string, Doc>;

/** A state as stored in a snapshot, and back. */
export const serialiseState = (state: TimelineState): string => JSON.stringify(Object.fromEntries(state));
export const parseState = (text: string): TimelineState => new Map(Object.entries(JSON.parse(text) as Record<string, Doc>));

const TIMELINE_PROJECTIONS: Projection<any>[] = [
  servicesProjection,
  agentsProjection,
  callStatsProjection,
  inIvrProjection,
  queuedCallersProjection,
];

/** The timeline projections an event of each type can change (their `canHandle`), by type. */
const byType = new Map<string, Projection<any>[]>();
function projectionsOf(type: string): Projection<any>[] {
  let list = byType.get(type);
  if (!list) byType.set(type, (list = TIMELINE_PROJECTIONS.filter((p) => !p.canHandle || p.canHandle.includes(type))));
  return list;
}

/** The event types whose data the timeline reads. */
export const TIMELINE_DATA_TYPES: readonly string[] = [...new Set(['UserProvisioned', ...TIMELINE_PROJECTIONS.flatMap((p) => p.canHandle ?? [])])];

/** Services whose dashboard or agent list an event can change. */
export function timelineServices(e: Pick<RecordedEvent, 'type' | 'data'>): number[] {
  if (isEvent(e, 'UserProvisioned')) return e.data.agentId === null ? [] : e.data.services;
  const projections = projectionsOf(e.type);
  if (projections.length === 0) return [];
  const svcId = numberField(e, 'svcId');
  if (svcId === undefined) return [];
  for (const p of projections) if (p.keys(e as RecordedEvent).length > 0) return [svcId];
  return [];
}

const CALL_STATS = collectionOf(callStatsProjection);

/**
 * A document's state after the event being applied, as a fold of the same projection over the same
 * events from the same start already computed it (undefined: not known, evolve it here).
 */
export type KnownDoc = (collection: string, id: string) => Doc | null | undefined;

/** The agents: folded from the start of the log, the timeline's document of an agent is the fold's. */
const AGENTS = collectionOf(agentsProjection);

/**
 * Applies one event to a service's documents (in place; returns the same object). `known` (replay,
 * beside a document fold from the log's start) gives the agents' documents instead of evolving them
 * a second time.
 */
export function applyTimeline(state: TimelineState, svcId: number, e: TimelineEvent, known?: KnownDoc): TimelineState {
  // The projections read only type, data and time.
  const recorded = e as RecordedEvent;
  const prefix = `${svcId}-`;
  for (const p of projectionsOf(e.type)) {
    const collection = collectionOf(p);
    for (const id of p.keys(recorded)) {
      // Keys of other services (a user of several services) are not this service's documents.
      if ((p === agentsProjection || p === callStatsProjection) && !id.startsWith(prefix)) continue;
      if (p === servicesProjection && id !== String(svcId)) continue;
      const key = `${collection}\u0000${id}`;
      const previous = state.get(key) ?? null;
      const reused = known && collection === AGENTS ? known(collection, id) : undefined;
      const next = reused !== undefined ? reused : p.evolve(previous, recorded, id);
      if (next === null) state.delete(key);
      else state.set(key, next);
      // Only the latest day's call counts matter (the dashboard counts from midnight): a new day drops the last.
      if (p === callStatsProjection && previous === null) {
        for (const k of state.keys()) if (k !== key && k.startsWith(`${CALL_STATS}\u0000`)) state.delete(k);
      }
    }
  }
  return state;
}

/** The documents of one collection in a timeline state. */
export function docsOf<T extends Doc>(state: TimelineState, collection: string): T[] {
  const prefix = `${collection}\u0000`;
  const out: T[] = [];
  for (const [k, v] of state) if (k.startsWith(prefix)) out.push(v as T);
  return out;
}

export function docOf<T extends Doc>(state: TimelineState, collection: string, id: string): T | null {
  return (state.get(`${collection}\u0000${id}`) as T | undefined) ?? null;
}
