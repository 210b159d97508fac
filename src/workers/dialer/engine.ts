/**
 * The progressive dialer: while a campaign's end-time is ahead, it places one customer-first call
 * per free agent of the service (calls placed but not yet given to an agent count against the free
 * agents), each contact at most DIALER_MAX_TRIES times, DIALER_RETRY_S after a missed attempt, in
 * upload order. Each attempt is appended with the call in one transaction on the contact's stream,
 * so no contact is ever dialled twice at once. The agent's wrap-up after a dialer call keeps it out of
 * rotation (the call carries `wrapUp`).
 *
 * Compliance (CONTRACT section 15): outside the service's calling hours nothing is placed, and the
 * pacing tick after the opening places again; a contact whose number is dnd or blocked is never dialled
 * but ends `skipped` (looked up when its turn comes, so a later provisioning counts).
 *
 * Its working set (contacts still to call, calls in flight) is memory rebuilt from the read models at
 * start; outcomes of calls that ended while no dialer ran are recorded then.
 */
import type { Context } from '../../context.js';
import type { RecordedEvent, Subscription } from '../../gateways/event-store/port.js';
import { handleCommand, handleStreams, loadAggregate } from '../../commands/decider.js';
import { addedContacts, campaignKey, contactDecider, contactStream, type ContactState } from '../../commands/dialer/campaign.js';
import { eventTypes } from '../../commands/platform-events.js';
import { streams } from '../../domain/streams.js';
import type { CampaignDoc, ContactDoc } from '../../projections/campaigns.js';
import type { CallDoc } from '../../projections/calls.js';
import { outboundCallStarted } from '../../commands/call/place.js';
import { freeAgents } from '../../queries/agents.js';
import { callableFrom, doNotCall } from '../../queries/compliance.js';
import type { DoNotCallReason } from '../../domain/do-not-call.js';
import type { ServiceDoc } from '../../projections/services.js';

/** What the dialer reacts to: uploads, calls it placed, agents becoming free. */
const DIALER_EVENTS = eventTypes(
  'CampaignUploaded',
  'CampaignContactsAdded',
  'CampaignPendingDropped',
  'CallBridged',
  'CallEnded',
  'AgentLoggedIn',
  'AgentBreakEnded',
  'AgentReleased',
);

interface Pending {
  contactId: string;
  number: string;
  attempts: number;
  seq: number;
  nextAt: number;
}

interface Campaign {
  svcId: number;
  campaignId: number;
  endTime: number;
  pending: Map<string, Pending>;
}

interface InFlight {
  campaign: string;
  contactId: string;
  svcId: number;
  bridged: boolean;
}

export class DialerEngine {
  private readonly campaigns = new Map<string, Campaign>();
  private readonly inFlight = new Map<string, InFlight>();
  private subscription: Subscription | null = null;
  private loop: Promise<void> | null = null;
  private ticker: NodeJS.Timeout | null = null;
  private pacing: Promise<void> = Promise.resolve();
  private paceQueued = false;
  private stopped = false;

  constructor(private readonly ctx: Context) {}

  /** Calls placed and not yet ended (tests, bench). */
  get callsInFlight(): number {
    return this.inFlight.size;
  }

  /** Contacts waiting for their turn, all campaigns (tests, bench). */
  get contactsPending(): number {
    let n = 0;
    for (const c of this.campaigns.values()) n += c.pending.size;
    return n;
  }

  /** Resolves when a pacing pass that began after this call has finished (tests: what it did not place, it would not place). */
  paced(): Promise<void> {
    this.pace();
    return this.pacing;
  }

  async start(): Promise<void> {
    const head = await this.ctx.events.headPosition();
    await this.ctx.sync.waitForAll(head);
    for (const c of await this.ctx.reads.find<CampaignDoc>('campaigns')) {
      const campaign = this.campaign(c.svcId, c.campaignId, c.endTime);
      for (const contact of await this.ctx.reads.find<ContactDoc>('campaign-contacts', { svcId: c.svcId, campaignId: c.campaignId })) {
        if (contact.status === 'pending') campaign.pending.set(contact.contactId, this.pendingOf(contact));
        else if (contact.status === 'dialling') await this.recoverInFlight(campaign, contact);
      }
    }
    this.subscription = this.ctx.events.subscribeToAll({ after: head });
    this.loop = this.consume(this.subscription);
    // Retry times and wrap-up ends are clock-driven: look again regularly.
    this.ticker = setInterval(() => this.pace(), 500);
    this.ticker.unref();
    this.pace();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.ticker) clearInterval(this.ticker);
    this.subscription?.close();
    await this.loop;
    await this.pacing;
  }

  private campaign(svcId: number, campaignId: number, endTime: number): Campaign {
    const key = campaignKey(svcId, campaignId);
    let c = this.campaigns.get(key);
    if (!c) {
      c = { svcId, campaignId, endTime, pending: new Map() };
      this.campaigns.set(key, c);
    }
    c.endTime = endTime || c.endTime;
    return c;
  }

  private pendingOf(c: ContactDoc): Pending {
    return {
      contactId: c.contactId,
      number: c.number,
      attempts: c.attempts,
      seq: c.seq,
      nextAt: c.lastEndedAt === null ? 0 : c.lastEndedAt + this.ctx.config.dialerRetryS * 1000,
    };
  }

  private async recoverInFlight(campaign: Campaign, contact: ContactDoc) {
    const stream = contactStream(campaign.svcId, campaign.campaignId, contact.contactId);
    const { state } = await loadAggregate(this.ctx.events, stream, contactDecider);
    if (!state.inFlight) return;
    const call = await this.ctx.reads.get<CallDoc>('calls', state.inFlight);
    if (call?.ended) {
      await this.recordOutcome(campaign, contact.contactId, state.inFlight, call.disposition === 'answered', call.endTime ?? this.ctx.now(), contact);
    } else {
      this.inFlight.set(state.inFlight, { campaign: campaignKey(campaign.svcId, campaign.campaignId), contactId: contact.contactId, svcId: campaign.svcId, bridged: call?.agentId != null });
    }
  }

  private async consume(sub: Subscription) {
    try {
      pages: for await (const page of sub.batches()) {
        for (const e of page) {
          if (this.stopped) break pages;
          // Most events are not the dialer's: passed over without an async step each.
          if (DIALER_EVENTS.has(e)) await this.onEvent(e);
          // An upload's chunk is its contacts unpacked (CONTACTS_PER_CHUNK): a turn of the event loop between them.
          if (e.type === 'CampaignContactsAdded') await new Promise((r) => setImmediate(r));
        }
      }
    } catch (err) {
      if (!this.stopped) this.ctx.logger.error({ err }, 'dialer stopped: event subscription failed');
    }
  }

  private async onEvent(e: RecordedEvent) {
    if (!DIALER_EVENTS.has(e)) return;
    switch (e.type) {
      case 'CampaignUploaded': {
        const d = e.data;
        this.campaign(d.svcId, d.campaignId, d.endTime);
        return this.pace();
      }
      case 'CampaignContactsAdded': {
        const d = e.data;
        const c = this.campaign(d.svcId, d.campaignId, 0);
        addedContacts(d).forEach((contact, i) => c.pending.set(contact.contactId, { contactId: contact.contactId, number: contact.number, attempts: 0, seq: e.position * 100_000 + i, nextAt: 0 }));
        return this.pace();
      }
      case 'CampaignPendingDropped': {
        const d = e.data;
        const c = this.campaigns.get(campaignKey(d.svcId, d.campaignId));
        for (const id of d.contactIds) c?.pending.delete(id);
        return;
      }
      case 'CallBridged': {
        const f = this.inFlight.get(e.data.xnid);
        if (f) f.bridged = true;
        return this.pace();
      }
      case 'CallEnded': {
        const d = e.data;
        const f = this.inFlight.get(d.xnid);
        if (!f) return;
        await this.recordOutcome(this.campaigns.get(f.campaign)!, f.contactId, d.xnid, d.disposition === 'answered', d.endTime);
        return this.pace();
      }
      case 'AgentLoggedIn':
      case 'AgentBreakEnded':
      case 'AgentReleased':
        return this.pace();
    }
  }

  private async recordOutcome(campaign: Campaign, contactId: string, xnid: string, answered: boolean, endedAt: number, doc?: ContactDoc) {
    this.inFlight.delete(xnid);
    const ids = { svcId: campaign.svcId, campaignId: campaign.campaignId, contactId, time: this.ctx.now() };
    const r = await handleCommand(this.ctx.events, contactStream(campaign.svcId, campaign.campaignId, contactId), contactDecider, {
      type: 'Outcome',
      ids,
      xnid,
      answered,
      maxTries: this.ctx.config.dialerMaxTries,
    });
    if (r.state.done) return;
    const known = campaign.pending.get(contactId);
    campaign.pending.set(contactId, {
      contactId,
      number: known?.number ?? doc?.number ?? (await this.contactNumber(campaign, contactId)),
      attempts: r.state.attempts,
      seq: known?.seq ?? doc?.seq ?? 0,
      nextAt: endedAt + this.ctx.config.dialerRetryS * 1000,
    });
  }

  private async contactNumber(campaign: Campaign, contactId: string): Promise<string> {
    await this.ctx.sync.allCaughtUp();
    const doc = await this.ctx.reads.get<ContactDoc>('campaign-contacts', `${campaign.svcId}-${campaign.campaignId}-${contactId}`);
    return doc?.number ?? '';
  }

  /** Runs one pacing pass after the current one (passes never overlap). */
  private pace() {
    if (this.paceQueued || this.stopped) return;
    // No campaign holds a contact to place (most agent events, on most platforms): no pass to run.
    if (!this.anyPending()) return;
    this.paceQueued = true;
    this.pacing = this.pacing.then(async () => {
      this.paceQueued = false;
      try {
        await this.paceOnce();
      } catch (err) {
        this.ctx.logger.error({ err }, 'dialer pacing failed');
      }
    });
  }

  private anyPending(): boolean {
    for (const c of this.campaigns.values()) if (c.pending.size > 0) return true;
    return false;
  }

  private async paceOnce() {
    const now = this.ctx.now();
    const byService = new Map<number, Campaign[]>();
    for (const c of this.campaigns.values()) {
      if (c.endTime <= now || c.pending.size === 0) continue;
      byService.set(c.svcId, [...(byService.get(c.svcId) ?? []), c]);
    }
    for (const [svcId, campaigns] of byService) {
      const service = await this.ctx.reads.get<ServiceDoc>('services', String(svcId));
      // Outside calling hours: wait; the ticker's first pass after the opening places again.
      if (callableFrom(service, now) > now) continue;
      const free = (await freeAgents(this.ctx, svcId)).length;
      const waiting = [...this.inFlight.values()].filter((f) => f.svcId === svcId && !f.bridged).length;
      let slots = free - waiting;
      while (slots > 0 && !this.stopped) {
        const next = this.nextContact(campaigns, now);
        if (!next) break;
        const reason = await doNotCall(this.ctx, svcId, next.contact.number, service);
        if (reason) await this.skip(next.campaign, next.contact, reason);
        else if (await this.place(next.campaign, next.contact)) slots--;
      }
    }
  }

  /** Ends a contact as skipped, without a call. */
  private async skip(campaign: Campaign, contact: Pending, reason: DoNotCallReason) {
    campaign.pending.delete(contact.contactId);
    const ids = { svcId: campaign.svcId, campaignId: campaign.campaignId, contactId: contact.contactId, time: this.ctx.now() };
    try {
      await handleCommand(this.ctx.events, contactStream(campaign.svcId, campaign.campaignId, contact.contactId), contactDecider, { type: 'Skip', ids, number: contact.number, reason });
    } catch (err) {
      campaign.pending.set(contact.contactId, contact);
      throw err;
    }
  }

  private nextContact(campaigns: Campaign[], now: number): { campaign: Campaign; contact: Pending } | null {
    let best: { campaign: Campaign; contact: Pending } | null = null;
    for (const campaign of campaigns) {
      for (const contact of campaign.pending.values()) {
        if (contact.nextAt > now) continue;
        if (!best || contact.seq < best.contact.seq) best = { campaign, contact };
        break; // pending keeps upload order: the first due contact of a campaign is its best
      }
    }
    return best;
  }

  /** Places one attempt with its call (one transaction); false when the contact needs none now. */
  private async place(campaign: Campaign, contact: Pending): Promise<boolean> {
    campaign.pending.delete(contact.contactId);
    const stream = contactStream(campaign.svcId, campaign.campaignId, contact.contactId);
    let r;
    try {
      r = await handleStreams(this.ctx.events, [{ streamId: stream, decider: contactDecider }], async ([loaded]) => {
        const state = loaded!.state as ContactState;
        const attempt = state.attempts + 1;
        const started = await outboundCallStarted(this.ctx, {
          svcId: campaign.svcId,
          number: contact.number,
          origin: 'dialer',
          namedAgentId: null,
          agentFirst: false,
          recording: true,
          wrapUp: true,
          userId: null,
          source: { kind: 'dialer', campaignId: campaign.campaignId, contactId: contact.contactId, attempt },
        });
        const ids = { svcId: campaign.svcId, campaignId: campaign.campaignId, contactId: contact.contactId, time: this.ctx.now() };
        const events = contactDecider.decide({ type: 'Attempt', ids, attempt, xnid: started.xnid, number: contact.number, maxTries: this.ctx.config.dialerMaxTries }, state);
        if (events.length === 0) return { appends: [], value: null };
        return {
          appends: [
            { streamId: stream, events },
            { streamId: streams.call(started.xnid), events: [{ type: 'CallStarted', data: started }], expectedRevision: 'no_stream' as const },
          ],
          value: started.xnid,
        };
      });
    } catch (err) {
      // Not placed (a store error, or conflicts that persisted): the contact stays due.
      campaign.pending.set(contact.contactId, contact);
      throw err;
    }
    if (r.value === null) return false;
    this.inFlight.set(r.value, { campaign: campaignKey(campaign.svcId, campaign.campaignId), contactId: contact.contactId, svcId: campaign.svcId, bridged: false });
    return true;
  }
}
