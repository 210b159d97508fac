/**
 * Contact lists read off the platform thread. Reading a 100,000-row sheet is seconds of CPU and
 * hundreds of MiB of garbage; on the platform thread every other tenant's request waited for it. Here
 * each upload is read by `readContacts` (contacts.ts, unchanged) on a worker thread of its own,
 * started for it and ended after it, so its memory goes with it:
 *
 * - a thread's heap is capped (`maxHeapMiB`): a sheet that outgrows it ends its thread, and is
 *   refused as too large, without touching the platform's heap;
 * - at most `threads` uploads are read at once in the process, the others wait their turn in order;
 * - per tenant, one upload is read at a time and at most `perTenantWaiting` more wait: beyond that
 *   the upload is refused at once (`UploadsBusyError`), so one tenant cannot fill the queue.
 *
 * The contacts come back packed in chunks (domain/packed-contacts.ts, a message each): the platform
 * thread takes in 400 short strings for 100,000 contacts, never the contacts as objects. Only the built code can start the thread (it loads this file's
 * compiled JavaScript); run from the TypeScript sources (tests), the same reading runs in-thread,
 * with the same queueing.
 */
import { Readable } from 'node:stream';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { readContacts, type Contact, type ReadLimits } from './contacts.js';
import { SpreadsheetError } from './errors.js';
import { CONTACTS_PER_CHUNK, packContacts, type PackedContacts } from '../../domain/packed-contacts.js';

const WORKER_TASK = 'spreadsheet-reader';

export interface ReadUpload {
  /** The contacts in upload order, packed in chunks of at most CONTACTS_PER_CHUNK. */
  chunks: PackedContacts[];
  skipped: number;
}

export interface ReaderOptions {
  /** Uploads read at once in this process. */
  threads: number;
  /** Uploads of one tenant waiting while one of its uploads is read. */
  perTenantWaiting: number;
  /** Heap of one reading thread, MiB. */
  maxHeapMiB: number;
}

/** Too many uploads of one tenant at once. */
export class UploadsBusyError extends Error {
  constructor() {
    super('uploads of this tenant are already being read');
    this.name = 'UploadsBusyError';
  }
}

type Job = { bytes: ArrayBuffer; fileName: string; limits: ReadLimits };
type Message = { chunk: PackedContacts } | { done: { skipped: number } } | { error: { kind: 'invalid' | 'too_large'; message: string } | { internal: string } };

export class SpreadsheetReaders {
  private running = 0;
  private readonly waiting: Array<() => void> = [];
  private readonly perTenant = new Map<string, number>();

  constructor(private readonly options: ReaderOptions) {}

  /** The contacts of `bytes` (an .xlsx or .csv named `fileName`), read for `tenant`. */
  async read(tenant: string, bytes: Buffer, fileName: string, limits: ReadLimits): Promise<ReadUpload> {
    const mine = this.perTenant.get(tenant) ?? 0;
    if (mine > this.options.perTenantWaiting) throw new UploadsBusyError();
    this.perTenant.set(tenant, mine + 1);
    try {
      return await this.tenantTurn(tenant, () => this.slot(() => this.run(bytes, fileName, limits)));
    } finally {
      const left = this.perTenant.get(tenant)! - 1;
      if (left === 0) this.perTenant.delete(tenant);
      else this.perTenant.set(tenant, left);
    }
  }

  private readonly tenantTail = new Map<string, Promise<unknown>>();

  /** One upload of a tenant after another. */
  private tenantTurn<T>(tenant: string, work: () => Promise<T>): Promise<T> {
    const before = this.tenantTail.get(tenant) ?? Promise.resolve();
    const mine = before.then(work, work);
    const tail = mine.catch(() => undefined);
    this.tenantTail.set(tenant, tail);
    void tail.then(() => {
      if (this.tenantTail.get(tenant) === tail) this.tenantTail.delete(tenant);
    });
    return mine;
  }

  /** One of `threads` places, in order of arrival. */
  private async slot<T>(work: () => Promise<T>): Promise<T> {
    if (this.running >= this.options.threads) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.running++;
    try {
      return await work();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    }
  }

  private run(bytes: Buffer, fileName: string, limits: ReadLimits): Promise<ReadUpload> {
    if (!import.meta.url.endsWith('.js')) return readInThread(bytes, fileName, limits);
    // A copy of its own, handed over (not copied again) to the thread.
    const copy = new ArrayBuffer(bytes.length);
    new Uint8Array(copy).set(bytes);
    const job: Job = { bytes: copy, fileName, limits };
    return new Promise<ReadUpload>((resolve, reject) => {
      const chunks: PackedContacts[] = [];
      let settled = false;
      const settle = (f: () => void) => {
        if (settled) return;
        settled = true;
        f();
        void worker.terminate();
      };
      const worker = new Worker(new URL(import.meta.url), {
        workerData: { task: WORKER_TASK },
        resourceLimits: { maxOldGenerationSizeMb: this.options.maxHeapMiB, maxYoungGenerationSizeMb: 16 },
      });
      worker.on('message', (m: Message) => {
        if ('chunk' in m) chunks.push(m.chunk);
        else if ('done' in m) settle(() => resolve({ chunks, skipped: m.done.skipped }));
        else if ('internal' in m.error) settle(() => reject(new Error(`spreadsheet reader: ${(m.error as { internal: string }).internal}`)));
        else {
          const e = m.error as { kind: 'invalid' | 'too_large'; message: string };
          settle(() => reject(new SpreadsheetError(e.kind, e.message)));
        }
      });
      worker.on('error', (err: Error & { code?: string }) => {
        if (err.code === 'ERR_WORKER_OUT_OF_MEMORY') {
          settle(() => reject(new SpreadsheetError('too_large', `the file needs more than ${this.options.maxHeapMiB} MiB to read`)));
        } else settle(() => reject(err));
      });
      worker.on('exit', (code) => settle(() => reject(new Error(`spreadsheet reader thread exited with code ${code}`))));
      worker.postMessage(job, [copy]);
    });
  }
}

/** Reads `bytes`, handing out the contacts packed, a chunk at a time (the last one when it is done). */
async function readPacked(bytes: Buffer, fileName: string, limits: ReadLimits, onChunk: (chunk: PackedContacts) => void): Promise<{ skipped: number }> {
  let batch: Contact[] = [];
  const r = await readContacts(Readable.from([bytes]), fileName, (c) => {
    batch.push(c);
    if (batch.length >= CONTACTS_PER_CHUNK) {
      onChunk(packContacts(batch));
      batch = [];
    }
  }, limits);
  if (batch.length) onChunk(packContacts(batch));
  return { skipped: r.skipped };
}

async function readInThread(bytes: Buffer, fileName: string, limits: ReadLimits): Promise<ReadUpload> {
  const chunks: PackedContacts[] = [];
  const r = await readPacked(bytes, fileName, limits, (c) => void chunks.push(c));
  return { chunks, skipped: r.skipped };
}

// The thread: reads the one upload it is handed, sends the contacts in packed chunks, then the outcome.
if (!isMainThread && (workerData as { task?: string } | null)?.task === WORKER_TASK) {
  const port = parentPort!;
  port.once('message', (job: Job) => {
    readPacked(Buffer.from(job.bytes), job.fileName, job.limits, (chunk) => port.postMessage({ chunk } satisfies Message)).then(
      (r) => {
        port.postMessage({ done: { skipped: r.skipped } } satisfies Message);
      },
      (err: unknown) => {
        const error = err instanceof SpreadsheetError ? { kind: err.kind, message: err.message } : { internal: err instanceof Error ? `${err.name}: ${err.message}` : String(err) };
        port.postMessage({ error } satisfies Message);
      },
    );
  });
}
