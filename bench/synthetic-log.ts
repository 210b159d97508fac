/**
 * Writes a realistic event log straight into an embedded event store, fast: provisioning, then
 * inbound and outbound calls with every event the platform appends for them (call legs, queue,
 * the agent's reservation and release on its own stream, the end with its webhook record), agents
 * going on breaks and back, and SMS. Stored times follow the calls' own times, so the log reads as
 * if it had been written over the period it spans. Used by the replay bench and volume tests.
 */
import { randomUUID } from 'node:crypto';
import { SqliteEventStore } from '../src/gateways/event-store/sqlite.js';
import { LogWrites, type Head } from '../src/gateways/event-store/sqlite-layout.js';
import type { NewEvent } from '../src/gateways/event-store/port.js';
import { openSqlite } from '../src/gateways/sqlite.js';
import { applyProvisioning } from '../src/commands/provisioning/provision.js';
import type { CallStartedData } from '../src/commands/call/call.js';
import type { CallEndedData } from '../src/domain/call-events.js';
import { dayOf, webhookTime } from '../src/domain/time.js';

export interface SyntheticOptions {
  /** Path of the events.db to write (created). */
  file: string;
  /** Stop once at least this many events are written (calls are whole). */
  events?: number;
  /** Or write exactly this many calls. */
  calls?: number;
  /** Only CallStarted and CallEnded per call (export volume tests). */
  minimal?: boolean;
  svcId?: number;
  agents?: number;
  timezone?: string;
  /** First call's start (epoch ms) and the span the calls are spread over. */
  start: number;
  spanMs: number;
  onProgress?(events: number): void;
}

export interface SyntheticResult {
  events: number;
  calls: number;
  svcId: number;
}

const pad = (n: number, w: number) => String(n).padStart(w, '0');

export async function writeSyntheticLog(o: SyntheticOptions): Promise<SyntheticResult> {
  const svcId = o.svcId ?? 101;
  const agentCount = o.agents ?? 50;
  const timezone = o.timezone ?? 'Asia/Kolkata';
  let now = o.start;
  const store = new SqliteEventStore(o.file, () => now);
  try {
    const agents = Array.from({ length: agentCount }, (_, i) => ({
      id: 1001 + i,
      name: `Agent ${i + 1}`,
      number: `91000${pad(1001 + i, 5)}`,
      sip: `agent${i + 1}`,
      countryCode: '91',
      skills: [{ skillId: 1, level: 5 }],
    }));
    await applyProvisioning(store, {
      services: [
        {
          id: svcId,
          name: 'Bench Support',
          customer: 'bench',
          timezone,
          dids: ['8000000101'],
          skills: [{ id: 1, name: 'English' }],
          queues: [{ id: 1, name: 'Support' }],
          webhook: null,
          socketKey: 'k-bench',
          blocked: [],
          customers: [],
          agents,
        },
      ],
      users: [{ id: 1, username: 'bench-admin', password: 'bench-admin-pw', name: 'Admin', email: 'a@b.test', number: '9100000001', admin: true, services: [svcId] }],
    });
    let events = await store.headPosition();
    await store.close();
    // The bulk of the log goes straight into the store's table, in big transactions: a bench tool
    // writing a million events should not take longer than the replay it prepares.
    const db = openSqlite(o.file, 'NORMAL');
    // The store's own inserts and stream heads, in whichever layout the file has (sqlite-layout.ts).
    const log = new LogWrites(db);
    const heads = new Map<string, Head>();
    const appendAll = db.transaction((appends: { streamId: string; events: NewEvent[]; time: number }[]) => {
      for (const a of appends) {
        let { revision, position } = heads.get(a.streamId) ?? log.head(a.streamId);
        let first = 0;
        for (const e of a.events) {
          position = log.insert(randomUUID(), false, a.streamId, ++revision, e.type, JSON.stringify(e.data), '{}', a.time, position);
          if (first === 0) first = position;
        }
        log.setHead(a.streamId, revision, position, first);
        heads.set(a.streamId, { revision, position });
      }
    });
    const ids = (agentId: number, time: number) => ({ svcId, agentId, time });
    // Everyone logs in at the start.
    appendAll(agents.map((a) => ({ streamId: `agent-${svcId}-${a.id}`, time: now, events: [{ type: 'AgentLoggedIn', data: ids(a.id, now) }] })));
    events += agents.length;

    const target = o.events ?? Infinity;
    const maxCalls = o.calls ?? Infinity;
    const perCall = o.calls !== undefined ? o.spanMs / o.calls : o.spanMs / Math.max(1, Math.ceil(target / 15));
    let calls = 0;
    let batch: { streamId: string; events: NewEvent[]; time: number }[] = [];
    const flush = async () => {
      if (batch.length === 0) return;
      appendAll(batch);
      batch = [];
      o.onProgress?.(events);
    };
    const push = (streamId: string, list: NewEvent[]) => {
      batch.push({ streamId, time: now, events: list });
      events += list.length;
    };
    while (events < target && calls < maxCalls) {
      const t = Math.floor(o.start + calls * perCall);
      const agent = agents[calls % agentCount]!;
      const inbound = calls % 3 !== 2;
      const answered = calls % 7 !== 6;
      const xnid = randomUUID();
      const customer = `98${pad(calls % 100_000_000, 8)}`;
      const wait = inbound ? (calls % 40) * 1000 : 0;
      const talk = 30_000 + (calls % 300) * 1000;
      const up = t + 2000 + wait;
      const end = answered ? up + talk : t + 2000 + wait + 5000;
      const legs = (type: string, time: number, agentId: number | null, legId: string) => ({
        type,
        data: { xnid, svcId, agentId, number: customer, time, data: inbound ? '1' : '', direction: inbound ? 'Inbound' : 'Outbound', legId },
      });
      const started: CallStartedData = {
        xnid,
        svcId,
        direction: inbound ? 'Inbound' : 'Outbound',
        origin: inbound ? 'inbound' : 'api',
        customerNumber: customer,
        did: '8000000101',
        data: inbound ? '1' : '',
        recording: true,
        timezone,
        day: dayOf(t, timezone),
        agentFirst: false,
        namedAgentId: null,
        skillId: null,
        msgToAgent: '',
        countryCode: '',
        userId: null,
        blocked: false,
        wrapUp: false,
        source: null,
        time: t,
      };
      const ended: CallEndedData = {
        xnid,
        svcId,
        direction: started.direction,
        disposition: answered ? 'answered' : 'missed',
        startTime: t,
        endTime: end,
        durationS: Math.floor((end - t) / 1000),
        agentId: agent.id,
        agentNumber: agent.number,
        customerNumber: customer,
        recordingUrl: null,
        webhook: {
          callid: xnid,
          'call-duration': String(Math.floor((end - t) / 1000)),
          'agent-number': answered ? agent.number : '',
          'customer-number': customer,
          'end-time': webhookTime(end, timezone),
          'start-time': webhookTime(t, timezone),
          'call-type': inbound ? 'incoming' : 'outgoing',
          'virtual-number': '8000000101',
          disposition: answered ? 'answered' : 'missed',
        },
      };
      now = t;
      if (o.minimal) {
        push(`call-${xnid}`, [{ type: 'CallStarted', data: started }, { type: 'CallEnded', data: ended }]);
      } else {
        const c = 'c';
        const a = 'a';
        push(`call-${xnid}`, [
          { type: 'CallStarted', data: started },
          legs('CustomerRing', t, null, c),
          legs('CustomerUp', t + 2000, null, c),
          { type: 'CallQueued', data: { xnid, svcId, time: t + 2000, queueId: 1, number: customer } },
        ]);
        push(`agent-${svcId}-${agent.id}`, [{ type: 'AgentReserved', data: { ...ids(agent.id, up), xnid } }]);
        const answeredLegs: NewEvent[] = answered
          ? [
              legs('AgentUp', up, agent.id, a),
              { type: 'CallDequeued', data: { xnid, svcId, time: up } },
              { type: 'CallBridged', data: { xnid, svcId, time: up, agentId: agent.id, agentName: agent.name, agentNumber: agent.number } },
              legs('CustomerHangup', end, agent.id, c),
              legs('AgentHangup', end, agent.id, a),
            ]
          : [legs('AgentHangup', end - 5000, agent.id, a), legs('CustomerHangup', end, null, c), { type: 'CallDequeued', data: { xnid, svcId, time: end } }];
        push(`call-${xnid}`, [legs('AgentRing', up, agent.id, a), ...answeredLegs]);
        push(`agent-${svcId}-${agent.id}`, [
          ...(answered ? [{ type: 'AgentAnswered', data: { ...ids(agent.id, up), xnid } }] : []),
          { type: 'AgentReleased', data: { ...ids(agent.id, end), xnid, answered, freeAt: end } },
        ]);
        push(`call-${xnid}`, [{ type: 'CallEnded', data: ended }]);
        // Every 10th call the agent takes a tea break and comes back.
        if (calls % 10 === 0) {
          push(`agent-${svcId}-${agent.id}`, [
            { type: 'AgentBreakStarted', data: { ...ids(agent.id, end + 1000), code: 2 } },
            { type: 'AgentBreakEnded', data: ids(agent.id, end + 301_000) },
          ]);
        }
        // Every 5th call an SMS follows it.
        if (calls % 5 === 0) {
          const id = randomUUID();
          push(`sms-${id}`, [
            { type: 'SmsRequested', data: { id, svcId, number: customer, message: 'Thanks for calling', countryCode: '91', callTxnId: xnid, tries: 1, otp: false, userId: 1, time: end } },
            { type: 'SmsSent', data: { id, svcId, time: end + 500, attempt: 1 } },
          ]);
        }
      }
      calls++;
      if (batch.length >= 5000) await flush();
    }
    await flush();
    const head = db.prepare<[], { p: number }>('SELECT MAX(position) p FROM events').get()!.p;
    db.close();
    return { events: head, calls, svcId };
  } finally {
    await store.close();
  }
}
