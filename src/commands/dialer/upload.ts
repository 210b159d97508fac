/**
 * Stores an upload as events: CampaignUploaded, the contacts in batches, and (invalidate-old-data)
 * the drop of contacts not yet dialled, all in one transaction: a refused or interrupted upload
 * stores nothing.
 */
import { handleStreams, type DomainEvent } from '../decider.js';
import type { Folder } from '../aggregate-cache.js';
import type { Context } from '../../context.js';
import { streams } from '../../domain/streams.js';
import type { ContactDoc } from '../../projections/campaigns.js';
import type { DialerContact } from './campaign.js';

const BATCH = 1000;

export interface Upload {
  svcId: number;
  campaignId: number;
  endTime: number;
  fileName: string;
  /** Contacts without ids; ids are given here (upload number and row). */
  contacts: Omit<DialerContact, 'contactId'>[];
  skipped: number;
  invalidateOld: boolean;
}

/** Counts uploads, so each gets the next number (contact ids are `<upload>.<row>`). */
const uploadCounter: Folder<number, DomainEvent> = {
  initialState: () => 0,
  evolve: (n, e) => (e.type === 'CampaignUploaded' ? n + 1 : n),
};

export async function uploadCampaign(ctx: Context, u: Upload): Promise<number> {
  const streamId = streams.campaign(u.svcId, u.campaignId);
  const r = await handleStreams(ctx.events, [{ streamId, decider: uploadCounter }], async ([campaign]) => {
    const uploadNo = (campaign!.state as number) + 1;
    const time = ctx.now();
    const ids = { svcId: u.svcId, campaignId: u.campaignId, time };
    const events: DomainEvent[] = [];
    if (u.invalidateOld) {
      await ctx.sync.caughtUp();
      const notDialled = await ctx.reads.find<ContactDoc>('campaign-contacts', { svcId: u.svcId, campaignId: u.campaignId, status: 'pending', attempts: 0 });
      if (notDialled.length) events.push({ type: 'CampaignPendingDropped', data: { ...ids, contactIds: notDialled.map((c) => c.contactId) } });
    }
    events.push({
      type: 'CampaignUploaded',
      data: { ...ids, uploadNo, endTime: u.endTime, fileName: u.fileName, contacts: u.contacts.length, skipped: u.skipped, maxTries: ctx.config.dialerMaxTries, invalidatedOld: u.invalidateOld },
    });
    for (let i = 0; i < u.contacts.length; i += BATCH) {
      const contacts = u.contacts.slice(i, i + BATCH).map((c, j) => ({ contactId: `${uploadNo}.${i + j + 1}`, number: c.number, fields: c.fields }));
      events.push({ type: 'CampaignContactsAdded', data: { ...ids, uploadNo, contacts } });
    }
    return { appends: [{ streamId, events }], value: null };
  });
  return r.position;
}
