/**
 * The call-flow worker below the end-to-end tests: its serial runner and agent picker alone, then
 * CallFlow itself on real stores with a fake switch the test drives signal by signal (no simulated
 * timing), and its crash recovery.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SerialRunner } from '../../src/workers/call-flow/serial.js';
import { agentsToTry, callsToOffer } from '../../src/workers/call-flow/agent-picker.js';
import { CallFlow } from '../../src/workers/call-flow/manager.js';
import type { DialRequest, EndReason, Switch, SwitchSignal } from '../../src/gateways/switch/port.js';
import type { Context } from '../../src/context.js';
import { SqliteEventStore } from '../../src/gateways/event-store/sqlite.js';
import { SqliteReadStore } from '../../src/gateways/read-store/sqlite.js';
import { ProjectionRunner } from '../../src/projections/runner.js';
import { projections } from '../../src/projections/index.js';
import { localReadSync } from '../../src/projections/read-sync.js';
import { applyProvisioning } from '../../src/commands/provisioning/provision.js';
import { handleCommand } from '../../src/commands/decider.js';
import { agentDecider } from '../../src/commands/agent/agent.js';
import { placeOutboundCall } from '../../src/commands/call/place.js';
import { RecordingSigner } from '../../src/domain/recording.js';
import { loadSigningKey } from '../../src/commands/platform-key.js';
import { streams } from '../../src/domain/streams.js';
import { teamDoc } from '../support/fixtures.js';
import { until } from '../support/until.js';

describe('SerialRunner', () => {
  it('runs the steps of one key in order, one at a time, and keys side by side', async () => {
    const log: string[] = [];
    const runner = new SerialRunner(() => {});
    let releaseA!: () => void;
    const aBlocked = new Promise<void>((r) => (releaseA = r));
    runner.run('a', async () => {
      log.push('a1 start');
      await aBlocked;
      log.push('a1 end');
    });
    runner.run('a', async () => void log.push('a2'));
    runner.run('b', async () => void log.push('b1'));
    await until(() => log.includes('b1'), 'b runs while a waits');
    expect(log).toEqual(['a1 start', 'b1']);
    releaseA();
    await runner.idle();
    expect(log).toEqual(['a1 start', 'b1', 'a1 end', 'a2']);
    expect(runner.busy).toBe(0);
  });

  it('reports a failed step and still runs the next step of its key', async () => {
    const errors: [string, string][] = [];
    const runner = new SerialRunner((err, key) => errors.push([key, (err as Error).message]));
    let ran = false;
    runner.run('k', async () => {
      throw new Error('boom');
    });
    runner.run('k', async () => {
      ran = true;
    });
    await runner.idle();
    expect(errors).toEqual([['k', 'boom']]);
    expect(ran).toBe(true);
  });

  it('counts the steps of a key queued behind the running one', async () => {
    const runner = new SerialRunner(() => {});
    const seen: number[] = [];
    runner.run('k', async () => void seen.push(runner.waiting('k')));
    runner.run('k', async () => void seen.push(runner.waiting('k')));
    expect(runner.waiting('k')).toBe(2);
    await runner.idle();
    expect(seen).toEqual([1, 0]);
    expect(runner.waiting('k')).toBe(0);
  });

  it('idle waits for steps queued by steps', async () => {
    const runner = new SerialRunner(() => {});
    let last = false;
    runner.run('x', async () => runner.run('y', async () => void (last = true)));
    await runner.idle();
    expect(last).toBe(true);
  });
});

describe('agent picker', () => {
  const free = [
    { agentId: 7, skills: [] },
    { agentId: 3, skills: [{ skillId: 2 }] },
    { agentId: 5, skills: [{ skillId: 2 }, { skillId: 9 }] },
  ];

  it('keeps the given order (longest free first) and skips agents that refused the call', () => {
    expect(agentsToTry({ namedAgentId: null, skillId: null }, free, new Set())).toEqual([7, 3, 5]);
    expect(agentsToTry({ namedAgentId: null, skillId: null }, free, new Set([7]))).toEqual([3, 5]);
  });

  it('prefers agents with the skill, and takes any free agent when none has it', () => {
    expect(agentsToTry({ namedAgentId: null, skillId: 2 }, free, new Set())).toEqual([3, 5]);
    expect(agentsToTry({ namedAgentId: null, skillId: 2 }, free, new Set([3, 5]))).toEqual([7]);
    expect(agentsToTry({ namedAgentId: null, skillId: 4 }, free, new Set())).toEqual([7, 3, 5]);
  });

  it('a named agent is the only one, free or not, until it refused the call', () => {
    expect(agentsToTry({ namedAgentId: 42, skillId: 2 }, free, new Set())).toEqual([42]);
    expect(agentsToTry({ namedAgentId: 42, skillId: null }, free, new Set([42]))).toEqual([]);
  });

  it('offers the queued calls of a service longest waiting first, none being offered or ending', () => {
    const calls = [
      { id: 'late', svcId: 1, queuedAt: 30, offering: false, ending: false },
      { id: 'early', svcId: 1, queuedAt: 10, offering: false, ending: false },
      { id: 'ringing', svcId: 1, queuedAt: 5, offering: true, ending: false },
      { id: 'ending', svcId: 1, queuedAt: 5, offering: false, ending: true },
      { id: 'not-queued', svcId: 1, queuedAt: null, offering: false, ending: false },
      { id: 'other', svcId: 2, queuedAt: 1, offering: false, ending: false },
    ];
    expect(callsToOffer(calls, 1).map((c) => c.id)).toEqual(['early', 'late']);
  });
});

/** A switch the test drives: it records what the worker asks and sends the signals the test says. */
class FakeSwitch implements Switch {
  readonly dialled: DialRequest[] = [];
  readonly bridged: [string, string][] = [];
  readonly hungUp: string[] = [];
  private readonly live = new Map<string, string>();
  private listener: (s: SwitchSignal) => void = () => {};

  dial(r: DialRequest) {
    this.dialled.push(r);
    this.live.set(r.legId, r.callId);
  }
  acceptInbound(callId: string, legId: string) {
    this.live.set(legId, callId);
  }
  hangup(legId: string) {
    if (!this.live.has(legId)) return;
    this.hungUp.push(legId);
    // As a real switch: the ended signal comes later, not inside the call.
    queueMicrotask(() => this.send('ended', legId, 'hangup'));
  }
  bridge(_callId: string, a: string, b: string) {
    this.bridged.push([a, b]);
  }
  monitor() {}
  remoteHangup(legId: string) {
    this.send('ended', legId, 'hangup');
  }
  onSignal(listener: (s: SwitchSignal) => void) {
    this.listener = listener;
  }
  activeLegs() {
    return [...this.live.keys()];
  }
  async close() {}

  /** The remote party: rings, answers or ends a leg. */
  send(kind: SwitchSignal['kind'], legId: string, reason: EndReason = 'hangup') {
    const callId = this.live.get(legId);
    if (!callId) throw new Error(`no live leg ${legId}`);
    if (kind === 'ended') this.live.delete(legId);
    const time = Date.now();
    this.listener(kind === 'ended' ? { kind, callId, legId, time, reason } : { kind, callId, legId, time });
  }

  /** Rings then answers a leg (the port's order: ringing first). */
  answer(legId: string) {
    this.send('ringing', legId);
    this.send('answered', legId);
  }

  legOf(role: DialRequest['role'], n = 1): DialRequest | undefined {
    return this.dialled.filter((d) => d.role === role)[n - 1];
  }
}

describe('CallFlow with a fake switch', () => {
  let dir: string;
  let ctx: Context;
  let runner: ProjectionRunner;
  let sw: FakeSwitch;
  let flow: CallFlow | null;
  let signer: RecordingSigner;

  beforeEach(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'ct-call-flow-'));
    const now = () => Date.now();
    const events = new SqliteEventStore(path.join(dir, 'events.db'), now);
    const reads = new SqliteReadStore(path.join(dir, 'read.db'), now);
    runner = new ProjectionRunner(events, reads, projections);
    await runner.start();
    // Only what the call-flow worker and the place command use.
    ctx = { events, reads, sync: localReadSync(events, runner), now, logger: pino({ level: 'silent' }) } as unknown as Context;
    await applyProvisioning(events, teamDoc());
    await ctx.sync.waitFor(await events.headPosition());
    signer = new RecordingSigner(await loadSigningKey(events), 'http://127.0.0.1');
    sw = new FakeSwitch();
    flow = null;
  });

  afterEach(async () => {
    await flow?.stop();
    await runner.stop();
    await ctx.events.close();
    await ctx.reads.close?.();
    rmSync(dir, { recursive: true, force: true });
  });

  const login = async (agentId: number) => {
    const r = await handleCommand(ctx.events, streams.agent(101, agentId), agentDecider, { type: 'SetState', status: 0, time: Date.now() });
    await ctx.sync.waitFor(r.position);
  };
  const startFlow = async () => {
    flow = new CallFlow(ctx, sw, signer);
    await flow.start();
    return flow;
  };
  const place = async () => {
    const { xnid, position } = await placeOutboundCall(ctx, { svcId: 101, number: '9876543210', origin: 'api', namedAgentId: null, agentFirst: false, recording: true, userId: 1 });
    await ctx.sync.waitFor(position);
    return xnid;
  };
  const types = async (xnid: string) => (await ctx.events.readStream(streams.call(xnid))).map((e) => e.type);

  it('rings the customer, then a free agent, bridges them, and ends the call when the customer hangs up', async () => {
    await login(1002);
    await startFlow();
    const xnid = await place();
    const customer = await until(() => sw.legOf('customer'), 'the customer dialled');
    expect(customer).toMatchObject({ callId: xnid, number: '9876543210' });
    expect(sw.legOf('agent')).toBeUndefined();

    sw.answer(customer.legId);
    const agent = await until(() => sw.legOf('agent'), 'an agent dialled once the customer answered');
    expect(agent.number).toBe('9100001002');

    sw.answer(agent.legId);
    await until(() => sw.bridged.length === 1, 'the legs bridged');
    expect(sw.bridged[0]).toEqual([customer.legId, agent.legId]);

    sw.remoteHangup(customer.legId);
    await until(async () => (await types(xnid)).includes('CallEnded'), 'the call ended');
    expect(sw.hungUp).toEqual([agent.legId]);
    await flow!.idle();
    expect(flow!.openCalls).toBe(0);
    expect(await types(xnid)).toEqual(expect.arrayContaining(['CallStarted', 'CallBridged', 'CallEnded']));
    // The agent is free again (after its wrap-up, if any): no call held.
    await ctx.sync.caughtUp();
    expect(await ctx.reads.get('agents', '101-1002')).toMatchObject({ call: null });
  });

  it('an agent that does not answer is not offered the call again: the next free agent is', async () => {
    await login(1002);
    await login(1003);
    await startFlow();
    const xnid = await place();
    const customer = await until(() => sw.legOf('customer'), 'the customer dialled');
    sw.answer(customer.legId);
    const first = await until(() => sw.legOf('agent', 1), 'the first agent dialled');
    sw.send('ringing', first.legId);
    sw.send('ended', first.legId, 'no_answer');
    const second = await until(() => sw.legOf('agent', 2), 'the second agent dialled');
    expect(new Set([first.number, second.number])).toEqual(new Set(['9100001002', '9100001003']));
    sw.send('ended', second.legId, 'no_answer');
    // Nobody left: the caller waits in the queue, and no agent is rung a third time.
    await flow!.idle();
    expect(sw.legOf('agent', 3)).toBeUndefined();
    expect(await types(xnid)).toContain('CallQueued');
  });

  it('calls answered together get one free agent each, none queued', async () => {
    for (const id of [1001, 1002, 1003]) await login(id);
    await startFlow();
    const xnids = [await place(), await place(), await place()];
    await until(() => sw.dialled.filter((d) => d.role === 'customer').length === 3, 'three customers dialled');
    // All answered in one turn: each call sees the same agent free longest.
    for (let n = 1; n <= 3; n++) sw.answer(sw.legOf('customer', n)!.legId);
    await until(() => sw.dialled.filter((d) => d.role === 'agent').length === 3, 'three agents dialled');
    await flow!.idle();
    expect(new Set(sw.dialled.filter((d) => d.role === 'agent').map((d) => d.number))).toEqual(new Set(['9100001001', '9100001002', '9100001003']));
    for (const xnid of xnids) expect(await types(xnid)).not.toContain('CallQueued');
  });

  it('at start, ends the calls a previous process left open and frees their agents', async () => {
    await login(1002);
    const first = await startFlow();
    const xnid = await place();
    const customer = await until(() => sw.legOf('customer'), 'the customer dialled');
    sw.answer(customer.legId);
    await until(() => sw.legOf('agent'), 'the agent dialled');
    await ctx.sync.caughtUp();
    expect(await ctx.reads.get('agents', '101-1002')).toMatchObject({ call: { xnid } });
    // The process goes (stopping ends none of its calls): the log and the read models stay, the
    // switch of the next process knows none of the legs.
    await first.stop();
    flow = null;
    sw = new FakeSwitch();
    await startFlow();
    expect(await types(xnid)).toContain('CallEnded');
    await ctx.sync.caughtUp();
    expect(await ctx.reads.get('agents', '101-1002')).toMatchObject({ call: null });
    expect(sw.dialled).toEqual([]);
  });
});
