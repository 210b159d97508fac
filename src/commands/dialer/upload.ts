/**
 * Stores an upload as events: CampaignUploaded, the contacts in packed chunks (one event each, see
 * domain/packed-contacts.ts), and (invalidate-old-data) the drop of contacts not yet dialled, all in
 * one transaction: a refused or interrupted upload stores nothing.
 */
import { handleStreams, type DomainEvent } from '../decider.js';
import type { Folder } from '../aggregate-cache.js';
import type { Context } from '../../context.js';
import { streams } from '../../domain/streams.js';
import type { ContactDoc } from '../../projections/campaigns.js';
import type { DialerContact } from './campaign.js';
import { CONTACTS_PER_CHUNK, packAll, type PackedContacts } from '../../domain/packed-contacts.js';

export interface Upload {
  svcId: number;
  campaignId: number;
  endTime: number;
  fileName: string;
  /**
   * Contacts without ids (ids are given here: upload number and row), packed in chunks where they
   * were read, or (callers that hold a few) as they are.
   */
  contacts: PackedContacts[] | Omit<DialerContact, 'contactId'>[];
  skipped: number;
  invalidateOld: boolean;
}

/** Counts uploads, so each gets the next number (contact ids are `<upload>.<row>`). */
const uploadCounter: Folder<number, DomainEvent> = {
  initialState: () => 0,
  evolve: (n, e) => (e.type === 'CampaignUploaded' ? n + 1 : n),
};

const isPacked = (c: Upload['contacts']): c is PackedContacts[] => c.length > 0 && 'packed' in c[0]!;

export async function uploadCampaign(ctx: Context, u: Upload): Promise<number> {
  const chunks = isPacked(u.contacts) ? u.contacts : packAll(u.contacts as Omit<DialerContact, 'contactId'>[]);
  const total = chunks.reduce((n, c) => n + c.count, 0);
  const streamId = streams.campaign(u.svcId, u.campaignId);
  const r = await handleStreams(ctx.events, [{ streamId, decider: uploadCounter }], async ([campaign]) => {
    const uploadNo = (campaign!.state as number) + 1;
    const time = ctx.now();
    const ids = { svcId: u.svcId, campaignId: u.campaignId, time };
    const events: DomainEvent[] = [];
    if (u.invalidateOld) {
      await ctx.sync.allCaughtUp();
      const notDialled = await ctx.reads.find<ContactDoc>('campaign-contacts', { svcId: u.svcId, campaignId: u.campaignId, status: 'pending', attempts: 0 });
      // In chunks too: one event's ids are one commit of the contacts' records.
      for (let i = 0; i < notDialled.length; i += CONTACTS_PER_CHUNK) {
        events.push({ type: 'CampaignPendingDropped', data: { ...ids, contactIds: notDialled.slice(i, i + CONTACTS_PER_CHUNK).map((c) => c.contactId) } });
      }
    }
    events.push({
      type: 'CampaignUploaded',
      data: { ...ids, uploadNo, endTime: u.endTime, fileName: u.fileName, contacts: total, skipped: u.skipped, maxTries: ctx.config.dialerMaxTries, invalidatedOld: u.invalidateOld },
    });
    let first = 1;
    for (const { count, packed } of chunks) {
      if (count === 0) continue;
      events.push({ type: 'CampaignContactsAdded', data: { ...ids, uploadNo, first, count, packed } });
      first += count;
    }
    return { appends: [{ streamId, events }], value: null };
  });
  return r.position;
}
