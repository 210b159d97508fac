/**
 * What the call-flow worker holds for each call it runs (an actor): the legs it dialled and what
 * they are for, the agents it reserved or that refused the call. The call aggregate holds what
 * happened; this is what the worker needs besides to decide its next step. Pure helpers only.
 */
import { activeLegs, callDecider, type CallCommand, type CallStartedData, type CallState, type MonitorMode } from '../../commands/call/call.js';
import type { Step } from './steps.js';
import type { AgentState } from '../../commands/agent/agent.js';
import type { QueueDef } from '../../domain/events.js';
import type { Switch } from '../../gateways/switch/port.js';

export interface AgentLeg {
  agentId: number;
  number: string;
  name: string;
  purpose: 'primary' | 'transfer' | 'add';
  transfer?: { fromLeg: string | null; mode: 'BLIND' | 'ATTENDED' };
  talked: boolean;
}

/** Where a call waits: its queue (null: none or not inbound) and the caller's customer priority (CONTRACT section 17); router.ts finds it. */
export interface CallRoute {
  queue: QueueDef | null;
  customerPriority: number;
}

export interface Actor {
  xnid: string;
  started: CallStartedData;
  state: CallState;
  seq: number;
  customerLeg: string | null;
  agentLegs: Map<string, AgentLeg>;
  monitorLegs: Map<string, MonitorMode>;
  /** Agents reserved for this call and not yet released. */
  reserved: Map<number, AgentState>;
  /** Agents that did not answer this call: not offered it again until they log in or end a break. */
  tried: Set<number>;
  offering: string | null;
  ending: boolean;
  /** Commands nothing waits on (a ring), appended with the call's next step. */
  carry: Step[];
  /** The queue and customer priority routing serves the caller by (CONTRACT section 17). */
  route: CallRoute;
}

export function newActor(started: CallStartedData): Actor {
  return {
    xnid: started.xnid,
    started,
    state: { ...callDecider.initialState(), started },
    seq: 0,
    customerLeg: null,
    agentLegs: new Map(),
    monitorLegs: new Map(),
    reserved: new Map(),
    tried: new Set(),
    offering: null,
    ending: false,
    carry: [],
    route: { queue: null, customerPriority: 0 },
  };
}

/** A new leg id of this call: `<xnid>:<n>`. */
export const nextLegId = (a: Actor): string => `${a.xnid}:${++a.seq}`;

/** Every leg the call may still hold: the aggregate's live legs, the agents dialled, the monitors. */
export const allLegs = (a: Actor): Set<string> => new Set([...activeLegs(a.state).map(([id]) => id), ...a.agentLegs.keys(), ...a.monitorLegs.keys()]);

/** The legs the switch still holds (a Set, or the switch asked leg by leg). */
export interface LiveLegs {
  has(legId: string): boolean;
}

/** The legs the switch holds, asked leg by leg where it can (a set of all of them per call step cost O(calls up) each). */
export const liveLegs = (sw: Switch): LiveLegs => (sw.hasLeg ? { has: (id) => sw.hasLeg!(id) } : new Set(sw.activeLegs()));

/** The customer and agent legs of the call among `live`: the call ends once there is none. */
export const partyLegs = (a: Actor, live: LiveLegs): string[] =>
  [...activeLegs(a.state).map(([id]) => id), ...a.agentLegs.keys(), ...(a.customerLeg ? [a.customerLeg] : [])].filter((id) => live.has(id));

/** No customer, agent or monitor leg of the call is left among `live`. */
export const nothingLeft = (a: Actor, live: LiveLegs): boolean => partyLegs(a, live).length === 0 && ![...a.monitorLegs.keys()].some((id) => live.has(id));

/** The end of a call: the agents it still holds released, then the call ended (one append). */
export function endSteps(a: Actor, now: number, recordingUrl: string | null): Step[] {
  const { svcId, wrapUp } = a.started;
  const releases = [...a.reserved.keys()].map((agentId): Step => ({ kind: 'agent', svcId, agentId, command: { type: 'Release', xnid: a.xnid, time: now, wrapUp } }));
  a.reserved.clear();
  return [...releases, { kind: 'call', xnid: a.xnid, command: { type: 'End', time: now, recordingUrl } }];
}

/** The bridge with this agent's leg (it also takes the call out of the queue); the leg is no longer an offer. */
export function bridgeCommand(a: Actor, legId: string, leg: AgentLeg, now: number): CallCommand {
  if (a.offering === legId) a.offering = null;
  if (leg.purpose === 'transfer') leg.purpose = 'primary';
  return { type: 'Bridge', agentId: leg.agentId, agentName: leg.name, agentNumber: leg.number, time: now };
}

/** What follows an agent leaving a call that is not ending (the leg's end is in `a.state`). */
export function afterAgentLeft(a: Actor, leg: AgentLeg): { ending: boolean; hangup: string | null; maybeEnd: boolean; offer: boolean } {
  const customer = a.customerLeg ? a.state.legs[a.customerLeg] : undefined;
  if (!customer || customer.phase === 'down') {
    // Agent first and the agent is gone before the customer was reached.
    return { ending: true, hangup: a.customerLeg && customer?.phase !== 'down' ? a.customerLeg : null, maybeEnd: true, offer: false };
  }
  const none = { ending: false, hangup: null, maybeEnd: false, offer: false };
  if (a.agentLegs.size > 0) return none; // a transfer or another agent carries on
  // The agent hung up on the customer, or the call was for this agent only and it did not answer: the call is over.
  if (leg.talked || (leg.purpose === 'primary' && leg.agentId === a.started.namedAgentId)) return { ...none, ending: true, hangup: a.customerLeg };
  a.tried.add(leg.agentId);
  return { ...none, offer: customer.phase === 'up' };
}

/** The ring of one of the call's legs (the customer's or an agent's), as a step. */
export function ringStep(a: Actor, legId: string, time: number): Step | null {
  const agent = a.agentLegs.get(legId);
  if (legId === a.customerLeg) return { kind: 'call', xnid: a.xnid, command: { type: 'Ring', legId, role: 'customer', agentId: null, number: a.started.customerNumber, time } };
  return agent ? { kind: 'call', xnid: a.xnid, command: { type: 'Ring', legId, role: 'agent', agentId: agent.agentId, number: agent.number, time } } : null;
}
