#!/usr/bin/env node
/**
 * An event socket client (CONTRACT section 7): prints a service's live call events, one JSON line each.
 *
 *   SVC_ID=101 SOCKET_KEY=k-101-secret node examples/socket-client.mjs
 *
 * Defaults match examples/provisioning.json and the server's defaults (127.0.0.1:8989). It reconnects
 * after a dropped connection and stops on a wrong key. With SOCKET_CURSOR (`now`, `0` or a cursor an
 * event carried) it asks for a resumable stream (CONTRACT section 14) and, after a drop, resumes right
 * after the last event it printed: nothing lost, nothing repeated. Without it, events sent while it was
 * away are not replayed.
 */
import net from 'node:net';
import { createInterface } from 'node:readline';

const HOST = process.env.SOCKET_HOST ?? '127.0.0.1';
const PORT = Number(process.env.SOCKET_PORT ?? 8989);
const SVC_ID = process.env.SVC_ID ?? '101';
const KEY = process.env.SOCKET_KEY ?? 'k-101-secret';

let retryMs = 500;
// The resume point: the last cursor printed, or where SOCKET_CURSOR said to start.
let cursor = process.env.SOCKET_CURSOR || null;

function connect() {
  const socket = net.connect(PORT, HOST);
  let accepted = false;
  let stopped = false;
  socket.setKeepAlive(true, 30_000);
  socket.on('connect', () => socket.write(`${SVC_ID}:${KEY}${cursor ? `@${cursor}` : ''}\n`));
  const lines = createInterface({ input: socket });
  // readline repeats the socket's errors; the socket's own handler below reports them.
  lines.on('error', () => {});
  lines.on('line', (line) => {
    if (!accepted) {
      if (line === 'Success') {
        accepted = true;
        retryMs = 500;
        console.error(`subscribed to service ${SVC_ID} on ${HOST}:${PORT}`);
      } else if (line === 'Invalid cursor') {
        console.error(`the server does not know cursor "${cursor}" for service ${SVC_ID}`);
        stopped = true;
        process.exitCode = 1;
      } else if (line === 'Unauthorized') {
        console.error(`the server refused key "${KEY}" for service ${SVC_ID}`);
        stopped = true;
        process.exitCode = 1;
      }
      return;
    }
    if (line === 'pong') return;
    try {
      const event = JSON.parse(line);
      console.log(JSON.stringify(event));
      if (typeof event.cursor === 'string') cursor = event.cursor;
    } catch {
      console.error(`not JSON: ${line}`);
    }
  });
  socket.on('error', (err) => console.error(`socket: ${err.message}`));
  socket.on('close', () => {
    if (stopped) return;
    console.error(`connection closed; reconnecting in ${retryMs} ms`);
    setTimeout(connect, retryMs);
    retryMs = Math.min(retryMs * 2, 10_000);
  });
}

connect();
