/**
 * The simulated SMS provider: "delivers" by keeping each message in an outbox the operator reads at
 * GET /ops/v1/simulator/sms. The outbox is the provider's, not the platform's event log; it lives in
 * the read store's auxiliary data so every process (and a restart) sees the same outbox.
 */
import type { ReadStore } from '../read-store/port.js';
import type { OutgoingSms, SmsGateway } from './port.js';

export const OUTBOX = 'sim-sms';

export interface OutboxEntry extends Record<string, unknown> {
  id: string;
  svcId: number;
  number: string;
  message: string;
  /** Epoch ms when the provider took the message. */
  time: number;
}

/** The simulated provider's outbox, oldest first; only the messages to `number` when given. */
export const readOutbox = (reads: ReadStore, number?: string): Promise<OutboxEntry[]> =>
  reads.find<OutboxEntry>(OUTBOX, number === undefined ? {} : { number }, { orderBy: { field: 'time' } });

export class SimulatedSmsGateway implements SmsGateway {
  constructor(
    private readonly reads: ReadStore,
    private readonly now: () => number,
  ) {}

  async send(sms: OutgoingSms): Promise<void> {
    const entry: OutboxEntry = { id: sms.id, svcId: sms.svcId, number: sms.number, message: sms.message, time: this.now() };
    // Same id twice: the first delivery stands.
    await this.reads.insertIfAbsent(OUTBOX, sms.id, entry);
  }

  async outbox(number?: string): Promise<OutboxEntry[]> {
    return readOutbox(this.reads, number);
  }
}
