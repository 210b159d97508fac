/**
 * Issue 29 item 1: POST /calls and send-sms with an Idempotency-Key, in flight when the process is
 * killed (kill -9) and retried with the same key after the restart, run at most once whatever the
 * moment of the kill, and the retries are answered within seconds (not after a dead process's claim).
 */
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteEventStore } from '../../src/gateways/event-store/sqlite.js';
import { teamDoc } from '../support/fixtures.js';
import { ADMIN_AUTH, PlatformProcess, buildPlatform, type Build } from '../support/processes.js';
import { until } from '../support/until.js';

let build: Build;
const running: PlatformProcess[] = [];

beforeAll(() => {
  build = buildPlatform();
}, 180_000);

afterAll(async () => {
  for (const p of running) await p.ensureDead();
  build.remove();
});

async function start(dataDir: string, env: Record<string, string> = {}) {
  const p = await PlatformProcess.onDataDir(build, dataDir, { SIM_ANSWER_MS: '50', ...env });
  running.push(p);
  return p;
}

interface Sent {
  kind: 'call' | 'sms';
  key: string;
  number: string;
  /** The answer (call id or SMS id) when the first process acknowledged it. */
  acked?: string;
}

const RETRY_DEADLINE_MS = 15_000;

function request(p: PlatformProcess, r: Sent, signal?: AbortSignal) {
  const body: Record<string, string> = r.kind === 'call' ? { number: r.number } : { number: r.number, message: 'idempotent', 'service-id': '101' };
  return p.fetch(r.kind === 'call' ? '/api/v1/calls' : '/api/v1/send-sms', {
    method: 'POST',
    headers: { ...ADMIN_AUTH, 'content-type': 'application/x-www-form-urlencoded', 'idempotency-key': r.key },
    body: new URLSearchParams(body).toString(),
    signal,
  });
}

const answerOf = async (r: Sent, res: Response) => (r.kind === 'call' ? ((await res.json()) as { id: string }).id : await res.text());

describe('Idempotency-Key across a kill -9', () => {
  it('calls and SMS in flight at the kill, retried with their keys after the restart, run at most once, answered within seconds', async () => {
    const dataDir = build.tempDir('data-');
    // Provisioned and projected, then stopped cleanly.
    const setup = await start(dataDir, { PROVISION_FILE: build.writeJson(teamDoc()) });
    expect((await request(setup, { kind: 'sms', key: randomUUID(), number: '9760000000' })).status).toBe(200);
    setup.proc.kill('SIGTERM');
    expect((await setup.exited).code).toBe(0);
    // The widest window there is: an API process whose read models lag (here no projector at all)
    // has appended each command's events but not yet answered, nor kept the answer, when it dies.
    const first = await start(dataDir, { ROLES: 'api' });
    const sent: Sent[] = Array.from({ length: 24 }, (_, i) => ({ kind: i % 2 ? 'sms' : 'call', key: randomUUID(), number: `97${i % 2 ? 2 : 1}${String(i).padStart(7, '0')}` }));
    const pending = sent.map((r) => request(first, r).then(async (res) => void (res.status === 200 && (r.acked = await answerOf(r, res))), () => undefined));
    const log = new SqliteEventStore(path.join(dataDir, 'events.db'));
    await until(async () => {
      const numbers = new Set((await log.readAll({ maxCount: 1_000_000 })).map((e) => (e.data as { customerNumber?: string; number?: string }).customerNumber ?? (e.data as { number?: string }).number));
      return sent.every((r) => numbers.has(r.number));
    }, 'every request appended', 30_000, 20);
    await log.close();
    await first.kill9();
    await Promise.all(pending);

    const restarted = await start(dataDir);
    const inFlight = sent.filter((r) => !r.acked);
    const retried = sent;
    const answers = await Promise.all(
      retried.map(async (r) => {
        const t0 = Date.now();
        const res = await request(restarted, r, AbortSignal.timeout(RETRY_DEADLINE_MS + 5000));
        const answer = res.status === 200 ? await answerOf(r, res) : `${res.status} ${await res.text()}`;
        return { r, status: res.status, answer, ms: Date.now() - t0 };
      }),
    );
    const events = new SqliteEventStore(path.join(dataDir, 'events.db'));
    try {
      const all = await events.readAll({ maxCount: 1_000_000 });
      const ids = new Map<string, string[]>();
      for (const e of all) {
        const d = e.data as { customerNumber?: string; number?: string; xnid?: string; id?: string };
        if (e.type === 'CallStarted') ids.set(d.customerNumber!, [...(ids.get(d.customerNumber!) ?? []), d.xnid!]);
        if (e.type === 'SmsRequested') ids.set(d.number!, [...(ids.get(d.number!) ?? []), d.id!]);
      }
      const twice = retried.filter((r) => (ids.get(r.number)?.length ?? 0) > 1);
      const slowest = Math.max(...answers.map((a) => a.ms));
      console.log(
        `kill -9 with ${inFlight.length} requests in flight (${inFlight.filter((r) => r.kind === 'call').length} calls, ${inFlight.filter((r) => r.kind === 'sms').length} SMS), ` +
          `${retried.length} retried: ${twice.length} ran twice; slowest retry ${slowest} ms`,
      );
      expect(inFlight.length).toBe(sent.length);
      expect(twice.map((r) => `${r.kind} ${r.number}: ${ids.get(r.number)!.join(', ')}`)).toEqual([]);
      for (const a of answers) {
        expect(a.status, a.answer).toBe(200);
        expect(a.ms).toBeLessThan(RETRY_DEADLINE_MS);
        // The retry answers the one call or SMS the log holds for it, the acknowledged one if any.
        expect(ids.get(a.r.number)).toEqual([a.answer]);
        if (a.r.acked) expect(a.answer).toBe(a.r.acked);
      }
      // Nothing else ran twice either.
      for (const r of sent) expect(ids.get(r.number)?.length ?? 0).toBeLessThanOrEqual(1);
    } finally {
      await events.close();
    }
  }, 180_000);
});
