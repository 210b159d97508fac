/**
 * Kept answers (src/queries/answer-cache.ts): GET /dashboard and GET /agents are served again only
 * while nothing they were computed from was written, and a dashboard status that moves with the
 * clock (wrap-up ending) or a new day's call counts is never served stale.
 */
import { describe, expect, it } from 'vitest';
import { SqliteReadStore } from '../../src/gateways/read-store/sqlite.js';
import { HotReadStore } from '../../src/gateways/read-store/hot.js';
import type { Doc, FindOptions, ReadStore, Scalar } from '../../src/gateways/read-store/port.js';
import type { Context } from '../../src/context.js';
import type { AuthUser } from '../../src/domain/auth-user.js';
import { initialAgentState } from '../../src/commands/agent/agent.js';
import { agentKey, type AgentDoc } from '../../src/projections/agents.js';
import { callStatsKey } from '../../src/projections/calls.js';
import { dashboard, dashboardCached } from '../../src/queries/dashboard.js';
import { agentList, agentListCached } from '../../src/queries/agents.js';
import { manualClock } from '../support/clock.js';

const T0 = Date.UTC(2026, 10, 24, 12, 0, 0);
const ADMIN: AuthUser = { id: 1, username: 'boss', name: 'Boss', admin: true, agentId: null, services: [101], customer: 'acme' };
const ASHA: AuthUser = { id: 2, username: 'asha', name: 'Asha', admin: false, agentId: 1001, services: [101], customer: 'acme' };

const agent = (agentId: number, fields: Partial<AgentDoc> = {}): AgentDoc => ({
  ...initialAgentState(),
  exists: true,
  svcId: 101,
  agentId,
  name: `Agent ${agentId}`,
  number: `91000${agentId}`,
  sip: `sip-${agentId}`,
  status: 0,
  breakCode: -1,
  userId: null,
  ...fields,
});

const service = { svcId: 101, name: 'Acme', customer: 'acme', timezone: 'UTC', dids: [], skills: [], queues: [], webhook: null, socketKey: null, blocked: [] };

async function setUp(hot = true) {
  const clock = manualClock(T0);
  const inner = new SqliteReadStore(':memory:');
  const reads: ReadStore = hot ? new HotReadStore(inner, new Set(['services', 'agents', 'call-stats', 'in-ivr', 'queued-callers'])) : inner;
  await reads.commit(
    [
      { collection: 'services', id: '101', doc: service },
      { collection: 'agents', id: agentKey(101, 1001), doc: agent(1001) },
      { collection: 'agents', id: agentKey(101, 1002), doc: agent(1002) },
    ],
    {},
  );
  const ctx = { reads, now: clock.now } as unknown as Context;
  const body = async (user: AuthUser) => JSON.parse((await dashboard(ctx, user, 101)).json);
  /** What the route answers: the kept answer if there is one, else a computed one. */
  const served = async (user: AuthUser) => JSON.parse((dashboardCached(ctx, user, 101) ?? (await dashboard(ctx, user, 101))).json);
  return { clock, reads, ctx, body, served };
}

describe('kept answers', () => {
  it('the dashboard is kept per caller and voided by any write to a read model it came from', async () => {
    const { reads, ctx, served } = await setUp();
    expect(dashboardCached(ctx, ADMIN, 101)).toBeUndefined();
    const first = await dashboard(ctx, ADMIN, 101);
    expect(dashboardCached(ctx, ADMIN, 101)).toBe(first);
    // Another caller has an answer of its own (its name, its role, only its own agent).
    expect(dashboardCached(ctx, ASHA, 101)).toBeUndefined();
    const own = await served(ASHA);
    expect(own.agentsData.map((a: { id: number }) => a.id)).toEqual([1001]);
    expect(own.userName).toBe('asha');
    expect((await served(ADMIN)).agentsData.map((a: { id: number }) => a.id)).toEqual([1001, 1002]);

    for (const [collection, id, doc] of [
      ['agents', agentKey(101, 1002), agent(1002, { breakCode: 3 })],
      ['queued-callers', 'q1', { svcId: 101, queueId: 1, number: '9876543210', xnid: 'x1', since: T0 }],
      ['in-ivr', 'x2', { svcId: 101 }],
      ['call-stats', callStatsKey(101, '2026-11-24'), { totalCalls: 4, ibCalls: 3, obCalls: 1 }],
      ['services', '101', { ...service, name: 'Acme Support' }],
    ] as const) {
      await dashboard(ctx, ADMIN, 101);
      expect(dashboardCached(ctx, ADMIN, 101)).toBeDefined();
      await reads.commit([{ collection, id, doc }], {});
      expect(dashboardCached(ctx, ADMIN, 101), `a write to ${collection}`).toBeUndefined();
    }
    const now = await served(ADMIN);
    expect(now.agentsData.find((a: { id: number }) => a.id === 1002).status).toBe('3');
    expect(now.customersInQueue.dataCount).toBe('1');
    expect(now.callStats).toEqual({ totalCalls: 4, inIvr: 1, ibCalls: 3, obCalls: 1 });
    expect(now.serviceName).toBe('Acme Support');
  });

  it('an answer computed while a write lands is not kept as current', async () => {
    // A store whose agents read returns what it held, then a write lands before the answer is done.
    class WriteDuringRead extends HotReadStore {
      armed = false;
      override async find<T extends Doc = Doc>(collection: string, where?: Record<string, Scalar>, options?: FindOptions): Promise<T[]> {
        const docs = await super.find<T>(collection, where, options);
        if (this.armed && collection === 'agents') {
          this.armed = false;
          await this.commit([{ collection: 'agents', id: agentKey(101, 1001), doc: agent(1001, { status: 2 }) }], {});
        }
        return docs;
      }
    }
    const reads = new WriteDuringRead(new SqliteReadStore(':memory:'), new Set(['services', 'agents', 'call-stats', 'in-ivr', 'queued-callers']));
    await reads.commit([{ collection: 'services', id: '101', doc: service }, { collection: 'agents', id: agentKey(101, 1001), doc: agent(1001) }], {});
    const ctx = { reads, now: () => T0 } as unknown as Context;
    reads.armed = true;
    const stale = JSON.parse((await dashboard(ctx, ADMIN, 101)).json);
    expect(stale.agentsData[0].status).toBe('0');
    expect(dashboardCached(ctx, ADMIN, 101)).toBeUndefined();
    expect(JSON.parse((await dashboard(ctx, ADMIN, 101)).json).agentsData[0].status).toBe('2');
  });

  it('a wrap-up that ends with the clock shows the new status and free count, not the kept one', async () => {
    const { clock, reads, ctx, served } = await setUp();
    await reads.commit([{ collection: 'agents', id: agentKey(101, 1001), doc: agent(1001, { freeSince: T0 + 5_000 }) }], {});
    const during = await served(ADMIN);
    expect(during.agentsData.find((a: { id: number }) => a.id === 1001).status).toBe('4');
    expect(during.agentStats.freeAgents).toBe(1);
    clock.advance(4_999);
    expect(dashboardCached(ctx, ADMIN, 101)).toBeDefined();
    clock.advance(1);
    expect(dashboardCached(ctx, ADMIN, 101)).toBeUndefined();
    const after = await served(ADMIN);
    expect(after.agentsData.find((a: { id: number }) => a.id === 1001).status).toBe('0');
    expect(after.agentStats.freeAgents).toBe(2);
    // A clock set back before the answer was computed does not get it either.
    clock.set(T0);
    expect(dashboardCached(ctx, ADMIN, 101)).toBeUndefined();
    expect((await served(ADMIN)).agentsData.find((a: { id: number }) => a.id === 1001).status).toBe('4');
  });

  it("a new day's dashboard counts that day's calls", async () => {
    const { clock, reads, ctx, served } = await setUp();
    await reads.commit([{ collection: 'call-stats', id: callStatsKey(101, '2026-11-24'), doc: { totalCalls: 7, ibCalls: 7, obCalls: 0 } }], {});
    expect((await served(ADMIN)).callStats.totalCalls).toBe(7);
    clock.set(Date.UTC(2026, 10, 25, 0, 0, 0));
    expect(dashboardCached(ctx, ADMIN, 101)).toBeUndefined();
    expect((await served(ADMIN)).callStats.totalCalls).toBe(0);
  });

  it('GET /agents is kept per caller kind until the agents model is written', async () => {
    const { reads, ctx } = await setUp();
    const all = await agentList(ctx, ADMIN, 101);
    expect(agentListCached(ctx, ADMIN, 101)).toBe(all);
    expect(JSON.parse(all.json).map((a: { id: number }) => a.id)).toEqual([1001, 1002]);
    const own = await agentList(ctx, ASHA, 101);
    expect(JSON.parse(own.json).map((a: { id: number }) => a.id)).toEqual([1001]);
    expect(agentListCached(ctx, ASHA, 101)).toBe(own);
    await reads.commit([{ collection: 'agents', id: agentKey(101, 1003), doc: agent(1003) }], {});
    expect(agentListCached(ctx, ADMIN, 101)).toBeUndefined();
    expect(agentListCached(ctx, ASHA, 101)).toBeUndefined();
    expect(JSON.parse((await agentList(ctx, ADMIN, 101)).json).map((a: { id: number }) => a.id)).toEqual([1001, 1002, 1003]);
    expect(Buffer.from((await agentList(ctx, ADMIN, 101)).bytes).toString('utf8')).toBe((await agentList(ctx, ADMIN, 101)).json);
  });

  it('keeps nothing where the read models are not in memory (no write counts to trust)', async () => {
    const { ctx } = await setUp(false);
    await dashboard(ctx, ADMIN, 101);
    await agentList(ctx, ADMIN, 101);
    expect(dashboardCached(ctx, ADMIN, 101)).toBeUndefined();
    expect(agentListCached(ctx, ADMIN, 101)).toBeUndefined();
  });
});
