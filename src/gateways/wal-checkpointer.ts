/**
 * WAL checkpoints off the event loop. better-sqlite3 is synchronous, and SQLite's auto-checkpoint
 * (every 1000 WAL pages) runs inside whichever commit crosses it, with its two syncs: in the sip bench
 * at 200 calls/s that was 119 checkpoints in 10 s on the platform thread, 296 ms in all, up to 17 ms
 * each, and every request arriving meanwhile waited. Here a thread with its own connection to the
 * file runs PASSIVE checkpoints on a short timer: PASSIVE takes no writer lock and never waits, so
 * the platform thread's commits go on while it copies pages and syncs. Once a checkpoint has copied
 * every frame, the next commit starts the WAL from its beginning again (SQLite does that itself), so
 * the file stays about as large as what is written between two checkpoints.
 *
 * Durability is SQLite's, unchanged: a checkpoint moves committed pages from the WAL into the file,
 * and the thread's connection is synchronous=NORMAL, so it syncs the WAL before copying and the file
 * before it lets a writer reuse the WAL (whatever the writing connection's setting). What a commit
 * must have on disk before it is acknowledged is still synced by that commit (FULL, or WalSync).
 *
 * The platform thread's connection keeps an auto-checkpoint, at BACKSTOP_PAGES: should the thread
 * fall behind, or commits follow each other so closely that no checkpoint ever catches up with the
 * last frame (the WAL then only grows), a commit checkpoints as before, once the WAL is that large.
 * A process killed during a checkpoint leaves a WAL the next opening recovers (SQLite's guarantee).
 *
 * Only built code runs the thread (sqlite-thread.ts `canRunThreads`); elsewhere nothing changes.
 */
import type Database from 'better-sqlite3';
import { closeSync, openSync, readSync } from 'node:fs';
import { endianness } from 'node:os';
import { performance } from 'node:perf_hooks';
import { openSqlite } from './sqlite.js';
import { SqliteThread, serveOnThread, type ThreadHandler } from './sqlite-thread.js';

const TASK = 'wal-checkpointer';

/** How often the thread looks at the WAL. At 200 calls/s read.db and the log each write a few thousand pages a second. */
export const CHECKPOINT_INTERVAL_MS = 50;
/**
 * Frames written and not yet checkpointed that make the thread checkpoint (SQLite's own default);
 * fewer are checkpointed once they are MAX_WAIT_MS old. Each checkpoint that catches up lets the
 * next commit start the WAL over, and that commit syncs the WAL's new header (on the platform thread,
 * ~1 ms): checkpointing at every look cost more of those than the old checkpoints' syncs.
 */
export const CHECKPOINT_FRAMES = 1000;
const MAX_WAIT_MS = 1000;
const LE = endianness() === 'LE';
/** The platform thread's own auto-checkpoint, should the thread not keep up (pages: 4 KiB each). */
export const BACKSTOP_PAGES = 10_000;
/** Checkpoints run back to back while commits keep adding frames, to let the WAL start over. */
const CATCH_UP_ROUNDS = 3;

/** This module, as the thread loads it (the built code's). */
export const checkpointerThreadModule = new URL(import.meta.url);

/** What the thread has done so far. */
export interface CheckpointStats {
  /** Checkpoints that copied pages. */
  checkpoints: number;
  /** Their time in all, and the longest (ms, on the thread). */
  totalMs: number;
  maxMs: number;
  /** Frames copied in all. */
  frames: number;
}

/** The platform thread's side: starts the thread for `db`'s file and moves its checkpoints there. */
export class WalCheckpointer {
  private readonly thread: SqliteThread;

  constructor(db: Database.Database, module: URL = checkpointerThreadModule) {
    db.pragma(`wal_autocheckpoint = ${BACKSTOP_PAGES}`);
    this.thread = new SqliteThread('WAL checkpointer', module, TASK, { file: db.name, intervalMs: CHECKPOINT_INTERVAL_MS });
    // The thread starts with its first request; this one also keeps it from being started lazily later.
    void this.stats().catch(() => undefined);
  }

  /** A checkpointer for `db` where a module is given and the file is one (else null: SQLite's auto-checkpoint). */
  static start(db: Database.Database, module: URL | null | undefined): WalCheckpointer | null {
    return module && db.name !== ':memory:' ? new WalCheckpointer(db, module) : null;
  }

  /** The thread's counts (the bench's breakdown). */
  async stats(): Promise<CheckpointStats> {
    return JSON.parse(await this.thread.request('stats')) as CheckpointStats;
  }

  /** Ends the thread (its last checkpoint done, its connection closed); call before closing the file. */
  close(): Promise<void> {
    return this.thread.close();
  }
}

/** The thread's side: a PASSIVE checkpoint every `intervalMs`, for as long as it runs. */
export function checkpointerHandler(data: { file: string; intervalMs: number }): ThreadHandler {
  const db = openSqlite(data.file, 'NORMAL');
  // This connection never writes; its checkpoints are the timer's.
  db.pragma('wal_autocheckpoint = 0');
  const checkpoint = db.prepare<[], { busy: number; log: number; checkpointed: number }>('PRAGMA wal_checkpoint(PASSIVE)');
  const stats: CheckpointStats = { checkpoints: 0, totalMs: 0, maxMs: 0, frames: 0 };
  let last = performance.now();
  // The wal-index (the -shm file, https://sqlite.org/walformat.html): its header's mxFrame (the WAL's
  // last frame) at byte 16 and the checkpoint's nBackfill (the last frame copied) at byte 96, in the
  // machine's byte order. Read only to decide when to checkpoint and for the counts: a torn read just
  // checkpoints early or late.
  let shm: number | null = null;
  const header = Buffer.alloc(100);
  const u32 = (at: number) => (LE ? header.readUInt32LE(at) : header.readUInt32BE(at));
  /** [mxFrame, nBackfill]; null when there is no wal-index to read (then checkpoint at every look). */
  const walIndex = (): [number, number] | null => {
    try {
      shm ??= openSync(`${data.file}-shm`, 'r');
      return readSync(shm, header, 0, 100, 0) < 100 ? [0, 0] : [u32(16), u32(96)];
    } catch {
      return null;
    }
  };
  const round = () => {
    let index = walIndex();
    const behind = index ? index[0] - index[1] : CHECKPOINT_FRAMES;
    if (behind < CHECKPOINT_FRAMES && (behind <= 0 || performance.now() - last < MAX_WAIT_MS)) return;
    last = performance.now();
    for (let i = 0; i < CATCH_UP_ROUNDS; i++) {
      const t0 = performance.now();
      const r = checkpoint.get()!;
      const ms = performance.now() - t0;
      // `log` frames in the WAL, `checkpointed` of them in the file; before, `index[1]` were.
      const fresh = index && r.checkpointed >= index[1] ? r.checkpointed - index[1] : r.checkpointed;
      if (fresh > 0) {
        stats.checkpoints++;
        stats.totalMs += ms;
        stats.maxMs = Math.max(stats.maxMs, ms);
        stats.frames += fresh;
      }
      // All copied (the next commit starts the WAL over), or a reader holds the rest back: wait for the timer.
      if (r.checkpointed >= r.log || r.busy) break;
      index = walIndex();
    }
  };
  const timer = setInterval(() => {
    try {
      round();
    } catch {
      // SQLITE_BUSY and the like: the next round tries again; the backstop bounds the WAL meanwhile.
    }
  }, data.intervalMs);
  return {
    handle: (request) => {
      if (request !== 'stats') throw new Error(`unknown request ${request}`);
      return JSON.stringify(stats);
    },
    close: () => {
      clearInterval(timer);
      if (shm !== null) closeSync(shm);
      db.close();
    },
  };
}

serveOnThread(TASK, checkpointerHandler);
