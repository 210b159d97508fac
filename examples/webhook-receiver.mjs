#!/usr/bin/env node
/**
 * A webhook receiver that verifies Standard Webhooks signatures (CONTRACT section 7) with node:crypto
 * only, so it runs wherever Node does, with nothing to install.
 *
 *   WEBHOOK_SECRET=whsec_... PORT=9100 node examples/webhook-receiver.mjs
 *
 * Defaults match examples/provisioning.json (http://127.0.0.1:9100/hook and its secret). A delivery
 * to 127.0.0.1 is refused by the platform unless it runs with WEBHOOK_ALLOW_PRIVATE=true.
 * Answers 204 to a verified delivery (printed as one JSON line), 401 to a bad or stale signature.
 * Deliveries are at least once: a repeated webhook-id is acknowledged and not printed again.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';

const SECRET = process.env.WEBHOOK_SECRET ?? 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const PORT = Number(process.env.PORT ?? 9100);
const HOST = process.env.HOST ?? '127.0.0.1';
const TOLERANCE_S = 5 * 60;

/** The HMAC key: the base64 part of a whsec_ secret, else the secret's UTF-8 bytes. */
const key = SECRET.startsWith('whsec_') ? Buffer.from(SECRET.slice(6), 'base64') : Buffer.from(SECRET, 'utf8');

/** True when one of the signatures in `webhook-signature` is ours for this id, timestamp and exact body. */
export function verify(headers, body, nowS = Math.floor(Date.now() / 1000)) {
  const id = headers['webhook-id'];
  const timestamp = headers['webhook-timestamp'];
  const signatures = headers['webhook-signature'];
  if (!id || !timestamp || !signatures || !/^\d+$/.test(timestamp)) return false;
  // An old (or future) timestamp is a replay, whatever its signature.
  if (Math.abs(nowS - Number(timestamp)) > TOLERANCE_S) return false;
  const expected = createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest();
  return signatures.split(' ').some((entry) => {
    const [version, sig] = entry.split(',');
    if (version !== 'v1' || !sig) return false;
    const given = Buffer.from(sig, 'base64');
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}

const seen = new Set();

createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks).toString('utf8');
    if (req.method !== 'POST' || !verify(req.headers, body)) {
      console.error(`refused ${req.method} ${req.url}: missing or bad signature`);
      res.writeHead(401).end();
      return;
    }
    const id = req.headers['webhook-id'];
    if (!seen.has(id)) {
      seen.add(id);
      console.log(JSON.stringify({ webhookId: id, path: req.url, payload: JSON.parse(body) }));
    }
    res.writeHead(204).end();
  });
}).listen(PORT, HOST, () => console.error(`webhook receiver on http://${HOST}:${PORT} (any path)`));
