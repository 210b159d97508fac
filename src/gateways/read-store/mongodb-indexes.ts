/**
 * Every `find` shape the platform's queries make, so the MongoDB read store can create an index
 * for each at start (equality fields, then the sort field, then `_id` as the tie-break, which is
 * exactly the sort the adapter asks for). A new `reads.find(...)` adds its shape here; the
 * end-to-end test on the MongoDB double fails on a find no index serves.
 */
export interface FindShape {
  collection: string;
  /** Fields compared for equality. */
  equal: string[];
  /** The `orderBy` field and direction; omitted: ordered by id. */
  sort?: [field: string, direction: 1 | -1];
}

export const FIND_SHAPES: FindShape[] = [
  // src/queries/agents.ts
  { collection: 'agents', equal: ['svcId', 'exists'] },
  { collection: 'agents', equal: ['svcId', 'exists', 'number'] },
  { collection: 'agents', equal: ['svcId', 'exists', 'sip'] },
  // src/workers/call-flow/recovery.ts (at start: every agent)
  { collection: 'agents', equal: ['exists'] },
  // src/queries/wallboard.ts (today's counters)
  { collection: 'call-outcomes', equal: ['svcId', 'day'] },
  // src/queries/dashboard.ts
  { collection: 'in-ivr', equal: ['svcId'] },
  { collection: 'queued-callers', equal: ['svcId'], sort: ['since', 1] },
  // src/http/routes/subscriber.ts, src/workers/delivery
  { collection: 'subscribers', equal: ['svc_id'], sort: ['agent_id', 1] },
  { collection: 'subscribers', equal: ['svc_id', 'agent_id'], sort: ['agent_id', 1] },
  { collection: 'subscribers', equal: ['svc_id'] },
  // src/http/routes/ops-deliveries.ts
  { collection: 'deliveries', equal: ['svcId'], sort: ['createdAt', -1] },
  { collection: 'deliveries', equal: ['svcId', 'status'], sort: ['createdAt', -1] },
  // src/http/routes/ops-campaigns.ts, src/workers/dialer, src/commands/dialer/upload.ts
  { collection: 'campaigns', equal: ['svcId'], sort: ['campaignId', 1] },
  { collection: 'campaign-contacts', equal: ['svcId', 'campaignId'] },
  { collection: 'campaign-contacts', equal: ['svcId', 'campaignId', 'status', 'attempts'] },
  // src/workers/call-flow/recovery.ts
  { collection: 'calls', equal: ['ended'] },
  // src/gateways/sms/simulator.ts (the simulated outbox)
  { collection: 'sim-sms', equal: [], sort: ['time', 1] },
  { collection: 'sim-sms', equal: ['number'], sort: ['time', 1] },
];
