/** Read model `customers`: CRM records by `<svcId>-<number>`. */
import type { CustomerProvisionedData } from '../domain/events.js';
import type { CallStartedData } from '../commands/call/call.js';
import { projection, type Projection } from './projection.js';

/** The customer as provisioned (or as first met on a call), with its latest calls. */
export interface CustomerDoc extends Omit<CustomerProvisionedData, 'dnd'>, Pick<CallStartedData, 'countryCode'>, Record<string, unknown> {
  id: number;
  dnd: boolean;
  recentTxnIds: string[];
  updateTime: number;
}

/** Latest calls kept on a customer record (CONTRACT section 5). */
export const RECENT_CUSTOMER_CALLS = 20;

export const customerKey = (svcId: number, number: string) => `${svcId}-${number}`;

/** Stable positive integer id from the key (customers have no operator-given id). */
export function customerId(svcId: number, number: string): number {
  let h = 0x811c9dc5;
  for (const ch of customerKey(svcId, number)) h = Math.imul(h ^ ch.charCodeAt(0), 0x01000193);
  return (h >>> 1) || 1;
}

export const customersProjection: Projection<CustomerDoc> = projection({
  name: 'customers',
  canHandle: ['CustomerProvisioned', 'CallStarted'],
  keys: (e) => [e.type === 'CallStarted' ? customerKey(e.data.svcId, e.data.customerNumber) : customerKey(e.data.svcId, e.data.number)],
  evolve(doc, e) {
    if (e.type === 'CallStarted') {
      // A customer is created on first contact.
      const c = e.data;
      const base = doc ?? { id: customerId(c.svcId, c.customerNumber), svcId: c.svcId, number: c.customerNumber, name: '', address: '', note: '', email: null, countryCode: c.countryCode, dnd: false, recentTxnIds: [], updateTime: e.time };
      return { ...base, recentTxnIds: [c.xnid, ...base.recentTxnIds.filter((x) => x !== c.xnid)].slice(0, RECENT_CUSTOMER_CALLS), updateTime: e.time };
    }
    const d = e.data;
    return {
      id: doc?.id ?? customerId(d.svcId, d.number),
      svcId: d.svcId,
      number: d.number,
      name: d.name,
      address: d.address,
      note: d.note,
      email: d.email,
      countryCode: doc?.countryCode ?? '',
      // Provisioning is the only source of dnd: a document that drops it lets the number be called again.
      dnd: d.dnd === true,
      ...(d.priority ? { priority: d.priority } : {}),
      recentTxnIds: doc?.recentTxnIds ?? [],
      updateTime: e.time,
    };
  },
});
