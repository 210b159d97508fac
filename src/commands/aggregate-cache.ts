/**
 * Aggregates at constant cost. Per event store, a bounded LRU of folded states (state + revision +
 * position) per (stream, evolve function). Loading an aggregate reads only the events after the
 * cached revision (one indexed read that returns nothing when nobody else wrote), so it is never
 * older than the store, whoever wrote (another process on the same DATA_DIR included), and a conflict
 * refreshes it by the same read. A cold start begins at the latest snapshot (deciders that name a
 * `snapshot` key), so no load folds more than SNAPSHOT_EVERY events plus what arrived since.
 *
 * Store-agnostic: it uses only `readStream(streamId, { fromRevision })` of the EventStore port, so it
 * serves every adapter; snapshots live behind their own small port.
 */
import type { EventStore, RecordedEvent } from '../gateways/event-store/port.js';
import type { Snapshot, SnapshotStore } from '../gateways/snapshot-store/port.js';

export type { Snapshot, SnapshotStore };

export interface Folder<S, E> {
  initialState: () => S;
  evolve: (state: S, event: E) => S;
  /**
   * Stable name and version of the state's shape (`agent@1`): enables snapshots. Change it when
   * `evolve` or the state changes, so older snapshots are ignored. State must survive JSON.
   */
  snapshot?: string;
}

export interface Loaded<S> {
  state: S;
  /** Revision of the stream's last event folded in (-1: no stream). */
  revision: number;
  /** Global position of that event (0: no stream). */
  position: number;
}

export class MemorySnapshotStore implements SnapshotStore {
  readonly map = new Map<string, Snapshot>();
  get(key: string) {
    const s = this.map.get(key);
    return s && { ...s, state: structuredClone(s.state) };
  }
  put(key: string, snapshot: Snapshot) {
    this.map.set(key, { ...snapshot, state: structuredClone(snapshot.state) });
  }
}

interface Entry extends Loaded<unknown> {
  /** Revision of the last snapshot written or read for this stream (-1: none). */
  snapshotAt: number;
  /** See `Checked.checkedAt` (-1: never checked by this process). */
  checkedAt: number;
}

/** A cached state, with when the store was last seen holding it. */
export interface Checked<S> extends Loaded<S> {
  /**
   * An instant (`instant()`) at or after which the store held the stream at this revision: a read sent
   * after it that found nothing newer, or an append asked after it that the store took at that revision.
   * A command that began before this instant may answer on this state without asking the store again.
   */
  checkedAt: number;
}

/** The process's instants: a counter, so that what happened before and after in this thread always compares. */
let instants = 0;
export const instant = (): number => ++instants;

/** Write a snapshot once this many events were folded past the previous one. */
export const SNAPSHOT_EVERY = 500;
/** Streams kept per store: ~a few hundred bytes each. */
export const CACHE_MAX = 20_000;
/** Events read per page when folding (bounds memory on a cold fold). */
const PAGE = 1000;

const folderIds = new WeakMap<object, number>();
let nextFolderId = 1;
const folderId = (evolve: object) => {
  let id = folderIds.get(evolve);
  if (id === undefined) folderIds.set(evolve, (id = nextFolderId++));
  return id;
};

/**
 * One command's turn on a stream (see AggregateCache.enter). `committed` resolves with the state after
 * its append once that is committed, not yet durable (undefined when it appended nothing, failed, or
 * the store cannot tell); `settled` once the command ended, answered or failed.
 */
export interface Turn<S = unknown> {
  committed: Promise<Loaded<S> | undefined>;
  settled: Promise<void>;
}

export interface Lane<S> {
  /** The turn of the command before this one on the stream, in this process (none: go ahead). */
  previous: Turn<S> | undefined;
  /** When the command came (`instant()`): a state checked after this needs no read of its own (see `Checked`). */
  readonly since: number;
  /** Hands the next command the state after this one's append (committed, not yet durable). */
  commit(state: Loaded<S> | undefined): void;
  /** Ends the turn (always call it, in a finally). */
  settle(): void;
}

export class AggregateCache {
  private readonly entries = new Map<string, Entry>();
  /** The newest turn per (stream, fold) of the commands of this process: see `enter`. */
  private readonly lanes = new Map<string, Turn>();
  hits = 0;
  misses = 0;
  eventsFolded = 0;

  constructor(
    private readonly store: EventStore,
    public snapshots: SnapshotStore | null = null,
    private readonly max = CACHE_MAX,
  ) {}

  private key(streamId: string, folder: Folder<unknown, unknown>) {
    return `${folderId(folder.evolve)}|${streamId}`;
  }

  /** The stream folded up to the store's latest event. */
  async load<S, E>(streamId: string, folder: Folder<S, E>, toEvent: (e: RecordedEvent) => E): Promise<Loaded<S>> {
    const f = folder as Folder<unknown, unknown>;
    const key = this.key(streamId, f);
    let entry = this.entries.get(key);
    if (entry) {
      this.hits++;
    } else {
      this.misses++;
      entry = { state: f.initialState(), revision: -1, position: 0, snapshotAt: -1, checkedAt: -1 };
      if (f.snapshot && this.snapshots) {
        const snap = await this.snapshots.get(`${f.snapshot}|${streamId}`);
        if (snap) entry = { state: snap.state, revision: snap.revision, position: snap.position, snapshotAt: snap.revision, checkedAt: -1 };
      }
    }
    // Copy so that a concurrent load of the same stream never sees a half-folded entry.
    let { state, revision, position } = entry;
    let checkedAt: number;
    for (;;) {
      checkedAt = instant(); // the page is read after this: what it finds was stored then or later
      const page = await this.store.readStream(streamId, { fromRevision: revision + 1, maxCount: PAGE });
      for (const e of page) {
        state = f.evolve(state, toEvent(e));
        revision = e.revision;
        position = e.position;
      }
      this.eventsFolded += page.length;
      if (page.length < PAGE) break;
    }
    const current = this.entries.get(key);
    // Another load may have gone further meanwhile: keep the newer one.
    const fresh =
      current && current.revision > revision
        ? current
        : { state, revision, position, snapshotAt: Math.max(entry.snapshotAt, current?.snapshotAt ?? -1), checkedAt: Math.max(checkedAt, current?.revision === revision ? current.checkedAt : -1) };
    this.entries.delete(key); // LRU: the newest goes last
    this.set(key, fresh);
    this.maybeSnapshot(streamId, f, fresh);
    return { state: state as S, revision, position };
  }

  /**
   * The cached state without asking the store whether it moved on (undefined when none is cached).
   * Only for a caller that checks it: an append with its revision conflicts if it is stale.
   */
  peek<S>(streamId: string, folder: Folder<S, any>): Checked<S> | undefined {
    const entry = this.entries.get(this.key(streamId, folder as Folder<unknown, unknown>));
    if (!entry) return undefined;
    this.hits++;
    return { state: entry.state as S, revision: entry.revision, position: entry.position, checkedAt: entry.checkedAt };
  }

  /**
   * Records the state after an append of ours (only when the append stored exactly what we folded);
   * `askedAt`: the instant the append was asked (the store took it at that revision after it).
   */
  remember<S>(streamId: string, folder: Folder<S, any>, loaded: Loaded<S>, askedAt = -1) {
    const f = folder as Folder<unknown, unknown>;
    const key = this.key(streamId, f);
    const current = this.entries.get(key);
    if (current && current.revision >= loaded.revision) return;
    // A literal, not { ...loaded, snapshotAt }: V8 (Node 20) takes ~650 ns for a spread with a field added.
    const entry: Entry = { state: loaded.state, revision: loaded.revision, position: loaded.position, snapshotAt: current?.snapshotAt ?? -1, checkedAt: askedAt };
    if (current) this.entries.delete(key);
    this.set(key, entry);
    this.maybeSnapshot(streamId, f, entry);
  }

  /**
   * Queues a command behind the previous one on the same stream in this process. Commands on one
   * stream that run together would all decide on the same state and all but one conflict, again on
   * every retry until the winner is durable (a busy stream then used up the retries: 503). In a lane,
   * each decides on the state its predecessor committed, so its append lands in a later group, and it
   * is answered after a sync that covers both. That state is handed along the lane only: the cache
   * keeps what is durable.
   */
  enter<S>(streamId: string, folder: Folder<S, any>): Lane<S> {
    const key = this.key(streamId, folder as Folder<unknown, unknown>);
    const previous = this.lanes.get(key) as Turn<S> | undefined;
    const turn = new LaneTurn<S>(this.lanes, key, previous);
    this.lanes.set(key, turn as Turn);
    return turn;
  }

  /** Drops what is known of a stream (an append whose outcome we cannot fold ourselves). */
  forget(streamId: string, folder: Folder<any, any>) {
    this.entries.delete(this.key(streamId, folder as Folder<unknown, unknown>));
  }

  get size() {
    return this.entries.size;
  }

  private set(key: string, entry: Entry) {
    this.entries.set(key, entry);
    if (this.entries.size > this.max) this.entries.delete(this.entries.keys().next().value!);
  }

  private maybeSnapshot(streamId: string, f: Folder<unknown, unknown>, entry: Entry) {
    if (!f.snapshot || !this.snapshots || entry.revision - entry.snapshotAt < SNAPSHOT_EVERY) return;
    entry.snapshotAt = entry.revision;
    try {
      // A snapshot is an optimisation: failing to write one must never fail the command.
      void Promise.resolve(this.snapshots.put(`${f.snapshot}|${streamId}`, { revision: entry.revision, position: entry.position, state: entry.state })).catch(() => {});
    } catch {
      /* ignored: see above */
    }
  }
}

/**
 * A command's turn, as its successor sees it (Turn) and as the command holds it (Lane). Its promises
 * are made only when a successor asks for them: most commands have none, and two promises with their
 * resolvers and closures per command showed in profiles.
 */
class LaneTurn<S> implements Turn<S>, Lane<S> {
  /** What `commit` handed on (null: not yet). */
  private handed: { state: Loaded<S> | undefined } | null = null;
  readonly since = instant();
  private ended = false;
  private committedPromise: Promise<Loaded<S> | undefined> | null = null;
  private settledPromise: Promise<void> | null = null;
  private resolveCommitted: ((state: Loaded<S> | undefined) => void) | null = null;
  private resolveSettled: (() => void) | null = null;

  constructor(
    private readonly lanes: Map<string, Turn>,
    private readonly key: string,
    readonly previous: Turn<S> | undefined,
  ) {}

  get committed(): Promise<Loaded<S> | undefined> {
    this.committedPromise ??= this.handed ? Promise.resolve(this.handed.state) : new Promise((r) => (this.resolveCommitted = r));
    return this.committedPromise;
  }

  get settled(): Promise<void> {
    this.settledPromise ??= this.ended ? Promise.resolve() : new Promise((r) => (this.resolveSettled = r));
    return this.settledPromise;
  }

  commit(state: Loaded<S> | undefined): void {
    if (this.handed) return; // the first word stands
    this.handed = { state };
    this.resolveCommitted?.(state);
  }

  settle(): void {
    this.commit(undefined); // no effect once committed
    this.ended = true;
    this.resolveSettled?.();
    if (this.lanes.get(this.key) === this) this.lanes.delete(this.key);
  }
}

const caches = new WeakMap<EventStore, AggregateCache>();

/** The aggregate cache of an event store (one per store instance, created on first use). */
export function aggregateCache(store: EventStore): AggregateCache {
  let cache = caches.get(store);
  if (!cache) caches.set(store, (cache = new AggregateCache(store)));
  return cache;
}

/**
 * Makes `alias` (a wrapper of `store`: the worker's fenced store) use `store`'s cache, so commands
 * through either decide on the same cached states.
 */
export function shareAggregateCache(alias: EventStore, store: EventStore) {
  caches.set(alias, aggregateCache(store));
}

/** Gives a store's aggregate cache a snapshot store (platform start-up). */
export function useSnapshots(store: EventStore, snapshots: SnapshotStore) {
  aggregateCache(store).snapshots = snapshots;
}
