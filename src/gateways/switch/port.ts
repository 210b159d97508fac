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
}

export type EndReason = 'hangup' | 'busy' | 'no_answer' | 'failed';

export type SwitchSignal =
  | { kind: 'ringing'; callId: string; legId: string; time: number }
  | { kind: 'answered'; callId: string; legId: string; time: number }
  | { kind: 'ended'; callId: string; legId: string; time: number; reason: EndReason };

export type MonitorMode = 'spy' | 'whisper' | 'barge';

export interface Switch {
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
  close(): Promise<void>;
}
