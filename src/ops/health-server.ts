/**
 * Liveness and readiness for a process without the `api` role (HEALTH_PORT): the same two answers as
 * GET /healthz and /readyz of the API (src/http/routes/ops-health.ts), so an orchestrator can probe a
 * worker, projector or socket container the way it probes an api one. Nothing else is served.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Readiness } from './readiness.js';

const JSON_TYPE = 'application/json; charset=utf-8';

export interface HealthServer {
  port: number;
  close(): Promise<void>;
}

export async function startHealthServer(readiness: Readiness, host: string, port: number): Promise<HealthServer> {
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') return void res.writeHead(405, { allow: 'GET, HEAD' }).end();
    if (path === '/healthz') return void res.writeHead(200, { 'content-type': JSON_TYPE }).end('{"status":"ok"}');
    if (path !== '/readyz') return void res.writeHead(404, { 'content-type': JSON_TYPE }).end('{"status":"not found"}');
    readiness.check().then(
      (r) =>
        r.ready
          ? res.writeHead(200, { 'content-type': JSON_TYPE }).end('{"status":"ready"}')
          : res.writeHead(503, { 'content-type': JSON_TYPE }).end(JSON.stringify({ status: 'not ready', reason: r.reason })),
      (err) => res.writeHead(503, { 'content-type': JSON_TYPE }).end(JSON.stringify({ status: 'not ready', reason: String(err) })),
    );
  });
  // Probes are short requests: no idle keep-alive sockets holding close() up.
  server.keepAliveTimeout = 1000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
