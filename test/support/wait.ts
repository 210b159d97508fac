/** Polling with a deadline: tests wait on observable state, never on luck. */
import type { TestServer } from './server.js';
import { until } from './until.js';

/** Like `until`, but null also means "not yet". */
export async function eventually<T>(probe: () => Promise<T | undefined | null | false>, what: string, timeoutMs = 10_000): Promise<T> {
  return (await until(async () => {
    const v = await probe();
    return v === null ? undefined : v;
  }, what, timeoutMs)) as T;
}

/** Types of the events of a call, in order. */
export async function callEventTypes(s: TestServer, xnid: string): Promise<string[]> {
  return (await s.platform.ctx.events.readStream(`call-${xnid}`)).map((e) => e.type);
}

export async function callEvents(s: TestServer, xnid: string) {
  return s.platform.ctx.events.readStream(`call-${xnid}`);
}

/** Waits until the call has ended and returns its events. */
export async function ended(s: TestServer, xnid: string, timeoutMs = 10_000) {
  return eventually(async () => {
    const events = await callEvents(s, xnid);
    return events.some((e) => e.type === 'CallEnded') ? events : null;
  }, `call ${xnid} to end`, timeoutMs);
}

/** Waits until the call has an event of the given type. */
export async function reached(s: TestServer, xnid: string, type: string, count = 1, timeoutMs = 10_000) {
  return eventually(async () => {
    const events = await callEvents(s, xnid);
    return events.filter((e) => e.type === type).length >= count ? events : null;
  }, `call ${xnid} to reach ${type}${count > 1 ? ` x${count}` : ''}`, timeoutMs);
}

export const legTypes = (events: { type: string }[]) =>
  events.map((e) => e.type).filter((t) => /^(Customer|Agent)(Ring|Up|Hangup)$/.test(t));
