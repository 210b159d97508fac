/**
 * runSteps, the call-flow worker's commands of one reaction in one append: on a real event store,
 * what lands in the log (order, one commit), a refused step beside ones that hold, and a cached
 * state gone stale behind the cache's back.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Context } from '../../src/context.js';
import { SqliteEventStore } from '../../src/gateways/event-store/sqlite.js';
import { applyProvisioning } from '../../src/commands/provisioning/provision.js';
import { handleCommand } from '../../src/commands/decider.js';
import { agentDecider, type AgentState } from '../../src/commands/agent/agent.js';
import { runSteps, type Step } from '../../src/workers/call-flow/commands.js';
import { streams } from '../../src/domain/streams.js';
import { teamDoc } from '../support/fixtures.js';

describe('runSteps', () => {
  let dir: string;
  let events: SqliteEventStore;
  let ctx: Context;

  beforeEach(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'ct-run-steps-'));
    events = new SqliteEventStore(path.join(dir, 'events.db'));
    ctx = { events, now: () => Date.now() } as unknown as Context;
    await applyProvisioning(events, teamDoc());
    for (const agentId of [1002, 1003]) await handleCommand(events, streams.agent(101, agentId), agentDecider, { type: 'SetState', status: 0, time: Date.now() });
  });

  afterEach(async () => {
    await events.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const agent = (agentId: number, command: Extract<Step, { kind: 'agent' }>['command']): Step => ({ kind: 'agent', svcId: 101, agentId, command });
  const tail = async (after: number) => (await events.readAll({ after })).map((e) => `${e.streamId} ${e.type}`);

  it('appends the steps in one commit, in their order, each on the state the previous left', async () => {
    const head = await events.headPosition();
    const commits = events.stats.commits;
    const t = Date.now();
    const out = await runSteps(ctx, [
      agent(1002, { type: 'Reserve', xnid: 'x1', time: t }),
      agent(1003, { type: 'Reserve', xnid: 'x1', time: t }),
      agent(1002, { type: 'Answer', xnid: 'x1', time: t }),
    ]);
    expect(events.stats.commits).toBe(commits + 1);
    expect(await tail(head)).toEqual(['agent-101-1002 AgentReserved', 'agent-101-1003 AgentReserved', 'agent-101-1002 AgentAnswered']);
    expect((out[2]!.state as AgentState).call).toMatchObject({ xnid: 'x1', phase: 'talking' });
  });

  it('a refused step appends nothing and the others still do', async () => {
    const t = Date.now();
    await runSteps(ctx, [agent(1002, { type: 'Reserve', xnid: 'x1', time: t })]);
    const head = await events.headPosition();
    const out = await runSteps(ctx, [agent(1002, { type: 'Reserve', xnid: 'x2', time: t }), agent(1003, { type: 'Reserve', xnid: 'x2', time: t }), agent(9999, { type: 'Reserve', xnid: 'x2', time: t })]);
    expect(out[0]).toBeNull(); // 1002 holds x1
    expect(out[2]).toBeNull(); // no such agent
    expect(await tail(head)).toEqual(['agent-101-1003 AgentReserved']);
  });

  it('decides again on the stored state when the cached one went stale', async () => {
    const t = Date.now();
    await runSteps(ctx, [agent(1002, { type: 'Reserve', xnid: 'x1', time: t })]);
    // Another writer (another process on the file) releases the agent: the cache does not know.
    await events.appendToStream(streams.agent(101, 1002), [{ type: 'AgentReleased', data: { svcId: 101, agentId: 1002, time: t, xnid: 'x1', answered: false, freeAt: t } }]);
    const head = await events.headPosition();
    const out = await runSteps(ctx, [agent(1002, { type: 'Reserve', xnid: 'x2', time: t })]);
    expect((out[0]!.state as AgentState).call?.xnid).toBe('x2');
    expect(await tail(head)).toEqual(['agent-101-1002 AgentReserved']);
  });
});
