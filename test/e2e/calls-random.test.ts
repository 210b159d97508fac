/**
 * Randomized interleavings of commands and switch signals (seeded, so a failure replays), then the
 * invariants over the whole event log: an agent is on at most one call at a time; every call ends
 * exactly once; every ended call has one webhook record (none for blocked callers); every leg's
 * events come in a valid order and nothing follows CallEnded.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../support/server.js';
import { ADMIN, teamDoc } from '../support/fixtures.js';
import { eventually } from '../support/wait.js';
import type { RecordedEvent } from '../../src/gateways/event-store/port.js';

function mulberry32(seed: number) {
  return () => {
    seed |= 0;
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const SEEDS = (process.env.CALL_FUZZ_SEEDS ?? '1,2,3').split(',').map(Number);
const AGENTS = ['9100001001', '9100001002', '9100001003'];

function checkInvariants(all: RecordedEvent[]) {
  const problems: string[] = [];
  // Agents: reservations and releases alternate, so no agent ever holds two calls.
  const holding = new Map<string, string | null>();
  for (const e of all.filter((e) => e.streamId.startsWith('agent-'))) {
    const d = e.data as { xnid?: string };
    if (e.type === 'AgentReserved') {
      const held = holding.get(e.streamId);
      if (held) problems.push(`${e.streamId} reserved for ${d.xnid} while on ${held}`);
      holding.set(e.streamId, d.xnid!);
    } else if (e.type === 'AgentReleased') {
      if (holding.get(e.streamId) !== d.xnid) problems.push(`${e.streamId} released from ${d.xnid} it did not hold`);
      holding.set(e.streamId, null);
    }
  }
  for (const [agent, held] of holding) if (held) problems.push(`${agent} still held by ${held} after every call ended`);
  // Calls.
  const calls = new Map<string, RecordedEvent[]>();
  for (const e of all.filter((e) => e.streamId.startsWith('call-'))) {
    const list = calls.get(e.streamId) ?? [];
    list.push(e);
    calls.set(e.streamId, list);
  }
  for (const [stream, events] of calls) {
    const ends = events.filter((e) => e.type === 'CallEnded');
    if (ends.length !== 1) problems.push(`${stream} ended ${ends.length} times`);
    if (events.at(-1)?.type !== 'CallEnded') problems.push(`${stream} has ${events.at(-1)?.type} after CallEnded`);
    const startedData = events[0]!.data as { blocked: boolean };
    const end = ends[0]?.data as { webhook: unknown; disposition: string } | undefined;
    if (end && (end.webhook === null) !== startedData.blocked) problems.push(`${stream} webhook record ${end.webhook === null ? 'missing' : 'present for a blocked caller'}`);
    const legs = new Map<string, string[]>();
    for (const e of events) {
      const m = /^(Customer|Agent)(Ring|Up|Hangup)$/.exec(e.type);
      if (!m) continue;
      const legId = (e.data as { legId: string }).legId;
      legs.set(legId, [...(legs.get(legId) ?? []), m[2]!]);
    }
    for (const [leg, seq] of legs) {
      const s = seq.join(',');
      if (s !== 'Ring,Up,Hangup' && s !== 'Ring,Hangup') problems.push(`${stream} leg ${leg}: ${s}`);
    }
    const bridged = events.some((e) => e.type === 'CallBridged');
    if (end && (end.disposition === 'answered') !== bridged) problems.push(`${stream} disposition ${end.disposition} but bridged=${bridged}`);
  }
  return { problems, calls: calls.size };
}

describe('randomized call interleavings keep the invariants', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startServer({ SIM_ANSWER_MS: '15', SIM_RING_TIMEOUT_MS: '120' });
    expect((await s.ops('/ops/v1/provisioning', { method: 'PUT', json: teamDoc() })).status).toBe(200);
  });
  afterAll(async () => {
    await s.stop();
  });

  it.each(SEEDS)('seed %i', async (seed) => {
    const rnd = mulberry32(seed);
    const pick = <T,>(xs: T[]) => xs[Math.floor(rnd() * xs.length)]!;
    const xnids: string[] = [];
    const post = (path: string, form: Record<string, string>) => s.api(path, { method: 'POST', form });
    const actions: (() => Promise<unknown>)[] = [
      async () => {
        const suffix = pick(['1234', '5678', '0000', '0001', '4321']);
        const form: Record<string, string> = { number: `98765${suffix}${Math.floor(rnd() * 10)}` };
        if (rnd() < 0.3) form['agent-sip'] = pick(['asha', 'bala', 'chitra']);
        if (rnd() < 0.3) form['agent-dial-first'] = rnd() < 0.5 ? 'true' : 'false';
        const res = await post('/api/v1/calls', form);
        if (res.status === 200) xnids.push((await res.json()).id);
        else expect(res.status).toBe(409);
      },
      async () => {
        const res = await s.ops('/ops/v1/simulator/inbound', { method: 'POST', json: { did: '8000000101', from: rnd() < 0.15 ? '9000000666' : `98111${Math.floor(rnd() * 99999)}`.padEnd(10, '7') } });
        expect(res.status).toBe(200);
        xnids.push((await res.json()).xnid);
      },
      async () => {
        const q = pick(['status=0', 'status=0', 'status=2', 'break=1', 'break=0', 'break=7']);
        const res = await s.api(`/api/v1/agents?${q}&agent-number=${pick(AGENTS)}`, { method: 'PATCH', auth: ADMIN });
        expect([200, 409]).toContain(res.status);
      },
      async () => {
        if (!xnids.length) return;
        const res = await post('/api/v1/hangup', { xnid: pick(xnids) });
        expect([200, 409]).toContain(res.status);
      },
      async () => {
        if (!xnids.length) return;
        const res = await s.ops('/ops/v1/simulator/hangup', { method: 'POST', json: { xnid: pick(xnids), party: pick(['customer', 'agent']) } });
        expect([200, 409]).toContain(res.status);
      },
      async () => {
        if (!xnids.length) return;
        const res = await post('/api/v1/transfer', { 'agent-id': String(pick([1001, 1002, 1003])), type: pick(['BLIND', 'ATTENDED']), 'call-id': pick(xnids), 'to-agent-id': String(pick([1001, 1002, 1003])) });
        expect([200, 400, 409]).toContain(res.status);
      },
    ];
    for (let i = 0; i < 60; i++) {
      const batch = rnd() < 0.3 ? 3 : 1; // sometimes several requests at once
      await Promise.all(Array.from({ length: batch }, () => pick(actions)()));
      if (rnd() < 0.5) await new Promise((r) => setTimeout(r, Math.floor(rnd() * 30)));
    }
    // Wind down: every agent logged in to serve the queue, then every call hung up until none is open.
    await eventually(async () => {
      for (const n of AGENTS) await s.api(`/api/v1/agents?status=0&agent-number=${n}`, { method: 'PATCH', auth: ADMIN });
      for (const x of xnids) await post('/api/v1/hangup', { xnid: x });
      return s.platform.callFlow!.openCalls === 0;
    }, 'every call ended', 20_000);
    await s.platform.callFlow!.idle();
    const all = await s.platform.ctx.events.readAll({ after: 0, maxCount: 1_000_000 });
    const { problems, calls } = checkInvariants(all);
    expect(problems).toEqual([]);
    expect(calls).toBeGreaterThan(5);
  }, 60_000);
});
