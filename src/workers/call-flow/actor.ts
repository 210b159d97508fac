/**
 * What the call-flow worker holds for each call it runs (an actor): the legs it dialled and what
 * they are for, the agents it reserved or that refused the call. The call aggregate holds what
 * happened; this is what the worker needs besides to decide its next step. Pure helpers only.
 */
import { activeLegs, callDecider, type CallStartedData, type CallState } from '../../commands/call/call.js';
import type { AgentState } from '../../commands/agent/agent.js';

export interface AgentLeg {
  agentId: number;
  number: string;
  name: string;
  purpose: 'primary' | 'transfer' | 'add';
  transfer?: { fromLeg: string | null; mode: 'BLIND' | 'ATTENDED' };
  talked: boolean;
}

export interface Actor {
  xnid: string;
  started: CallStartedData;
  state: CallState;
  seq: number;
  customerLeg: string | null;
  agentLegs: Map<string, AgentLeg>;
  monitorLegs: Map<string, 'spy' | 'whisper'>;
  /** Agents reserved for this call and not yet released. */
  reserved: Map<number, AgentState>;
  /** Agents that did not answer this call: not offered it again until they log in or end a break. */
  tried: Set<number>;
  offering: string | null;
  ending: boolean;
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
  };
}

/** A new leg id of this call: `<xnid>:<n>`. */
export const nextLegId = (a: Actor): string => `${a.xnid}:${++a.seq}`;

/** Every leg the call may still hold: the aggregate's live legs, the agents dialled, the monitors. */
export const allLegs = (a: Actor): Set<string> => new Set([...activeLegs(a.state).map(([id]) => id), ...a.agentLegs.keys(), ...a.monitorLegs.keys()]);

/** The customer and agent legs of the call among `live`: the call ends once there is none. */
export const partyLegs = (a: Actor, live: ReadonlySet<string>): string[] =>
  [...activeLegs(a.state).map(([id]) => id), ...a.agentLegs.keys(), ...(a.customerLeg ? [a.customerLeg] : [])].filter((id) => live.has(id));
