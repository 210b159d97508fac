/** A dialer contact's decider (attempts, outcomes, dnd skips) and the campaign progress it feeds. */
import { describe, expect, it } from 'vitest';
import { contactDecider, type CampaignEvent, type ContactCommand, type ContactEvent } from '../../../src/commands/dialer/campaign.js';
import { campaignContactsProjection, campaignsProjection, type CampaignDoc, type ContactDoc } from '../../../src/projections/campaigns.js';
import type { RecordedEvent } from '../../../src/gateways/event-store/port.js';
import { deciderSpec } from '../../support/decider-spec.js';
import { packContacts } from '../../../src/domain/packed-contacts.js';

const { given } = deciderSpec(contactDecider);
const ids = (time: number) => ({ svcId: 101, campaignId: 7, contactId: '1.1', time });
const attempt = (n: number, xnid: string, time = n * 1_000): ContactCommand => ({ type: 'Attempt', ids: ids(time), attempt: n, xnid, number: '9876543210', maxTries: 2 });
const attempted = (n: number, xnid: string, time = n * 1_000): ContactEvent => ({ type: 'ContactDialAttempted', data: { ...ids(time), attempt: n, xnid, number: '9876543210' } });
const outcome = (xnid: string, answered: boolean, time: number): ContactCommand => ({ type: 'Outcome', ids: ids(time), xnid, answered, maxTries: 2 });

describe('dialer contact decider', () => {
  it('one call at a time: an attempt in flight holds back the next', () => {
    expect(given().when(attempt(1, 'x1')).then(attempted(1, 'x1'))).toEqual({ attempts: 1, inFlight: 'x1', done: false });
    given(attempted(1, 'x1')).when(attempt(2, 'x2')).thenNothingHappened();
    // Attempts come in order: a stale or skipped number changes nothing.
    given().when(attempt(2, 'x2')).thenNothingHappened();
  });

  it('an answered call ends the contact; a miss leaves a try; the last miss ends it', () => {
    given(attempted(1, 'x1')).when(outcome('x1', true, 1_500)).then({ type: 'ContactDialOutcome', data: { ...ids(1_500), attempt: 1, xnid: 'x1', answered: true, final: true } });
    const missed: ContactEvent = { type: 'ContactDialOutcome', data: { ...ids(1_500), attempt: 1, xnid: 'x1', answered: false, final: false } };
    expect(given(attempted(1, 'x1')).when(outcome('x1', false, 1_500)).then(missed)).toEqual({ attempts: 1, inFlight: null, done: false });
    given(attempted(1, 'x1'), missed, attempted(2, 'x2'))
      .when(outcome('x2', false, 2_500))
      .then({ type: 'ContactDialOutcome', data: { ...ids(2_500), attempt: 2, xnid: 'x2', answered: false, final: true } });
    given(attempted(1, 'x1'), missed).when(attempt(3, 'x3')).thenNothingHappened();
  });

  it("an outcome of a call that is not the contact's call in flight is ignored", () => {
    given(attempted(1, 'x1')).when(outcome('other', true, 1_500)).thenNothingHappened();
    given().when(outcome('x1', true, 1_500)).thenNothingHappened();
  });

  it('a dnd or blocked number ends the contact skipped, never while its call is in flight', () => {
    const skipped: ContactEvent = { type: 'ContactSkipped', data: { ...ids(500), number: '9876543210', reason: 'dnd' } };
    const skip: ContactCommand = { type: 'Skip', ids: ids(500), number: '9876543210', reason: 'dnd' };
    expect(given().when(skip).then(skipped).done).toBe(true);
    given(skipped).when(attempt(1, 'x1')).thenNothingHappened();
    given(skipped).when(skip).thenNothingHappened();
    given(attempted(1, 'x1')).when(skip).thenNothingHappened();
  });
});

describe('campaign progress (campaigns and campaign-contacts read models)', () => {
  let position = 0;
  const recorded = (e: CampaignEvent | ContactEvent): RecordedEvent =>
    ({ ...e, id: `e${++position}`, streamId: 's', revision: 0, position, time: 0, metadata: {} }) as unknown as RecordedEvent;
  const base = { svcId: 101, campaignId: 7, time: 100 };
  const log: RecordedEvent[] = [
    recorded({ type: 'CampaignUploaded', data: { ...base, uploadNo: 1, endTime: 9_000, fileName: 'a.csv', contacts: 3, skipped: 1, maxTries: 2, invalidatedOld: false } }),
    recorded({
      type: 'CampaignContactsAdded',
      data: { ...base, uploadNo: 1, contacts: ['1.1', '1.2', '1.3'].map((contactId, i) => ({ contactId, number: `987650000${i}`, fields: {} })) },
    }),
    recorded({ type: 'ContactDialAttempted', data: { ...base, contactId: '1.1', attempt: 1, xnid: 'x1', number: '9876500000' } }),
    recorded({ type: 'ContactDialOutcome', data: { ...base, contactId: '1.1', attempt: 1, xnid: 'x1', answered: true, final: true } }),
    recorded({ type: 'ContactSkipped', data: { ...base, contactId: '1.2', number: '9876500001', reason: 'blocked' } }),
  ];

  it('counts dialled, answered and pending, and dnc apart from the rows skipped at upload', () => {
    let doc: CampaignDoc | null = null;
    for (const e of log) if (campaignsProjection.keys(e).length) doc = campaignsProjection.evolve(doc, e, '101-7') as CampaignDoc;
    expect(doc).toMatchObject({ total: 3, dialled: 1, answered: 1, missed: 0, pending: 1, skipped: 1, dnc: 1, uploads: 1 });
  });

  it("gives each contact its status and the skip's reason", () => {
    const docs = new Map<string, ContactDoc | null>();
    for (const e of log) for (const key of campaignContactsProjection.keys(e)) docs.set(key, campaignContactsProjection.evolve(docs.get(key) ?? null, e, key) as ContactDoc);
    expect([...docs.values()].map((d) => [d!.contactId, d!.status, d!.skipReason ?? null])).toEqual([
      ['1.1', 'answered', null],
      ['1.2', 'skipped', 'blocked'],
      ['1.3', 'pending', null],
    ]);
  });

  it('reads a packed chunk as the same contacts (ids from the upload and row), beside events stored before chunks', () => {
    const chunk = packContacts([{ number: '9876500010', fields: Object.fromEntries([['name', 'Asha'], ['__proto__', 'kept']]) as Record<string, string> }, { number: '9876500011', fields: {} }]);
    const packed = recorded({ type: 'CampaignContactsAdded', data: { ...base, uploadNo: 2, first: 4, ...chunk } });
    expect(campaignContactsProjection.keys(packed)).toEqual(['101-7-2.4', '101-7-2.5']);
    const doc = campaignContactsProjection.evolve(null, packed, '101-7-2.5') as ContactDoc;
    expect(doc).toMatchObject({ contactId: '2.5', number: '9876500011', fields: {}, status: 'pending', attempts: 0, seq: packed.position * 100_000 + 1 });
    const first = campaignContactsProjection.evolve(null, packed, '101-7-2.4') as ContactDoc;
    expect(Object.getOwnPropertyNames(first.fields)).toEqual(['name', '__proto__']);
    let campaign: CampaignDoc | null = null;
    for (const e of [...log, packed]) if (campaignsProjection.keys(e).length) campaign = campaignsProjection.evolve(campaign, e, '101-7') as CampaignDoc;
    expect(campaign).toMatchObject({ total: 5, pending: 3 });
  });
});
