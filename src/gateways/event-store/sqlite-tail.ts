/**
 * The newest synced events of the SQLite log, kept in memory for the subscriptions of this process
 * (projector, analytics, workers, socket): each reads what was just appended from here instead of
 * querying and decoding the same rows. Contiguous by position: a gap (another process appended in
 * between) starts it anew. A reader at its end is told "nothing newer" without a query, unless
 * another connection has committed since (SQLite's data_version), until a read of the file shows
 * there is nothing of theirs after it.
 */
import type { RecordedEvent } from './port.js';

/**
 * Events kept (up to twice as many before a trim). A burst must fit: 5,000 calls ending at once put
 * their deliveries' subscribers 2,048 events behind, and two in five events were read again from the file.
 */
const KEEP = 8192;

export class RecentEvents {
  private events: RecordedEvent[] = [];
  private lastVersion: number;
  /** Another connection committed since a read of the file last showed nothing after the end. */
  private foreign = false;
  /**
   * data_version was read in this turn of the event loop: after a commit every subscription comes to
   * the end and asks, and one query a turn answers them all (one each was 2% of a command). A commit
   * of another process in between is seen at the reader's next look, as if it had looked a moment sooner.
   */
  private versionRead = false;
  private readonly forgetVersion = () => {
    this.versionRead = false;
  };

  constructor(private readonly dataVersion: () => number) {
    this.lastVersion = dataVersion();
  }

  /** A synced group, in position order; groups come in commit order. */
  keep(group: RecordedEvent[]) {
    const last = this.events[this.events.length - 1];
    if (!last || last.position + 1 !== group[0]!.position) this.events = [];
    for (const e of group) this.events.push(e);
    if (this.events.length > 2 * KEEP) this.events = this.events.slice(-KEEP);
  }

  /** The events after `after`, or null when the file must answer. */
  read(after: number, maxCount: number): RecordedEvent[] | null {
    const first = this.events[0];
    if (!first) return null;
    const end = this.events[this.events.length - 1]!.position;
    if (after < first.position - 1 || after > end) return null;
    if (after < end) {
      const start = after + 1 - first.position;
      return this.events.slice(start, maxCount < 0 ? undefined : start + maxCount);
    }
    if (!this.versionRead) {
      this.versionRead = true;
      setImmediate(this.forgetVersion).unref();
      const version = this.dataVersion();
      if (version !== this.lastVersion) {
        this.lastVersion = version;
        this.foreign = true;
      }
    }
    return this.foreign ? null : [];
  }

  /**
   * This process's writer thread (another connection) committed up to `last`: the change of
   * data_version since is its own, unless the file's head is past it. Read in this order, a commit
   * of another process in between is seen by one of the two.
   */
  ownCommit(last: number, fileHead: () => number) {
    const version = this.dataVersion();
    if (fileHead() > last) this.foreign = true;
    this.lastVersion = version;
  }

  /** A read of the file after `after` that nothing hid (no unsynced group of ours) found nothing. */
  sawNothingAfter(after: number) {
    if (this.events.length > 0 && after === this.events[this.events.length - 1]!.position) this.foreign = false;
  }
}
