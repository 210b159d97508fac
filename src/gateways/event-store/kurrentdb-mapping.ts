/**
 * What the KurrentDB event store (kurrentdb.ts) maps between the port and the client: event ids,
 * positions, metadata, expected revisions, merged multi-stream appends, connection strings and the
 * server version check. Pure functions (but the version check), tested without a server.
 */
import { v5 as uuidv5, v7 as uuidv7, validate as isUuid } from 'uuid';
import type { KurrentDBClient, Position } from '@kurrent/kurrentdb-client';
import { type ExpectedRevision, type StreamAppend, WrongExpectedRevisionError } from './port.js';

/** The first KurrentDB release with multi-stream append (`appendToStreams`). */
export const MIN_SERVER_VERSION = '25.1.0';

/**
 * Ids that are not UUIDs (KurrentDB requires one) are mapped to a stable UUID, so a retry maps alike.
 * An event without one gets a time-ordered UUID (v7), as on the embedded log: what is derived from
 * event ids (delivery ids) then sorts in time too.
 */
const ID_NAMESPACE = '0f7a3a1e-8a51-4d5c-9b3e-6f1d2c4b8e90';
export const eventUuid = (id: string | undefined): string => (id === undefined ? uuidv7() : isUuid(id) ? id.toLowerCase() : uuidv5(id, ID_NAMESPACE));

/** Turns every accepted connection-string form into the one the client and its Rust bridge parse alike. */
export function normalizeConnectionString(url: string): string {
  const m = /^(esdb|kurrentdb|kurrent|kdb)(\+discover)?:\/\//i.exec(url);
  if (!m) throw new Error('EVENTSTORE_URL must start with kurrentdb://, esdb://, kdb:// (or their +discover forms)');
  return `kurrentdb${m[2] ? '+discover' : ''}://${url.slice(m[0].length)}`;
}

export function toPosition(commit: bigint | undefined): number | undefined {
  if (commit === undefined || commit < 0n || commit === 0xffffffffffffffffn) return undefined;
  if (commit > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new Error(`KurrentDB commit position ${commit} is beyond what this platform stores exactly (2^53 - 1)`);
  }
  return Number(commit);
}

export const fromPosition = (after: number): Position => ({ commit: BigInt(after), prepare: BigInt(after) });

/**
 * The metadata key holding the event's time (epoch ms, the appending process's clock, as the embedded
 * log keeps it). The server's own `created` is not enough: the client library's reads (readStream,
 * readAll: its native bridge) give it rounded to the second, its subscriptions to the millisecond, so
 * one event would have two times. Left out of the metadata callers see. Not `$`-prefixed: the server
 * may give such property names meanings of its own.
 */
export const TIME_KEY = 'telephony.time';

/** Metadata as string properties: each value JSON-encoded; with `time`, the event's time under TIME_KEY. */
export function encodeMetadata(metadata: Record<string, unknown> | undefined, time?: number): Record<string, string> | undefined {
  const out: Record<string, string> = {};
  if (metadata) for (const [k, v] of Object.entries(metadata)) if (v !== undefined) out[k] = JSON.stringify(v);
  if (time !== undefined) out[TIME_KEY] = String(time);
  return Object.keys(out).length ? out : undefined;
}

/** Metadata as the client decoded it, when it is a JSON object (not bytes, not an array). */
const metadataObject = (raw: unknown): Record<string, unknown> | null =>
  raw && typeof raw === 'object' && !Array.isArray(raw) && !(raw instanceof Uint8Array) ? (raw as Record<string, unknown>) : null;

/** An event's time: TIME_KEY of its metadata, else (events appended without it) the server's `created`. */
export function eventTime(raw: unknown, created: unknown): number {
  const t = metadataObject(raw)?.[TIME_KEY];
  const ms = typeof t === 'string' ? Number(t) : typeof t === 'number' ? t : NaN;
  if (Number.isSafeInteger(ms) && ms > 0) return ms;
  return created instanceof Date ? created.getTime() : Number(created);
}

/** Reverses `encodeMetadata`; the time and keys the server adds (`$...`) are dropped, foreign values kept as they are. */
export function decodeMetadata(raw: unknown): Record<string, unknown> {
  const fields = metadataObject(raw);
  if (!fields) return {};
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(fields)) {
    if (k.startsWith('$') || k === TIME_KEY) continue;
    if (typeof v !== 'string') {
      out[k] = v;
      continue;
    }
    try {
      out[k] = JSON.parse(v);
    } catch {
      out[k] = v;
    }
  }
  return out;
}

export const isSystem = (streamId: string, type: string) => streamId.startsWith('$') || type.startsWith('$');

/** Failures after which the append may or may not have been stored. */
export function isAmbiguous(err: unknown): boolean {
  const type = (err as { type?: string } | null)?.type;
  return type === 'unavailable' || type === 'deadline-exceeded' || type === 'cancelled' || type === 'unknown' || type === 'timeout';
}

/**
 * Names of one multi-stream append that differ only in case: the server compares a session's
 * streams ignoring case (StreamsService.AppendSession, KurrentDB 25.1) and refuses the second as
 * "already in this append session", with a status the client reads as a timeout (then retried to
 * a 503); the platform's stream names are lower case (domain/streams.ts), so this is a bug to name.
 */
export class StreamCaseError extends Error {
  constructor(a: string, b: string) {
    super(`streams "${a}" and "${b}" differ only in case: KurrentDB takes them for one stream in a multi-stream append`);
    this.name = 'StreamCaseError';
  }
}

/** Merges entries naming the same stream into one, or refuses what cannot be one append. */
export function mergeAppends(appends: StreamAppend[]): StreamAppend[] {
  const byStream = new Map<string, StreamAppend>();
  const byFolded = new Map<string, string>();
  for (const a of appends) {
    const folded = a.streamId.toLowerCase();
    const seen = byFolded.get(folded);
    if (seen !== undefined && seen !== a.streamId) throw new StreamCaseError(seen, a.streamId);
    byFolded.set(folded, a.streamId);
    const prev = byStream.get(a.streamId);
    if (!prev) {
      byStream.set(a.streamId, { ...a, events: [...a.events] });
      continue;
    }
    // The second entry's expectation must follow from the first's outcome.
    const e1 = prev.expectedRevision;
    const after = typeof e1 === 'number' ? e1 + prev.events.length : e1 === 'no_stream' ? prev.events.length - 1 : null;
    const e2 = a.expectedRevision;
    if (e2 === 'any' || (e2 === 'stream_exists' && (after === null ? e1 !== 'any' || prev.events.length > 0 : after >= 0))) {
      prev.events.push(...a.events);
    } else if (after !== null && typeof e2 !== 'string' ? e2 === after : e2 === 'no_stream' && after === -1) {
      prev.events.push(...a.events);
    } else if (after !== null) {
      throw new WrongExpectedRevisionError(a.streamId, e2, after);
    } else {
      throw new Error(`stream ${a.streamId} is named twice in one append with expectations that cannot be merged`);
    }
  }
  return [...byStream.values()];
}

export function streamState(expected: ExpectedRevision): 'any' | 'no_stream' | 'stream_exists' | bigint {
  return typeof expected === 'number' ? BigInt(expected) : expected;
}

export async function assertServerVersion(client: KurrentDBClient): Promise<void> {
  // The client knows the server's version from ServerFeatures; it keeps it behind a protected getter.
  const features = await (client as unknown as { capabilities: Promise<{ serverVersion: string }> }).capabilities;
  if (!atLeast(features.serverVersion, MIN_SERVER_VERSION)) {
    throw new Error(
      `EVENTSTORE_URL: KurrentDB ${MIN_SERVER_VERSION.replace(/\.0$/, '')} or newer is required (multi-stream append); the server reports version ${features.serverVersion}`,
    );
  }
}

/** `version` (e.g. "25.1.0.1234-rc") is at least `min` (major.minor.patch); "unknown" is not. */
export function atLeast(version: string, min: string): boolean {
  const m = /^(\d+)\.(\d+)(?:\.(\d+))?/.exec(version.trim());
  if (!m) return false;
  const have = [Number(m[1]), Number(m[2]), Number(m[3] ?? 0)];
  const need = min.split('.').map(Number);
  for (let i = 0; i < 3; i++) if (have[i] !== need[i]) return have[i]! > (need[i] ?? 0);
  return true;
}
