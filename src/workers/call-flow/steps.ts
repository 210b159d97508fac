/** The steps of a reaction (run by commands.ts's runSteps), apart so that the actor may hold steps without importing the commands. */
import type { DomainEvent } from '../../commands/decider.js';
import type { CallCommand, CallState } from '../../commands/call/call.js';
import type { AgentCommand, AgentState } from '../../commands/agent/agent.js';

/** One command of a reaction: on a call, or on an agent. */
export type Step =
  | { kind: 'call'; xnid: string; command: CallCommand; if?: (state: CallState, before: StepOutcome[]) => boolean }
  | { kind: 'agent'; svcId: number; agentId: number; command: AgentCommand; if?: (state: AgentState, before: StepOutcome[]) => boolean };

/** What a step led to: the state of its stream after it, or null when it was refused or skipped (`if`, on its stream's state and the outcomes of the steps before it). */
export type StepOutcome = { state: CallState | AgentState; events: DomainEvent[] } | null;
