/**
 * Dialer campaigns: uploads and their contacts (`campaign-<svcId>-<campaignId>`), and each contact's
 * dial attempts (`dialer-contact-<svcId>-<campaignId>-<contactId>`). A contact's own stream makes
 * "never two calls to one contact at once" and "at most DIALER_MAX_TRIES attempts" an append with an
 * expected revision.
 */
import type { Decider, DomainEvent } from '../decider.js';
import type { DoNotCallReason } from '../../domain/do-not-call.js';
import { allTypes } from '../../domain/events.js';
import { unpackContacts } from '../../domain/packed-contacts.js';

export interface DialerContact {
  contactId: string;
  number: string;
  /** The row's other columns, by header. */
  fields: Record<string, string>;
}

type CampaignIds = { svcId: number; campaignId: number; time: number };

/**
 * The contacts of one `CampaignContactsAdded`: a packed chunk (domain/packed-contacts.ts) whose
 * contacts are rows `first` to `first + count - 1` of the upload (ids `<uploadNo>.<row>`), or, in
 * events stored before chunks, the contacts themselves.
 */
export type ContactsAdded = { first: number; count: number; packed: string } | { contacts: DialerContact[] };
type AddedData = { uploadNo: number } & ContactsAdded;

/** How many contacts an event adds. */
export const addedCount = (d: AddedData): number => ('contacts' in d ? d.contacts.length : d.count);

/** The ids of the contacts an event adds, in upload order, without unpacking them. */
export function addedIds(d: AddedData): string[] {
  if ('contacts' in d) return d.contacts.map((c) => c.contactId);
  return Array.from({ length: d.count }, (_, i) => `${d.uploadNo}.${d.first + i}`);
}

/**
 * The chunks unpacked last, by event data (shared by every reader of the log in this process: the
 * dialer and the contacts' projection unpack each chunk about the same time). A few only: the log's
 * in-memory tail keeps thousands of events, and their contacts unpacked would be 200 bytes each.
 */
const unpacked = new Map<object, readonly DialerContact[]>();
const UNPACKED_KEPT = 16;

/** The contacts an event adds, in upload order. */
export function addedContacts(d: AddedData): readonly DialerContact[] {
  if ('contacts' in d) return d.contacts;
  let contacts = unpacked.get(d);
  if (!contacts) {
    const ids = addedIds(d);
    contacts = unpackContacts(d).map((c, i) => ({ contactId: ids[i]!, number: c.number, fields: c.fields }));
    if (unpacked.size >= UNPACKED_KEPT) unpacked.delete(unpacked.keys().next().value!);
    unpacked.set(d, contacts);
  }
  return contacts;
}

export type CampaignEvent =
  | DomainEvent<'CampaignUploaded', CampaignIds & { uploadNo: number; endTime: number; fileName: string; contacts: number; skipped: number; maxTries: number; invalidatedOld: boolean }>
  | DomainEvent<'CampaignContactsAdded', CampaignIds & { uploadNo: number } & ContactsAdded>
  | DomainEvent<'CampaignPendingDropped', CampaignIds & { contactIds: string[] }>;

export const CAMPAIGN_EVENT_TYPES = allTypes<CampaignEvent['type']>({ CampaignUploaded: true, CampaignContactsAdded: true, CampaignPendingDropped: true });

type ContactIds = CampaignIds & { contactId: string };

export type ContactEvent =
  | DomainEvent<'ContactDialAttempted', ContactIds & { attempt: number; xnid: string; number: string }>
  | DomainEvent<'ContactDialOutcome', ContactIds & { attempt: number; xnid: string; answered: boolean; final: boolean }>
  /** Never dialled (again): the number is dnd or blocked (CONTRACT section 15). */
  | DomainEvent<'ContactSkipped', ContactIds & { number: string; reason: DoNotCallReason }>;

export const CONTACT_EVENT_TYPES = allTypes<ContactEvent['type']>({ ContactDialAttempted: true, ContactDialOutcome: true, ContactSkipped: true });

export interface ContactState {
  attempts: number;
  inFlight: string | null;
  done: boolean;
}

export type ContactCommand =
  | { type: 'Attempt'; ids: ContactIds; attempt: number; xnid: string; number: string; maxTries: number }
  | { type: 'Outcome'; ids: ContactIds; xnid: string; answered: boolean; maxTries: number }
  | { type: 'Skip'; ids: ContactIds; number: string; reason: DoNotCallReason };

export const contactDecider: Decider<ContactCommand, ContactState, ContactEvent> = {
  initialState: () => ({ attempts: 0, inFlight: null, done: false }),
  evolve(s, e) {
    if (e.type === 'ContactDialAttempted') return { ...s, attempts: e.data.attempt, inFlight: e.data.xnid };
    if (e.type === 'ContactSkipped') return { ...s, done: true };
    return { ...s, inFlight: null, done: e.data.final };
  },
  decide(c, s) {
    if (c.type === 'Attempt') {
      if (s.done || s.inFlight || c.attempt !== s.attempts + 1 || c.attempt > c.maxTries) return [];
      return [{ type: 'ContactDialAttempted', data: { ...c.ids, attempt: c.attempt, xnid: c.xnid, number: c.number } }];
    }
    if (c.type === 'Skip') {
      // A call in flight ends on its own; a contact that is done stays as it ended.
      if (s.done || s.inFlight) return [];
      return [{ type: 'ContactSkipped', data: { ...c.ids, number: c.number, reason: c.reason } }];
    }
    if (s.inFlight !== c.xnid) return [];
    const final = c.answered || s.attempts >= c.maxTries;
    return [{ type: 'ContactDialOutcome', data: { ...c.ids, attempt: s.attempts, xnid: c.xnid, answered: c.answered, final } }];
  },
};

export const contactStream = (svcId: number, campaignId: number, contactId: string) => `dialer-contact-${svcId}-${campaignId}-${contactId}`;
export const campaignKey = (svcId: number, campaignId: number) => `${svcId}-${campaignId}`;
export const contactKey = (svcId: number, campaignId: number, contactId: string) => `${svcId}-${campaignId}-${contactId}`;
