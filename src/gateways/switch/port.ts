/**
 * Switch port: what the platform asks of a telephone switch, and the signals it gets back.
 * The simulator implements it in-process; a real switch (SIP/FreeSWITCH/...) plugs in behind the
 * same interface without touching commands or projections.
 *
 * Legs are identified by ids the platform chooses; every signal names the leg and its call.
 * Signals of one leg arrive in order: ringing, then answered or ended; ended is the last.
 */

export type LegRole = 'customer' | 'agent' | 'monitor';

export interface DialRequest {
  callId: string;
  legId: string;
  /** Number to ring. */
  number: string;
  role: LegRole;
  /** The caller id the leg shows (the service's first DID); the switch's own when absent. */
  from?: string;
}

export type EndReason = 'hangup' | 'busy' | 'no_answer' | 'failed';

export type SwitchSignal =
  | { kind: 'ringing'; callId: string; legId: string; time: number }
  | { kind: 'answered'; callId: string; legId: string; time: number }
  | { kind: 'ended'; callId: string; legId: string; time: number; reason: EndReason };

export type MonitorMode = 'spy' | 'whisper' | 'barge';

/** A caller reaching a DID through the switch itself (a real switch; the simulator has none). */
export interface InboundOffer {
  did: string;
  from: string;
  /** IVR digits the caller keyed upstream, "" when none. */
  data: string;
  /** Names the call this caller becomes, before the call is started (its acceptInbound may come at once). */
  bind(callId: string, blocked: boolean): void;
}

/** What the platform made of an inbound offer: a call started and bound (acceptInbound follows), or no such DID. */
export type InboundDecision = 'accepted' | 'unknown';

export interface Switch {
  /** false: the switch mixes no media (no whisper, spy, barge, added legs, recordings), as a SIP B2BUA without a media server. */
  readonly mixesMedia?: boolean;
  /** Where inbound callers go; a switch without inbound callers of its own ignores it. */
  onInbound?(handler: (offer: InboundOffer) => Promise<InboundDecision>): void;
  /** Starts ringing a number on a new leg. */
  dial(request: DialRequest): void;
  /** An inbound caller's leg, already connected to the platform (answered by the IVR). */
  acceptInbound(callId: string, legId: string, from: string): void;
  /** Hangs up a leg; its `ended` signal follows (reason `hangup`). Unknown or ended legs are ignored. */
  hangup(legId: string): void;
  /** Connects the audio of two answered legs; recording starts when asked. */
  bridge(callId: string, legA: string, legB: string, options: { record: boolean }): void;
  /** Lets a monitor leg listen (spy), also talk to the agent (whisper), or talk to both parties (barge). */
  monitor(callId: string, legId: string, mode: MonitorMode): void;
  /** The simulated remote party hangs up (operator simulator; a real switch reports it itself). */
  remoteHangup(legId: string): void;
  onSignal(listener: (signal: SwitchSignal) => void): void;
  /** Legs the switch still holds (ringing or answered). */
  activeLegs(): string[];
  /** Whether the switch still holds this leg: what activeLegs() says of one leg, without listing them all. */
  hasLeg?(legId: string): boolean;
  /** Run once when this process takes the switch, before any call: ends what a previous process left connected. */
  recover?(): Promise<void>;
  close(): Promise<void>;
}
