/** Read models of the dialer: `campaigns` (progress per campaign) and `campaign-contacts` (each contact). */
import type { RecordedEvent } from '../gateways/event-store/port.js';
import { CAMPAIGN_EVENT_TYPES, CONTACT_EVENT_TYPES, addedContacts, addedCount, addedIds, campaignKey, contactKey, type CampaignEvent, type DialerContact } from '../commands/dialer/campaign.js';
import { projection, type Projection } from './projection.js';

export interface CampaignDoc extends Record<string, unknown> {
  svcId: number;
  campaignId: number;
  endTime: number;
  uploads: number;
  /** Contacts added and not dropped. */
  total: number;
  /** Calls placed. */
  dialled: number;
  answered: number;
  /** Attempts not answered. */
  missed: number;
  /** Contacts still to be called (not answered, tries left, not dropped). */
  pending: number;
  /** Rows skipped at upload for an invalid number. */
  skipped: number;
  /** Contacts never dialled because the number is dnd or blocked (absent on documents older than it). */
  dnc?: number;
  dropped: number;
  updatedAt: number;
}

type CampaignIds = Pick<CampaignEvent['data'], 'svcId' | 'campaignId'>;

export interface ContactDoc extends CampaignIds, DialerContact, Record<string, unknown> {
  seq: number;
  attempts: number;
  status: 'pending' | 'dialling' | 'answered' | 'missed' | 'dropped' | 'skipped';
  /** Why a `skipped` contact was not dialled. */
  skipReason?: 'dnd' | 'blocked';
  lastEndedAt: number | null;
}

export const campaignsProjection: Projection<CampaignDoc> = projection({
  name: 'campaigns',
  canHandle: [...CAMPAIGN_EVENT_TYPES, ...CONTACT_EVENT_TYPES],
  keys: (e) => [campaignKey(e.data.svcId, e.data.campaignId)],
  evolve(doc, ev) {
    const d = ev.data;
    const c: CampaignDoc = doc ?? { svcId: d.svcId, campaignId: d.campaignId, endTime: 0, uploads: 0, total: 0, dialled: 0, answered: 0, missed: 0, pending: 0, skipped: 0, dnc: 0, dropped: 0, updatedAt: d.time };
    switch (ev.type) {
      case 'CampaignUploaded':
        return { ...c, endTime: ev.data.endTime, uploads: c.uploads + 1, skipped: c.skipped + ev.data.skipped, updatedAt: d.time };
      case 'CampaignContactsAdded':
        return { ...c, total: c.total + addedCount(ev.data), pending: c.pending + addedCount(ev.data), updatedAt: d.time };
      case 'CampaignPendingDropped':
        return { ...c, total: c.total - ev.data.contactIds.length, pending: c.pending - ev.data.contactIds.length, dropped: c.dropped + ev.data.contactIds.length, updatedAt: d.time };
      case 'ContactDialAttempted':
        return { ...c, dialled: c.dialled + 1, updatedAt: d.time };
      case 'ContactDialOutcome':
        return {
          ...c,
          answered: c.answered + (ev.data.answered ? 1 : 0),
          missed: c.missed + (ev.data.answered ? 0 : 1),
          pending: c.pending - (ev.data.final ? 1 : 0),
          updatedAt: d.time,
        };
      case 'ContactSkipped':
        return { ...c, dnc: (c.dnc ?? 0) + 1, pending: c.pending - 1, updatedAt: d.time };
    }
  },
});

/**
 * Index of a contact in its event. A packed chunk's is its row less the chunk's first (the id ends in
 * `.<row>`); in events stored before chunks, looked up in a map made once per event.
 */
const batchIndex = new WeakMap<object, Map<string, number>>();
function indexIn(e: RecordedEvent, d: CampaignIds & Parameters<typeof addedIds>[0], id: string): number {
  if (!('contacts' in d)) return Number(id.slice(id.lastIndexOf('.') + 1)) - d.first;
  let m = batchIndex.get(e);
  if (!m) {
    m = new Map(addedIds(d).map((contactId, i) => [contactKey(d.svcId, d.campaignId, contactId), i]));
    batchIndex.set(e, m);
  }
  return m.get(id)!;
}

export const campaignContactsProjection: Projection<ContactDoc> = projection({
  name: 'campaign-contacts',
  // Read by the dialer and by uploads only, which wait for it: no request waits for an upload's contacts.
  lagging: true,
  canHandle: ['CampaignContactsAdded', 'CampaignPendingDropped', ...CONTACT_EVENT_TYPES],
  keys(e) {
    const d = e.data;
    switch (e.type) {
      case 'CampaignContactsAdded':
        return addedIds(e.data).map((contactId) => contactKey(d.svcId, d.campaignId, contactId));
      case 'CampaignPendingDropped':
        return e.data.contactIds.map((id) => contactKey(d.svcId, d.campaignId, id));
      default:
        return [contactKey(d.svcId, d.campaignId, e.data.contactId)];
    }
  },
  evolve(doc, ev, id) {
    switch (ev.type) {
      case 'CampaignContactsAdded': {
        const index = indexIn(ev, ev.data, id);
        const c = addedContacts(ev.data)[index]!;
        return {
          svcId: ev.data.svcId,
          campaignId: ev.data.campaignId,
          contactId: c.contactId,
          // Upload order: the dialer calls contacts first come, first served.
          seq: ev.position * 100_000 + index,
          number: c.number,
          fields: c.fields,
          attempts: 0,
          status: 'pending',
          lastEndedAt: null,
        };
      }
      case 'CampaignPendingDropped':
        return doc ? { ...doc, status: 'dropped' } : doc;
      case 'ContactDialAttempted':
        return doc ? { ...doc, attempts: ev.data.attempt, status: 'dialling' } : doc;
      case 'ContactDialOutcome':
        return doc ? { ...doc, status: ev.data.answered ? 'answered' : ev.data.final ? 'missed' : 'pending', lastEndedAt: ev.data.time } : doc;
      case 'ContactSkipped':
        return doc ? { ...doc, status: 'skipped', skipReason: ev.data.reason } : doc;
    }
  },
});
