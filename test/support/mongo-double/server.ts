/**
 * An in-process MongoDB test double that speaks the real wire protocol over TCP, so the real
 * `mongodb` driver talks to it unchanged: the legacy OP_QUERY handshake answered with OP_REPLY, then
 * OP_MSG (body and document-sequence sections, moreToCome). It is a standalone server without
 * authentication, compression, transactions or replication, in memory.
 *
 * Commands: hello/isMaster, buildInfo, ping, getParameter, endSessions, find/getMore/killCursors,
 * insert, update (replacement, $set/$unset/$inc/$max/$min/$setOnInsert, upserts, multi), delete,
 * findAndModify, createIndexes (unique and TTL indexes kept; unique ones enforced), listIndexes,
 * listCollections, drop, dropDatabase. Anything else answers CommandNotFound, as a server would.
 *
 * Database names are compared ignoring case when one is created (DatabaseDifferCase), as the server does.
 * It is a test double, not MongoDB: `ttlSweep()` runs the TTL monitor when a test asks (the server
 * runs it every 60 s); there are no elections, no write concern, no journal, no real concurrency.
 * Test hooks: `failNext` fails a chosen command once (a crash or outage at that point), and
 * `queries` records every find with whether an index serves its filter and sort.
 */
import net from 'node:net';
import { BSON, Long } from 'bson';
import {
  applyUpdate,
  isPlainObject,
  isReplacement,
  keyOf,
  matches,
  MongoCommandError,
  newId,
  sortDocs,
  structuredCloneBson,
  upsertSeed,
  valueAt,
  type Doc,
} from './query.js';

const OP_REPLY = 1;
const OP_QUERY = 2004;
const OP_MSG = 2013;
const MORE_TO_COME = 1 << 1;
const CHECKSUM_PRESENT = 1 << 0;
const MAX_WIRE_VERSION = 21; // what a MongoDB 7.0 server reports

interface IndexSpec {
  name: string;
  key: Doc;
  unique?: boolean;
  expireAfterSeconds?: number;
}

interface Collection {
  docs: Map<string, Doc>;
  indexes: IndexSpec[];
}

interface Cursor {
  ns: string;
  docs: Doc[];
}

export interface RecordedQuery {
  ns: string;
  /** Fields compared for equality at the filter's top level. */
  equality: string[];
  sort: Doc;
  /** The index whose keys are the equality fields then the sort keys (null: none, a collection scan). */
  index: string | null;
}

export interface CommandFault {
  /** Command name (e.g. 'update') and optionally the collection it targets. */
  command: string;
  collection?: string;
  /** 'error': answer a command error; 'close': drop the connection without answering. */
  mode?: 'error' | 'close';
}

/**
 * The documents a filter can match, as the `_id` index finds them: the ones its `_id` equality or
 * `$in` names, else every document. Without it each write scans the collection, and a 100,000-row
 * dialer upload (100,000 upserts) takes minutes instead of seconds.
 */
function candidates(coll: Collection, filter: Doc): Array<[string, Doc]> {
  const id = filter._id;
  const pick = (ids: unknown[]) =>
    [...new Set(ids.map((v) => keyOf([v])))].flatMap((key): Array<[string, Doc]> => {
      const d = coll.docs.get(key);
      return d ? [[key, d]] : [];
    });
  if (id === undefined) return [...coll.docs.entries()];
  if (!isPlainObject(id) || !Object.keys(id).some((k) => k.startsWith('$'))) return pick([id]);
  const ops = Object.keys(id);
  if (ops.length === 1 && ops[0] === '$eq') return pick([id.$eq]);
  if (ops.length === 1 && ops[0] === '$in' && Array.isArray(id.$in) && !id.$in.some((v) => v instanceof RegExp)) return pick(id.$in);
  return [...coll.docs.entries()];
}

export class MongoDouble {
  private readonly server = net.createServer((socket) => this.serve(socket));
  private readonly dbs = new Map<string, Map<string, Collection>>();
  private readonly cursors = new Map<number, Cursor>();
  private readonly sockets = new Set<net.Socket>();
  private nextCursorId = 1;
  private connectionIds = 0;
  private faults: CommandFault[] = [];
  /** Every find served, for tests that check the indexes. */
  readonly queries: RecordedQuery[] = [];
  /** Command names received, in order (tests check what the adapter sends). */
  readonly commands: string[] = [];
  port = 0;

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as net.AddressInfo).port;
    return this.url();
  }

  /** A connection string for `db` (the driver talks to this double, not to a MongoDB server). */
  url(db = 'test'): string {
    return `mongodb://127.0.0.1:${this.port}/${db}`;
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** The next matching command fails once (after the faults queued before it). */
  failNext(fault: CommandFault) {
    this.faults.push(fault);
  }

  /** Documents of a collection as stored (a test looks under the adapter). */
  documents(db: string, collection: string): Doc[] {
    return [...(this.dbs.get(db)?.get(collection)?.docs.values() ?? [])].map((d) => structuredCloneBson(d));
  }

  indexes(db: string, collection: string): IndexSpec[] {
    return structuredCloneBson(this.dbs.get(db)?.get(collection)?.indexes ?? []);
  }

  /** One pass of the TTL monitor (over one database or all): removes documents whose TTL-indexed date is past `now`. */
  ttlSweep(now = Date.now(), db?: string): number {
    let removed = 0;
    for (const [name, colls] of this.dbs) {
      if (db !== undefined && name !== db) continue;
      for (const coll of colls.values()) {
        for (const idx of coll.indexes) {
          if (idx.expireAfterSeconds === undefined) continue;
          const field = Object.keys(idx.key)[0]!;
          for (const [k, d] of coll.docs) {
            const v = valueAt(d, field);
            const dates = (Array.isArray(v) ? v : [v]).filter((x): x is Date => x instanceof Date);
            if (dates.length && Math.min(...dates.map((x) => x.getTime())) + idx.expireAfterSeconds * 1000 <= now) {
              coll.docs.delete(k);
              removed++;
            }
          }
        }
      }
    }
    return removed;
  }

  // ---- wire protocol ----

  private serve(socket: net.Socket) {
    this.sockets.add(socket);
    socket.on('close', () => this.sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    let buffered = Buffer.alloc(0);
    socket.on('data', (chunk) => {
      buffered = buffered.length ? Buffer.concat([buffered, chunk]) : chunk;
      while (buffered.length >= 4) {
        const length = buffered.readInt32LE(0);
        if (buffered.length < length) break;
        const message = buffered.subarray(0, length);
        buffered = buffered.subarray(length);
        try {
          this.handleMessage(socket, message);
        } catch {
          socket.destroy();
          return;
        }
      }
    });
  }

  private handleMessage(socket: net.Socket, msg: Buffer) {
    const requestId = msg.readInt32LE(4);
    const opCode = msg.readInt32LE(12);
    if (opCode === OP_QUERY) {
      // Only the driver's first hello travels as OP_QUERY ("admin.$cmd").
      let at = 20;
      while (msg[at] !== 0) at++;
      at += 1 + 8;
      const query = BSON.deserialize(msg.subarray(at, at + msg.readInt32LE(at)));
      const reply = this.run(socket, { ...query, $db: 'admin' });
      if (reply === null) return;
      const body = BSON.serialize(reply);
      const header = Buffer.alloc(36);
      header.writeInt32LE(36 + body.length, 0);
      header.writeInt32LE(this.nextRequestId(), 4);
      header.writeInt32LE(requestId, 8);
      header.writeInt32LE(OP_REPLY, 12);
      header.writeInt32LE(0, 16); // responseFlags
      header.writeBigInt64LE(0n, 20); // cursorID
      header.writeInt32LE(0, 28); // startingFrom
      header.writeInt32LE(1, 32); // numberReturned
      socket.write(Buffer.concat([header, body]));
      return;
    }
    if (opCode !== OP_MSG) throw new Error(`unsupported opcode ${opCode}`);
    const flags = msg.readUInt32LE(16);
    const end = msg.length - (flags & CHECKSUM_PRESENT ? 4 : 0);
    let at = 20;
    let command: Doc | null = null;
    const sequences: Record<string, Doc[]> = {};
    while (at < end) {
      const kind = msg[at]!;
      at += 1;
      if (kind === 0) {
        const size = msg.readInt32LE(at);
        command = BSON.deserialize(msg.subarray(at, at + size));
        at += size;
      } else if (kind === 1) {
        const size = msg.readInt32LE(at);
        const stop = at + size;
        let p = at + 4;
        let idEnd = p;
        while (msg[idEnd] !== 0) idEnd++;
        const identifier = msg.toString('utf8', p, idEnd);
        p = idEnd + 1;
        const docs: Doc[] = [];
        while (p < stop) {
          const n = msg.readInt32LE(p);
          docs.push(BSON.deserialize(msg.subarray(p, p + n)));
          p += n;
        }
        sequences[identifier] = docs;
        at = stop;
      } else throw new Error(`unknown OP_MSG section kind ${kind}`);
    }
    if (!command) throw new Error('OP_MSG without a body');
    const reply = this.run(socket, { ...command, ...sequences });
    if (reply === null || flags & MORE_TO_COME) return;
    const body = BSON.serialize(reply);
    const header = Buffer.alloc(21);
    header.writeInt32LE(21 + body.length, 0);
    header.writeInt32LE(this.nextRequestId(), 4);
    header.writeInt32LE(requestId, 8);
    header.writeInt32LE(OP_MSG, 12);
    header.writeUInt32LE(0, 16);
    header.writeUInt8(0, 20); // section kind 0: the body
    socket.write(Buffer.concat([header, body]));
  }

  private requestIds = 0;
  private nextRequestId() {
    return ++this.requestIds;
  }

  /** Runs one command; null means "answer nothing" (a fault that drops the connection). */
  private run(socket: net.Socket, cmd: Doc): Doc | null {
    const name = Object.keys(cmd)[0]!;
    this.commands.push(name);
    const faultAt = this.faults.findIndex((f) => f.command === name && (f.collection === undefined || f.collection === cmd[name]));
    if (faultAt >= 0) {
      const [fault] = this.faults.splice(faultAt, 1);
      if (fault!.mode === 'close') {
        socket.destroy();
        return null;
      }
      return { ok: 0, code: 91, codeName: 'ShutdownInProgress', errmsg: `test double: injected failure of ${name}` };
    }
    try {
      return { ...this.dispatch(name, cmd), ok: 1 };
    } catch (err) {
      if (err instanceof MongoCommandError) return { ok: 0, code: err.code, codeName: err.codeName, errmsg: err.message };
      return { ok: 0, code: 1, codeName: 'InternalError', errmsg: String((err as Error).message ?? err) };
    }
  }

  private dispatch(name: string, cmd: Doc): Doc {
    const db = String(cmd.$db ?? 'test');
    switch (name) {
      case 'hello':
      case 'isMaster':
      case 'ismaster':
        return {
          helloOk: true,
          isWritablePrimary: true,
          ismaster: true,
          maxBsonObjectSize: 16 * 1024 * 1024,
          maxMessageSizeBytes: 48_000_000,
          maxWriteBatchSize: 100_000,
          localTime: new Date(),
          logicalSessionTimeoutMinutes: 30,
          connectionId: ++this.connectionIds,
          minWireVersion: 0,
          maxWireVersion: MAX_WIRE_VERSION,
          readOnly: false,
        };
      case 'buildInfo':
      case 'buildinfo':
        return { version: '7.0.0', versionArray: [7, 0, 0, 0], gitVersion: 'cloud-telephony-test-double', bits: 64, maxBsonObjectSize: 16 * 1024 * 1024 };
      case 'ping':
        return {};
      case 'getParameter':
        return {};
      case 'endSessions':
      case 'abortTransaction':
        return {};
      case 'find':
        return this.find(db, cmd);
      case 'getMore':
        return this.getMore(cmd);
      case 'killCursors': {
        const ids = (cmd.cursors as unknown[]).map((c) => Number(c));
        for (const id of ids) this.cursors.delete(id);
        return { cursorsKilled: ids.map((id) => Long.fromNumber(id)), cursorsNotFound: [], cursorsAlive: [], cursorsUnknown: [] };
      }
      case 'insert':
        return this.insert(db, cmd);
      case 'update':
        return this.update(db, cmd);
      case 'delete':
        return this.delete(db, cmd);
      case 'findAndModify':
      case 'findandmodify':
        return this.findAndModify(db, cmd);
      case 'createIndexes':
        return this.createIndexes(db, cmd);
      case 'listIndexes': {
        const coll = this.dbs.get(db)?.get(String(cmd.listIndexes));
        if (!coll) throw new MongoCommandError(26, 'NamespaceNotFound', `ns does not exist: ${db}.${cmd.listIndexes}`);
        return this.cursorReply(`${db}.${cmd.listIndexes}`, coll.indexes.map((i) => ({ v: 2, ...structuredCloneBson(i) })), cmd);
      }
      case 'listCollections': {
        const names = [...(this.dbs.get(db)?.keys() ?? [])];
        return this.cursorReply(`${db}.$cmd.listCollections`, names.map((n) => ({ name: n, type: 'collection', options: {}, info: { readOnly: false } })), cmd);
      }
      case 'create':
        this.collection(db, String(cmd.create), true);
        return {};
      case 'drop': {
        const existed = this.dbs.get(db)?.delete(String(cmd.drop));
        if (!existed) throw new MongoCommandError(26, 'NamespaceNotFound', 'ns not found');
        return { ns: `${db}.${cmd.drop}` };
      }
      case 'dropDatabase':
        this.dbs.delete(db);
        return { dropped: db };
      default:
        throw new MongoCommandError(59, 'CommandNotFound', `no such command: '${name}'`);
    }
  }

  private collection(db: string, name: string, create: true): Collection;
  private collection(db: string, name: string, create: false): Collection | undefined;
  private collection(db: string, name: string, create: boolean): Collection | undefined {
    let colls = this.dbs.get(db);
    if (!colls) {
      if (!create) return undefined;
      // As the server: a database is not created beside one whose name differs only in case.
      const other = [...this.dbs.keys()].find((d) => d.toLowerCase() === db.toLowerCase());
      if (other !== undefined) throw new MongoCommandError(13297, 'DatabaseDifferCase', `db already exists with different case already have: [${other}] trying to create [${db}]`);
      colls = new Map();
      this.dbs.set(db, colls);
    }
    let coll = colls.get(name);
    if (!coll && create) {
      coll = { docs: new Map(), indexes: [{ name: '_id_', key: { _id: 1 } }] };
      colls.set(name, coll);
    }
    return coll;
  }

  private cursorReply(ns: string, docs: Doc[], cmd: Doc, first = 'firstBatch'): Doc {
    const size = typeof cmd.batchSize === 'number' ? cmd.batchSize : (cmd.cursor as Doc | undefined)?.batchSize ?? 101;
    const batch = docs.slice(0, Number(size));
    const rest = docs.slice(batch.length);
    let id = 0;
    if (rest.length > 0 && !cmd.singleBatch) {
      id = this.nextCursorId++;
      this.cursors.set(id, { ns, docs: rest });
    }
    return { cursor: { id: Long.fromNumber(id), ns, [first]: batch } };
  }

  private find(db: string, cmd: Doc): Doc {
    const name = String(cmd.find);
    const filter = (cmd.filter as Doc) ?? {};
    const sort = (cmd.sort as Doc) ?? {};
    const coll = this.collection(db, name, false);
    this.record(`${db}.${name}`, coll, filter, sort);
    let docs = coll ? candidates(coll, filter).map(([, d]) => d).filter((d) => matches(d, filter)) : [];
    docs = sortDocs(docs, sort);
    if (typeof cmd.skip === 'number') docs = docs.slice(cmd.skip);
    if (typeof cmd.limit === 'number' && cmd.limit > 0) docs = docs.slice(0, cmd.limit);
    if (isPlainObject(cmd.projection) && Object.keys(cmd.projection).length) docs = docs.map((d) => project(d, cmd.projection as Doc));
    return this.cursorReply(`${db}.${name}`, docs.map((d) => structuredCloneBson(d)), cmd);
  }

  private getMore(cmd: Doc): Doc {
    const id = Number(cmd.getMore);
    const cursor = this.cursors.get(id);
    if (!cursor) throw new MongoCommandError(43, 'CursorNotFound', `cursor id ${id} not found`);
    const size = typeof cmd.batchSize === 'number' && cmd.batchSize > 0 ? cmd.batchSize : cursor.docs.length;
    const batch = cursor.docs.splice(0, size);
    if (cursor.docs.length === 0) this.cursors.delete(id);
    return { cursor: { id: Long.fromNumber(cursor.docs.length ? id : 0), ns: cursor.ns, nextBatch: batch } };
  }

  private insert(db: string, cmd: Doc): Doc {
    const coll = this.collection(db, String(cmd.insert), true);
    const ordered = cmd.ordered !== false;
    const writeErrors: Doc[] = [];
    let n = 0;
    (cmd.documents as Doc[]).forEach((doc, index) => {
      if (ordered && writeErrors.length) return;
      const d = doc._id === undefined ? { _id: newId(), ...doc } : doc;
      try {
        this.store(db, String(cmd.insert), coll, d, null);
        n++;
      } catch (err) {
        writeErrors.push(writeError(index, err));
      }
    });
    return writeErrors.length ? { n, writeErrors } : { n };
  }

  private update(db: string, cmd: Doc): Doc {
    const name = String(cmd.update);
    const coll = this.collection(db, name, true);
    const ordered = cmd.ordered !== false;
    const writeErrors: Doc[] = [];
    const upserted: Doc[] = [];
    let n = 0;
    let nModified = 0;
    (cmd.updates as Doc[]).forEach((u, index) => {
      if (ordered && writeErrors.length) return;
      try {
        const q = (u.q as Doc) ?? {};
        const update = u.u as Doc;
        if (u.multi && isReplacement(update)) throw new MongoCommandError(9, 'FailedToParse', 'multi update is not supported for replacement-style update');
        const targets = candidates(coll, q).filter(([, d]) => matches(d, q));
        if (targets.length === 0) {
          if (!u.upsert) return;
          const seed = isReplacement(update) ? { _id: upsertSeed(q)._id } : upsertSeed(q);
          let doc = applyUpdate(seed, update, true);
          if (doc._id === undefined) doc = { _id: newId(), ...doc };
          this.store(db, name, coll, doc, null);
          n++;
          upserted.push({ index, _id: doc._id });
          return;
        }
        for (const [key, before] of u.multi ? targets : targets.slice(0, 1)) {
          const after = applyUpdate(before, update, false);
          n++;
          if (keyOf([after]) !== keyOf([before])) {
            this.store(db, name, coll, after, key);
            nModified++;
          }
        }
      } catch (err) {
        writeErrors.push(writeError(index, err));
      }
    });
    const reply: Doc = { n, nModified };
    if (upserted.length) reply.upserted = upserted;
    if (writeErrors.length) reply.writeErrors = writeErrors;
    return reply;
  }

  private delete(db: string, cmd: Doc): Doc {
    const coll = this.collection(db, String(cmd.delete), false);
    let n = 0;
    for (const del of cmd.deletes as Doc[]) {
      if (!coll) continue;
      for (const [key, d] of candidates(coll, (del.q as Doc) ?? {})) {
        if (!matches(d, (del.q as Doc) ?? {})) continue;
        coll.docs.delete(key);
        n++;
        if (Number(del.limit) === 1) break;
      }
    }
    return { n };
  }

  private findAndModify(db: string, cmd: Doc): Doc {
    const name = String(cmd.findAndModify ?? cmd.findandmodify);
    const coll = this.collection(db, name, true);
    const query = (cmd.query as Doc) ?? {};
    const target = sortDocs(candidates(coll, query).map(([, d]) => d).filter((d) => matches(d, query)), cmd.sort as Doc)[0];
    if (cmd.remove) {
      if (target) coll.docs.delete(keyOf([target._id]));
      return { lastErrorObject: { n: target ? 1 : 0 }, value: target ?? null };
    }
    const update = cmd.update as Doc;
    if (!target) {
      if (!cmd.upsert) return { lastErrorObject: { n: 0, updatedExisting: false }, value: null };
      let doc = applyUpdate(isReplacement(update) ? { _id: upsertSeed(query)._id } : upsertSeed(query), update, true);
      if (doc._id === undefined) doc = { _id: newId(), ...doc };
      this.store(db, name, coll, doc, null);
      return { lastErrorObject: { n: 1, updatedExisting: false, upserted: doc._id }, value: cmd.new ? structuredCloneBson(doc) : null };
    }
    const after = applyUpdate(target, update, false);
    this.store(db, name, coll, after, keyOf([target._id]));
    return { lastErrorObject: { n: 1, updatedExisting: true }, value: structuredCloneBson(cmd.new ? after : target) };
  }

  /** Stores a document, enforcing every unique index (the _id index included). */
  private store(db: string, name: string, coll: Collection, doc: Doc, replacing: string | null) {
    const key = keyOf([doc._id]);
    if (key !== replacing && coll.docs.has(key)) throw duplicate(db, name, '_id_', { _id: doc._id });
    for (const idx of coll.indexes) {
      if (!idx.unique || idx.name === '_id_') continue;
      const fields = Object.keys(idx.key);
      const k = keyOf(fields.map((f) => valueAt(doc, f)));
      for (const [otherKey, other] of coll.docs) {
        if (otherKey === replacing || otherKey === key) continue;
        if (keyOf(fields.map((f) => valueAt(other, f))) === k) {
          throw duplicate(db, name, idx.name, Object.fromEntries(fields.map((f) => [f, valueAt(doc, f)])));
        }
      }
    }
    const copy = structuredCloneBson(doc);
    if (replacing === key) coll.docs.set(key, copy);
    else {
      coll.docs.set(key, copy);
      if (replacing !== null) coll.docs.delete(replacing);
    }
  }

  private createIndexes(db: string, cmd: Doc): Doc {
    const name = String(cmd.createIndexes);
    const created = !this.dbs.get(db)?.has(name);
    const coll = this.collection(db, name, true);
    const before = coll.indexes.length;
    for (const raw of cmd.indexes as Doc[]) {
      const spec: IndexSpec = { name: String(raw.name), key: raw.key as Doc };
      if (raw.unique) spec.unique = true;
      if (raw.expireAfterSeconds !== undefined) spec.expireAfterSeconds = Number(raw.expireAfterSeconds);
      const sameName = coll.indexes.find((i) => i.name === spec.name);
      const sameKey = coll.indexes.find((i) => keyOf([i.key]) === keyOf([spec.key]));
      if (sameName && keyOf([sameName.key]) !== keyOf([spec.key])) {
        throw new MongoCommandError(86, 'IndexKeySpecsConflict', `An existing index has the same name as the requested index: ${spec.name}`);
      }
      if (sameKey) {
        if (sameKey.name !== spec.name || Boolean(sameKey.unique) !== Boolean(spec.unique) || sameKey.expireAfterSeconds !== spec.expireAfterSeconds) {
          throw new MongoCommandError(85, 'IndexOptionsConflict', `An equivalent index already exists with a different name or options: ${sameKey.name}`);
        }
        continue;
      }
      if (spec.unique) {
        const seen = new Set<string>();
        for (const d of coll.docs.values()) {
          const k = keyOf(Object.keys(spec.key).map((f) => valueAt(d, f)));
          if (seen.has(k)) throw duplicate(db, name, spec.name, {});
          seen.add(k);
        }
      }
      coll.indexes.push(spec);
    }
    return { numIndexesBefore: before, numIndexesAfter: coll.indexes.length, createdCollectionAutomatically: created };
  }

  /**
   * Which index (if any) serves this filter's equalities followed by its sort, as a planner would.
   * `$in` counts as an equality: the planner scans the index at each of its values.
   */
  private record(ns: string, coll: Collection | undefined, filter: Doc, sort: Doc) {
    const equality = Object.entries(filter)
      .filter(([k, v]) => !k.startsWith('$') && (!isPlainObject(v) || Object.keys(v).every((x) => x === '$eq' || x === '$in')))
      .map(([k]) => k);
    // Sorting on a field fixed by an equality is free.
    const sortKeys = Object.entries(sort).filter(([k]) => !equality.includes(k));
    let index: string | null = null;
    for (const idx of coll?.indexes ?? [{ name: '_id_', key: { _id: 1 } }]) {
      const keys = Object.entries(idx.key);
      if (keys.length < equality.length + sortKeys.length) continue;
      const head = new Set(keys.slice(0, equality.length).map(([k]) => k));
      if (!equality.every((f) => head.has(f))) continue;
      const tail = keys.slice(equality.length, equality.length + sortKeys.length);
      const same = tail.every(([k, d], i) => k === sortKeys[i]![0] && Number(d) === Number(sortKeys[i]![1]));
      const reversed = tail.every(([k, d], i) => k === sortKeys[i]![0] && Number(d) === -Number(sortKeys[i]![1]));
      if ((same || reversed) && (equality.length > 0 || sortKeys.length > 0)) {
        index = idx.name;
        break;
      }
    }
    this.queries.push({ ns, equality, sort, index });
  }
}

function project(doc: Doc, projection: Doc): Doc {
  const include = Object.entries(projection).filter(([k, v]) => k !== '_id' && v);
  if (include.length) {
    const out: Doc = projection._id === 0 ? {} : { _id: doc._id };
    for (const [k] of include) if (k in doc) out[k] = doc[k];
    return out;
  }
  const out = { ...doc };
  for (const [k, v] of Object.entries(projection)) if (!v) delete out[k];
  return out;
}

function duplicate(db: string, coll: string, index: string, keyValue: Doc): MongoCommandError {
  const err = new MongoCommandError(11000, 'DuplicateKey', `E11000 duplicate key error collection: ${db}.${coll} index: ${index} dup key: ${JSON.stringify(keyValue)}`);
  (err as MongoCommandError & { keyValue?: Doc }).keyValue = keyValue;
  return err;
}

function writeError(index: number, err: unknown): Doc {
  if (err instanceof MongoCommandError) {
    const out: Doc = { index, code: err.code, codeName: err.codeName, errmsg: err.message };
    const keyValue = (err as MongoCommandError & { keyValue?: Doc }).keyValue;
    if (keyValue) out.keyValue = keyValue;
    return out;
  }
  return { index, code: 1, errmsg: String(err) };
}
