/**
 * The sip bench's HTTP client, in a worker thread (off the platform's thread, as the calls suite's
 * is): places calls open-loop at the rate the parent asks (POST /api/v1/calls) and hangs up the calls
 * the parent names (signal=hangup), so the platform's thread does the platform's work only.
 */
import http from 'node:http';
import { parentPort, workerData } from 'node:worker_threads';
import { formPoster } from './form-post.js';

export interface SipClientOptions {
  url: string;
  authorization: string;
}

/** From the parent: place `total` calls at `rate` a second (numbers from `first`), or hang up a call. */
export type SipClientOrder = { step: { rate: number; total: number; first: number } } | { hangup: string };
/** To the parent: a call placed (`at`: sent, `answered`: its answer, both on performance.timeOrigin + now()), then the step's end. */
export type SipClientReport = { placed: string; id: string | null; at: number; answered: number } | { stepDone: true };

/** The number dialled for the n-th call of a run. */
export const benchNumber = (n: number): string => `98${String(n).padStart(7, '0')}5`;

if (parentPort && (workerData as { sip?: SipClientOptions } | null)?.sip) {
  const port = parentPort;
  const o = (workerData as { sip: SipClientOptions }).sip;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  const now = () => performance.timeOrigin + performance.now();
  const post = formPoster(agent, o.url, o.authorization);
  const step = async (rate: number, total: number, first: number) => {
    const answers: Promise<void>[] = [];
    const t0 = now();
    while (answers.length < total) {
      const due = Math.min(total, Math.floor(((now() - t0) / 1000) * rate) + 1);
      while (answers.length < due) {
        const number = benchNumber(first + answers.length);
        const at = now();
        answers.push(
          post('/api/v1/calls', `number=${number}`)
            .then((r) => (r.status === 200 ? (JSON.parse(r.text) as { id: string }).id : null))
            .catch(() => null)
            .then((id) => port.postMessage({ placed: number, id, at, answered: now() } satisfies SipClientReport)),
        );
      }
      await new Promise((r) => setTimeout(r, 1));
    }
    await Promise.all(answers);
    port.postMessage({ stepDone: true } satisfies SipClientReport);
  };
  port.on('message', (m: SipClientOrder) => {
    if ('hangup' in m) void post(`/api/v1/calls/${m.hangup}`, 'signal=hangup').catch(() => undefined);
    else void step(m.step.rate, m.step.total, m.step.first);
  });
}
