/**
 * Dialogs outliving their worker (CONTRACT 16, issue 31). A worker killed with calls up leaves both
 * parties of each call connected to each other (their media never passed through it) with no one to
 * end them, and the phones it was ringing ringing: so each dialled or answered leg's dialog is kept
 * in a store every worker sees, and the next worker to take the switch sends each answered one BYE
 * and each ringing one CANCEL before it takes calls. A 2xx that no leg knows (a party answering the
 * INVITE of a worker that is gone) is ACKed and ended with BYE at once.
 */
import { header, headerValues, parseNameAddr, tagOf, type SipRequest, type SipResponse } from './message.js';
import { destination, hostPart, inDialog, type Dialog } from './dialog.js';
import { newBranch, type Transactions } from './transactions.js';
import type { Peer, SipTransport } from './transport.js';
import type { SipLog } from './switch-core.js';

/** A leg's dialog as kept; `branch`: the leg is still ringing, its INVITE sent with this branch (a CANCEL takes it). */
export interface KeptDialog {
  dialog: Dialog;
  branch?: string;
}

/** Where kept dialogs live (the read store's `sip-dialogs` on the platform), by leg id. */
export interface DialogStore {
  /** Stores or forgets (null) each leg's dialog, in one write. */
  save(entries: ReadonlyArray<readonly [legId: string, kept: KeptDialog | null]>): Promise<void>;
  all(): Promise<Array<[legId: string, kept: KeptDialog]>>;
}

/** CSeq numbers skipped by a BYE sent for a lost dialog: above any re-INVITE the lost worker sent after the dialog was kept. */
const CSEQ_GAP = 1000;

/** Keeps the answered legs' dialogs in the store; writes of one turn of the event loop go together. */
export class DialogKeeper {
  private readonly kept = new Set<string>();
  private pending = new Map<string, KeptDialog | null>();
  private writing: Promise<void> = Promise.resolve();
  private scheduled = false;

  constructor(
    private readonly store: DialogStore,
    private readonly log: SipLog,
  ) {}

  /** The leg is dialled (its INVITE's `branch`) or answered: its dialog is kept. */
  keep(legId: string, dialog: Dialog, branch?: string): void {
    this.kept.add(legId);
    this.queue(legId, { dialog: { ...dialog, routeSet: [...dialog.routeSet], flow: { ...dialog.flow } }, ...(branch ? { branch } : {}) });
  }

  /** The leg has ended: its dialog, if kept, is forgotten. */
  forget(legId: string): void {
    if (this.kept.delete(legId)) this.queue(legId, null);
  }

  /** Waits for every write asked so far. */
  async flush(): Promise<void> {
    this.write();
    await this.writing;
  }

  private queue(legId: string, kept: KeptDialog | null) {
    this.pending.set(legId, kept);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => this.write());
  }

  private write() {
    this.scheduled = false;
    if (this.pending.size === 0) return;
    const entries = [...this.pending];
    this.pending = new Map();
    this.writing = this.writing.then(() =>
      this.store.save(entries).catch((err: unknown) => {
        // Not fatal to any call: a worker killed before the next write leaves these dialogs to their parties.
        this.log.warn({ err: (err as Error).message, legs: entries.length }, 'sip: could not keep the dialogs of answered legs');
      }),
    );
  }
}

/** Sends BYE in each answered dialog a previous worker kept and CANCEL to each ringing one, then forgets them all. */
export async function endLostDialogs(store: DialogStore, transactions: Transactions, contact: string, log: SipLog): Promise<{ answered: number; ringing: number }> {
  const lost = await store.all();
  const none = { onResponse: () => undefined, onTimeout: () => undefined };
  let ringing = 0;
  for (const [, { dialog: kept, branch }] of lost) {
    if (branch) {
      // The INVITE's own Request-URI, Call-ID, From, To and CSeq number, and its branch (RFC 3261 9.1); its 487 is ACKed as a stray.
      ringing++;
      const invite = inDialog({ ...kept, remoteTag: null }, 'CANCEL', contact, '', 1);
      transactions.request(invite, kept.flow, none, branch);
      continue;
    }
    const dialog: Dialog = { ...kept, localSeq: kept.localSeq + CSEQ_GAP };
    transactions.request(inDialog(dialog, 'BYE', contact), destination(dialog), none);
  }
  if (lost.length > 0) {
    await store.save(lost.map(([legId]) => [legId, null] as const));
    log.warn({ legs: lost.length - ringing, ringing }, 'sip: ended the legs a previous worker left (BYE when answered, CANCEL when ringing)');
  }
  return { answered: lost.length - ringing, ringing };
}

/** A 2xx to an INVITE of ours that no leg knows: ACKed (RFC 3261 13.2.2.4), then (`bye`: the first time) ended with BYE. */
export function endStrayAnswer(res: SipResponse, source: Peer, transport: SipTransport, transactions: Transactions, advertise: string, contact: string, bye = true): void {
  const from = header(res, 'from');
  const to = header(res, 'to');
  const callId = header(res, 'call-id');
  const localTag = from ? tagOf(from) : null;
  if (!from || !to || !callId || !localTag) return;
  const strip = (v: string) => v.replace(/;\s*tag=[^;>]*/i, '');
  const seq = Number((header(res, 'cseq') ?? '1').split(/\s+/)[0]) || 1;
  const dialog: Dialog = {
    sipCallId: callId,
    localTag,
    remoteTag: tagOf(to),
    local: strip(from),
    remote: strip(to),
    remoteTarget: parseNameAddr(headerValues(res, 'contact')[0] ?? '')?.uri ?? parseNameAddr(to)?.uri ?? '',
    routeSet: headerValues(res, 'record-route').reverse(),
    localSeq: seq,
    flow: source,
    sticky: true,
  };
  if (!dialog.remoteTarget) return;
  const ack: SipRequest = inDialog(dialog, 'ACK', contact, '', seq);
  ack.headers.unshift(['via', `SIP/2.0/${source.transport.toUpperCase()} ${hostPart(advertise)}:${transport.port};branch=${newBranch()};rport`]);
  transport.send(ack, source);
  if (bye) transactions.request(inDialog(dialog, 'BYE', contact), source, { onResponse: () => undefined, onTimeout: () => undefined });
}
