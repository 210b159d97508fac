/** A real HTTP receiver on 127.0.0.1 for delivery tests: records every request, answers as told. */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  path: string;
  headers: Record<string, string>;
  body: string;
  at: number;
}

/** Decides the answer to a request: a status code, or 'hang' to never answer. */
export type Responder = (req: Received, index: number) => number | 'hang';

export interface Receiver {
  url: string;
  received: Received[];
  respond: Responder;
  close(): Promise<void>;
}

/** `host`: the address it listens on (a test network's bridge address), 127.0.0.1 by default. */
export async function startReceiver(respond: Responder = () => 200, host = '127.0.0.1'): Promise<Receiver> {
  const received: Received[] = [];
  const hanging = new Set<http.ServerResponse>();
  const receiver: Receiver = {
    url: '',
    received,
    respond,
    close: () =>
      new Promise<void>((resolve) => {
        for (const res of hanging) res.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r: Received = {
        path: req.url ?? '/',
        headers: Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(',') : (v ?? '')])),
        body: Buffer.concat(chunks).toString('utf8'),
        at: Date.now(),
      };
      received.push(r);
      const answer = receiver.respond(r, received.length - 1);
      if (answer === 'hang') {
        hanging.add(res);
        return;
      }
      res.writeHead(answer, { 'content-type': 'text/plain' }).end(answer < 300 ? 'ok' : 'no');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  receiver.url = `http://${host}:${(server.address() as AddressInfo).port}`;
  return receiver;
}
