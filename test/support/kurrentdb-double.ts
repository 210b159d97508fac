/**
 * An in-process KurrentDB test double: a gRPC server built from the service definitions that
 * `@kurrent/kurrentdb-client` ships (`generated/kurrentdb/protocols`), so the real client library
 * (grpc-js for appends and subscriptions, its Rust bridge for reads) talks to it over the real wire
 * protocol. It keeps one in-memory log with sparse commit positions and a few system events, and
 * can inject the faults the adapter must survive: dropped subscriptions and appends that commit
 * but whose answer is lost.
 *
 * It is NOT KurrentDB: it proves the adapter's mapping and recovery logic against the client,
 * never the server's own behaviour (durability, clustering, its real metadata encoding, ...).
 * Where the adapter relies on the server, it is as strict as KurrentDB 25.1's sources say the server
 * is: a read or subscription of $all from a position that is no event's fails; an append whose ids
 * are already stored is a no-op only when they are the stream's events right after the expected
 * revision, or (expected `any`) when they are in the cache of recent ids, which a restart empties
 * (`forgetRecentIds`); a multi-stream append names each stream once, compared ignoring case, and
 * one mixing streams already holding its events with new ones fails INTERNAL.
 */
import { createRequire } from 'node:module';
import { randomUUID } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';

const require = createRequire(import.meta.url);
const base = '@kurrent/kurrentdb-client/generated/kurrentdb/protocols';
type Pb = Record<string, any>; // the generated google-protobuf classes (CommonJS, untyped at runtime)
const streamsPb: Pb = require(`${base}/v1/streams_pb.js`);
const streamsGrpc: Pb = require(`${base}/v1/streams_grpc_pb.js`);
const sharedPb: Pb = require(`${base}/v1/shared_pb.js`);
const statusPb: Pb = require(`${base}/v1/status_pb.js`);
const featuresPb: Pb = require(`${base}/v1/serverfeatures_pb.js`);
const featuresGrpc: Pb = require(`${base}/v1/serverfeatures_grpc_pb.js`);
const v2Pb: Pb = require(`${base}/v2/streams/streams_pb.js`);
const v2Grpc: Pb = require(`${base}/v2/streams/streams_grpc_pb.js`);
const v2ErrorsPb: Pb = require(`${base}/v2/streams/errors_pb.js`);
const anyPb: Pb = require('google-protobuf/google/protobuf/any_pb.js');
const emptyPb: Pb = require('google-protobuf/google/protobuf/empty_pb.js');

export interface StoredEvent {
  streamId: string;
  revision: number;
  id: string;
  type: string;
  contentType: string;
  data: Buffer;
  metadata: Buffer;
  /** .NET ticks (100 ns since 0001-01-01), as the server stores them. */
  created: bigint;
  position: number;
}

export interface DoubleOptions {
  /** What ServerFeatures answers as the server version. */
  version?: string;
  /** Whether the v2 multi-stream append (AppendSession) is offered. */
  multiStreamAppend?: boolean;
}

// The server sends `created` as 100 ns ticks since the Unix epoch.
const toTicks = (ms: number) => BigInt(ms) * 10_000n;

interface Live {
  call: grpc.ServerWritableStream<any, any>;
  after: number;
  filter: (e: StoredEvent) => boolean;
  pending: boolean;
}

export class KurrentDbDouble {
  readonly log: StoredEvent[] = [];
  private readonly server = new grpc.Server();
  private readonly live = new Set<Live>();
  private nextPosition = 0;
  private port = 0;
  version: string;
  /** Counters the tests read to see what the client actually did. */
  readonly calls = { read: 0, subscribe: 0, append: 0, batchAppend: 0, appendSession: 0 };
  private loseNextAnswers = 0;
  private refuseNextAppends = 0;
  /** Ids appended since the (simulated) server started: its idempotency cache for `any` appends. */
  private readonly recentIds = new Set<string>();

  constructor(private readonly options: DoubleOptions = {}) {
    this.version = options.version ?? '25.1.0';
    // A fresh server has system events before anything a user writes.
    this.appendSystemEvent('$epoch-information', '$epoch');
    this.appendSystemEvent('$scavenges', '$scavengeStarted');
    this.server.addService(featuresGrpc.ServerFeaturesService, { getSupportedMethods: this.features });
    this.server.addService(streamsGrpc.StreamsService, {
      read: this.read,
      append: this.append,
      batchAppend: this.batchAppend,
      delete: unimplemented,
      tombstone: unimplemented,
    });
    if (options.multiStreamAppend ?? true) {
      this.server.addService(v2Grpc.StreamsServiceService, { appendSession: this.appendSession, appendRecords: unimplemented });
    }
  }

  async start(): Promise<string> {
    this.port = await new Promise<number>((resolve, reject) =>
      this.server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, port) => (err ? reject(err) : resolve(port))),
    );
    return this.connectionString();
  }

  connectionString(scheme = 'kurrentdb'): string {
    return `${scheme}://127.0.0.1:${this.port}?tls=false`;
  }

  async stop(): Promise<void> {
    for (const l of this.live) l.call.end();
    this.live.clear();
    // The client's Rust bridge keeps its connection open: a graceful shutdown would wait for it.
    this.server.forceShutdown();
  }

  // ---- fault injection -------------------------------------------------------------------------

  /** Ends every live subscription with UNAVAILABLE, as a server restart or leader change does. */
  dropSubscriptions(): number {
    const n = this.live.size;
    for (const l of this.live) fail(l.call, grpc.status.UNAVAILABLE, 'server restarting');
    this.live.clear();
    return n;
  }

  /** The next `n` appends are stored but their answer is lost (the call fails UNAVAILABLE). */
  loseAnswers(n = 1) {
    this.loseNextAnswers = n;
  }

  /** The next `n` appends fail UNAVAILABLE before anything is stored. */
  refuseAppends(n = 1) {
    this.refuseNextAppends = n;
  }

  /** Empties the cache of recent ids, as a server restart does: `any` appends of old ids store them again. */
  forgetRecentIds() {
    this.recentIds.clear();
  }

  /** Appends an event the server itself would write (a `$`-type in a `$`-stream). */
  appendSystemEvent(streamId: string, type: string): StoredEvent {
    return this.store(streamId, [{ id: randomUUID(), type, contentType: 'application/json', data: Buffer.from('{}'), metadata: Buffer.alloc(0) }]).at(-1)!;
  }

  streamRevision(streamId: string): number {
    let rev = -1;
    for (const e of this.log) if (e.streamId === streamId) rev = e.revision;
    return rev;
  }

  // ---- the log ---------------------------------------------------------------------------------

  private store(streamId: string, events: Omit<StoredEvent, 'streamId' | 'revision' | 'created' | 'position'>[]): StoredEvent[] {
    let revision = this.streamRevision(streamId);
    const created = toTicks(Date.now());
    const out: StoredEvent[] = [];
    for (const e of events) {
      // Sparse, byte-offset-like positions, as in the real transaction log.
      this.nextPosition += 100 + e.data.length + e.metadata.length;
      const stored: StoredEvent = { ...e, streamId, revision: ++revision, created, position: this.nextPosition };
      this.log.push(stored);
      this.recentIds.add(stored.id);
      out.push(stored);
    }
    queueMicrotask(() => this.pump());
    return out;
  }

  /**
   * A retried append of events already stored is a no-op, as on the server: with an expected
   * revision, when they are the stream's events right after it; with `any` (or `stream_exists`),
   * only when their ids are in the cache of recent ones.
   */
  private idempotent(streamId: string, expected: number | 'any' | 'no_stream' | 'stream_exists', ids: string[]): StoredEvent[] | null {
    if (ids.length === 0) return null;
    const inStream = this.log.filter((e) => e.streamId === streamId);
    if (typeof expected === 'number' || expected === 'no_stream') {
      const from = (expected === 'no_stream' ? -1 : expected) + 1;
      const at = ids.map((id, i) => inStream.find((e) => e.revision === from + i && e.id === id));
      return at.every(Boolean) ? (at as StoredEvent[]) : null;
    }
    if (!ids.every((id) => this.recentIds.has(id))) return null;
    const known = ids.map((id) => inStream.find((e) => e.id === id));
    return known.every(Boolean) ? (known as StoredEvent[]) : null;
  }

  /** Whether `position` is where an event is (or the start): the only places a read of $all may start. */
  private boundary(position: number): boolean {
    return position === 0 || this.log.some((e) => e.position === position);
  }

  private checkExpected(streamId: string, expected: number | 'any' | 'no_stream' | 'stream_exists'): number | null {
    const actual = this.streamRevision(streamId);
    const ok =
      expected === 'any' ? true : expected === 'no_stream' ? actual === -1 : expected === 'stream_exists' ? actual >= 0 : expected === actual;
    return ok ? null : actual;
  }

  // ---- services --------------------------------------------------------------------------------

  private features = (_call: grpc.ServerUnaryCall<any, any>, cb: grpc.sendUnaryData<any>) => {
    const methods = new featuresPb.SupportedMethods();
    methods.setEventStoreServerVersion(this.version);
    const add = (service: string, method: string) => {
      const m = new featuresPb.SupportedMethod();
      m.setServiceName(service);
      m.setMethodName(method);
      methods.addMethods(m);
    };
    for (const m of ['read', 'append', 'batchappend', 'delete', 'tombstone']) add('event_store.client.streams.streams', m);
    if (this.options.multiStreamAppend ?? true) add('kurrentdb.protocol.v2.streams.streamsservice', 'appendsession');
    cb(null, methods);
  };

  private read = (call: grpc.ServerWritableStream<any, any>) => {
    const options = call.request.getOptions();
    const backwards = options.getReadDirection() === 1;
    const count = options.hasSubscription() ? Infinity : Number(options.getCount());
    const filter = this.readFilter(options);
    const send = (e: StoredEvent) => call.write(this.readResp(e));
    if (options.hasStream()) {
      this.calls.read++;
      const so = options.getStream();
      const streamId = Buffer.from(so.getStreamIdentifier().getStreamName()).toString('utf8');
      const events = this.log.filter((e) => e.streamId === streamId);
      if (events.length === 0) {
        const nf = new streamsPb.ReadResp.StreamNotFound();
        nf.setStreamIdentifier(so.getStreamIdentifier());
        const resp = new streamsPb.ReadResp();
        resp.setStreamNotFound(nf);
        call.write(resp);
        call.end();
        return;
      }
      let from = so.hasRevision() ? Number(so.getRevision()) : so.hasEnd() ? Infinity : backwards ? Infinity : 0;
      const selected = backwards ? events.filter((e) => e.revision <= from).reverse() : events.filter((e) => e.revision >= from);
      for (const e of selected.slice(0, count)) send(e);
      call.end();
      return;
    }
    const all = options.getAll();
    if (options.hasSubscription()) {
      this.calls.subscribe++;
      const confirmation = new streamsPb.ReadResp.SubscriptionConfirmation();
      confirmation.setSubscriptionId(randomUUID());
      const resp = new streamsPb.ReadResp();
      resp.setConfirmation(confirmation);
      call.write(resp);
      // A subscription starts strictly after the position it is given, which must be an event's.
      const after = all.hasPosition() ? Number(all.getPosition().getCommitPosition()) : all.hasEnd() ? this.nextPosition : 0;
      if (all.hasPosition() && !this.boundary(after)) return fail(call, grpc.status.INVALID_ARGUMENT, `position ${after} is not an event's position`);
      const live: Live = { call, after, filter, pending: false };
      this.live.add(live);
      call.on('cancelled', () => this.live.delete(live));
      call.on('close', () => this.live.delete(live));
      this.pumpOne(live);
      return;
    }
    this.calls.read++;
    if (all.hasPosition() && !this.boundary(Number(all.getPosition().getCommitPosition()))) {
      return fail(call, grpc.status.INVALID_ARGUMENT, `position ${all.getPosition().getCommitPosition()} is not an event's position`);
    }
    // Reading $all from a position includes the event at that position.
    let selected: StoredEvent[];
    if (backwards) {
      const from = all.hasPosition() ? Number(all.getPosition().getCommitPosition()) : Infinity;
      selected = this.log.filter((e) => e.position <= from).reverse();
    } else {
      const from = all.hasPosition() ? Number(all.getPosition().getCommitPosition()) : 0;
      selected = this.log.filter((e) => e.position >= from);
    }
    for (const e of selected.filter(filter).slice(0, count)) send(e);
    call.end();
  };

  private readFilter(options: any): (e: StoredEvent) => boolean {
    if (!options.hasFilter()) return () => true;
    const f = options.getFilter();
    const on = f.hasEventType() ? 'type' : 'stream';
    const expr = f.hasEventType() ? f.getEventType() : f.getStreamIdentifier();
    const regex = expr.getRegex() ? new RegExp(expr.getRegex()) : null;
    const prefixes: string[] = expr.getPrefixList();
    return (e) => {
      const value = on === 'type' ? e.type : e.streamId;
      if (regex && !regex.test(value)) return false;
      if (prefixes.length && !prefixes.some((p) => value.startsWith(p))) return false;
      return true;
    };
  }

  private pump() {
    for (const l of this.live) this.pumpOne(l);
  }

  private pumpOne(l: Live) {
    if (l.pending) return;
    for (const e of this.log) {
      if (e.position <= l.after) continue;
      l.after = e.position;
      if (!l.filter(e)) continue;
      // Backpressure: stop when the transport buffer is full and resume on drain.
      if (!l.call.write(this.readResp(e))) {
        l.pending = true;
        l.call.once('drain', () => {
          l.pending = false;
          this.pumpOne(l);
        });
        return;
      }
    }
  }

  private readResp(e: StoredEvent): any {
    const recorded = new streamsPb.ReadResp.ReadEvent.RecordedEvent();
    const id = new sharedPb.UUID();
    id.setString(e.id);
    recorded.setId(id);
    const sid = new sharedPb.StreamIdentifier();
    sid.setStreamName(Buffer.from(e.streamId, 'utf8'));
    recorded.setStreamIdentifier(sid);
    recorded.setStreamRevision(String(e.revision));
    recorded.setPreparePosition(String(e.position));
    recorded.setCommitPosition(String(e.position));
    const md = recorded.getMetadataMap();
    md.set('type', e.type);
    md.set('content-type', e.contentType);
    md.set('created', e.created.toString());
    recorded.setCustomMetadata(new Uint8Array(e.metadata));
    recorded.setData(new Uint8Array(e.data));
    const ev = new streamsPb.ReadResp.ReadEvent();
    ev.setEvent(recorded);
    ev.setCommitPosition(String(e.position));
    const resp = new streamsPb.ReadResp();
    resp.setEvent(ev);
    return resp;
  }

  private takeFault(): 'refuse' | 'lose' | null {
    if (this.refuseNextAppends > 0) {
      this.refuseNextAppends--;
      return 'refuse';
    }
    if (this.loseNextAnswers > 0) {
      this.loseNextAnswers--;
      return 'lose';
    }
    return null;
  }

  /** One stream append as the server does it: idempotent by ids, then the expected-state check. */
  private appendOne(streamId: string, expected: number | 'any' | 'no_stream' | 'stream_exists', messages: any[]) {
    const events = messages.map((m) => ({
      id: m.getId().getString(),
      type: m.getMetadataMap().get('type'),
      contentType: m.getMetadataMap().get('content-type'),
      data: Buffer.from(m.getData_asU8()),
      metadata: Buffer.from(m.getCustomMetadata_asU8()),
    }));
    const done = this.idempotent(streamId, expected, events.map((e) => e.id));
    if (done) return { ok: true as const, revision: done.at(-1)!.revision, position: done.at(-1)!.position };
    const actual = this.checkExpected(streamId, expected);
    if (actual !== null) return { ok: false as const, actual };
    const stored = this.store(streamId, events);
    return { ok: true as const, revision: stored.at(-1)?.revision ?? this.streamRevision(streamId), position: stored.at(-1)?.position ?? 0 };
  }

  private append = (call: grpc.ServerReadableStream<any, any>, cb: grpc.sendUnaryData<any>) => {
    this.calls.append++;
    let options: any = null;
    const messages: any[] = [];
    call.on('data', (req: any) => {
      if (req.hasOptions()) options = req.getOptions();
      else messages.push(req.getProposedMessage());
    });
    call.on('end', () => {
      const streamId = Buffer.from(options.getStreamIdentifier().getStreamName()).toString('utf8');
      const expected = options.hasRevision() ? Number(options.getRevision()) : options.hasNoStream() ? 'no_stream' : options.hasStreamExists() ? 'stream_exists' : 'any';
      const fault = this.takeFault();
      if (fault === 'refuse') return cb({ code: grpc.status.UNAVAILABLE, details: 'injected: not stored' });
      const r = this.appendOne(streamId, expected, messages);
      if (fault === 'lose') return cb({ code: grpc.status.UNAVAILABLE, details: 'injected: stored, answer lost' });
      const resp = new streamsPb.AppendResp();
      if (r.ok) {
        const success = new streamsPb.AppendResp.Success();
        success.setCurrentRevision(String(r.revision));
        const pos = new streamsPb.AppendResp.Position();
        pos.setCommitPosition(String(r.position));
        pos.setPreparePosition(String(r.position));
        success.setPosition(pos);
        resp.setSuccess(success);
      } else {
        const w = new streamsPb.AppendResp.WrongExpectedVersion();
        if (r.actual >= 0) w.setCurrentRevision(String(r.actual));
        else w.setCurrentNoStream(new sharedPb.Empty());
        if (typeof expected === 'number') w.setExpectedRevision(String(expected));
        else if (expected === 'no_stream') w.setExpectedNoStream(new sharedPb.Empty());
        else if (expected === 'stream_exists') w.setExpectedStreamExists(new sharedPb.Empty());
        else w.setExpectedAny(new sharedPb.Empty());
        resp.setWrongExpectedVersion(w);
      }
      cb(null, resp);
    });
  };

  private batchAppend = (call: grpc.ServerDuplexStream<any, any>) => {
    this.calls.batchAppend++;
    const pending = new Map<string, { options: any; messages: any[] }>();
    call.on('data', (req: any) => {
      const correlation = req.getCorrelationId().getString();
      const entry = pending.get(correlation) ?? { options: null, messages: [] };
      if (req.hasOptions()) entry.options = req.getOptions();
      entry.messages.push(...req.getProposedMessagesList());
      pending.set(correlation, entry);
      if (!req.getIsFinal()) return;
      pending.delete(correlation);
      const o = entry.options;
      const streamId = Buffer.from(o.getStreamIdentifier().getStreamName()).toString('utf8');
      const expected = o.hasStreamPosition() ? Number(o.getStreamPosition()) : o.hasNoStream() ? 'no_stream' : o.hasStreamExists() ? 'stream_exists' : 'any';
      const fault = this.takeFault();
      if (fault === 'refuse') return fail(call, grpc.status.UNAVAILABLE, 'injected: not stored');
      const r = this.appendOne(streamId, expected, entry.messages);
      if (fault === 'lose') return fail(call, grpc.status.UNAVAILABLE, 'injected: stored, answer lost');
      const resp = new streamsPb.BatchAppendResp();
      resp.setCorrelationId(req.getCorrelationId());
      resp.setStreamIdentifier(o.getStreamIdentifier());
      if (r.ok) {
        const success = new streamsPb.BatchAppendResp.Success();
        success.setCurrentRevision(String(r.revision));
        const pos = new sharedPb.AllStreamPosition();
        pos.setCommitPosition(String(r.position));
        pos.setPreparePosition(String(r.position));
        success.setPosition(pos);
        resp.setSuccess(success);
      } else {
        const w = new sharedPb.WrongExpectedVersion();
        if (r.actual >= 0) w.setCurrentStreamRevision(String(r.actual));
        else w.setCurrentNoStream(new emptyPb.Empty());
        if (typeof expected === 'number') w.setExpectedStreamPosition(String(expected));
        else if (expected === 'no_stream') w.setExpectedNoStream(new emptyPb.Empty());
        else if (expected === 'stream_exists') w.setExpectedStreamExists(new emptyPb.Empty());
        else w.setExpectedAny(new emptyPb.Empty());
        const details = new anyPb.Any();
        details.pack(w.serializeBinary(), 'event_store.client.WrongExpectedVersion');
        const status = new statusPb.Status();
        status.setCode(9);
        status.setMessage('wrong expected version');
        status.setDetails(details);
        resp.setError(status);
      }
      call.write(resp);
    });
    call.on('end', () => call.end());
  };

  /**
   * v2 multi-stream append. Properties become the event's JSON metadata (string values), which is
   * how KurrentDB 25.1 is documented to keep them; the real encoding is only proven on a server.
   */
  private appendSession = (call: grpc.ServerReadableStream<any, any>, cb: grpc.sendUnaryData<any>) => {
    this.calls.appendSession++;
    const requests: any[] = [];
    call.on('data', (req: any) => requests.push(req));
    call.on('end', () => {
      // The server compares a session's streams ignoring case (StreamsService, AppendRequestComparer).
      const seen = new Set<string>();
      for (const r of requests) {
        if (seen.has(r.getStream().toLowerCase())) {
          const d = new v2ErrorsPb.StreamAlreadyInAppendSessionErrorDetails();
          d.setStream(r.getStream());
          return cb(richError(grpc.status.ABORTED, `stream ${r.getStream()} appears twice in one session`, 'StreamAlreadyInAppendSessionErrorDetails', d));
        }
        seen.add(r.getStream().toLowerCase());
      }
      const parsed = requests.map((r) => {
        const raw = Number(r.getExpectedRevision());
        const expected = raw === -2 ? 'any' : raw === -1 ? 'no_stream' : raw === -4 ? 'stream_exists' : raw;
        const events = r.getRecordsList().map((rec: any) => {
          const props: Record<string, string> = {};
          rec.getPropertiesMap().forEach((v: any, k: string) => (props[k] = v.getStringValue()));
          const format = rec.getSchema().getFormat();
          return {
            id: rec.getRecordId(),
            type: rec.getSchema().getName(),
            contentType: format === 1 ? 'application/json' : 'application/octet-stream',
            data: Buffer.from(rec.getData_asU8()),
            metadata: Object.keys(props).length ? Buffer.from(JSON.stringify(props)) : Buffer.alloc(0),
          };
        });
        return { stream: r.getStream() as string, expected: expected as number | 'any' | 'no_stream' | 'stream_exists', events };
      });
      const fault = this.takeFault();
      if (fault === 'refuse') return cb({ code: grpc.status.UNAVAILABLE, details: 'injected: not stored' });
      // Some streams already holding their events, others new: the server fails the whole session.
      const stored = parsed.map((p) => this.idempotent(p.stream, p.expected, p.events.map((e: { id: string }) => e.id)));
      if (stored.some(Boolean) && !stored.every(Boolean)) return cb({ code: grpc.status.INTERNAL, details: 'AppendSession completed in error with unexpected result' });
      // All streams are checked before anything is stored: the session is one transaction.
      for (const [i, p] of parsed.entries()) {
        if (stored[i]) continue;
        const actual = this.checkExpected(p.stream, p.expected);
        if (actual === null) continue;
        const d = new v2ErrorsPb.StreamRevisionConflictErrorDetails();
        d.setStream(p.stream);
        d.setExpectedRevision(String(p.expected === 'any' ? -2 : p.expected === 'no_stream' ? -1 : p.expected === 'stream_exists' ? -4 : p.expected));
        d.setActualRevision(String(actual));
        return cb(richError(grpc.status.FAILED_PRECONDITION, `revision conflict on ${p.stream}`, 'StreamRevisionConflictErrorDetails', d));
      }
      const resp = new v2Pb.AppendSessionResponse();
      let last = 0;
      for (const [i, p] of parsed.entries()) {
        const written = stored[i] ?? this.store(p.stream, p.events);
        const out = new v2Pb.AppendResponse();
        out.setStream(p.stream);
        out.setStreamRevision(String(written.at(-1)?.revision ?? this.streamRevision(p.stream)));
        out.setPosition(String(written.at(-1)?.position ?? 0));
        last = Math.max(last, written.at(-1)?.position ?? 0);
        resp.addOutput(out);
      }
      resp.setPosition(String(last));
      if (fault === 'lose') return cb({ code: grpc.status.UNAVAILABLE, details: 'injected: stored, answer lost' });
      cb(null, resp);
    });
  };
}

/** Ends a streaming call with an error status (grpc-js sends the status of an emitted error). */
function fail(call: { emit(event: 'error', err: Partial<grpc.StatusObject>): boolean }, code: grpc.status, details: string) {
  call.emit('error', { code, details });
}

function unimplemented(_call: unknown, cb: grpc.sendUnaryData<unknown>) {
  cb({ code: grpc.status.UNIMPLEMENTED, details: 'not in the double' });
}

/** A gRPC error carrying a google.rpc.Status with typed details, as KurrentDB's v2 API sends them. */
function richError(code: grpc.status, message: string, detailsType: string, details: any): Partial<grpc.StatusObject> {
  const any = new anyPb.Any();
  any.pack(details.serializeBinary(), `kurrentdb.protocol.v2.streams.errors.${detailsType}`);
  const status = new statusPb.Status();
  status.setCode(code);
  status.setMessage(message);
  status.setDetails(any);
  const metadata = new grpc.Metadata();
  metadata.set('grpc-status-details-bin', Buffer.from(status.serializeBinary()));
  return { code, details: message, metadata };
}
