/**
 * The supervisor's wallboard (CONTRACT section 13): `GET /wallboard?svc-id=` serves one static page
 * (public/wallboard, no build step) to admin credentials; the browser asks for them (Basic). The page
 * follows `GET /api/v1/events` and reads `GET /wallboard/state` (the service now, as JSON) on each event.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { RouteRegistrar } from '../route.js';
import { forbidden, invalid, notFound } from '../../domain/errors.js';
import { scopeService } from '../scope.js';
import { wallboard } from '../../queries/wallboard.js';

/** The repository's public/wallboard, found from src/http/routes, dist/src/http/routes or the working directory. */
function assetDir(): string | null {
  const starts = [import.meta.dirname, process.cwd()];
  for (let dir of starts) {
    for (let i = 0; i < 6; i++) {
      const candidate = path.join(dir, 'public', 'wallboard');
      if (existsSync(path.join(candidate, 'index.html'))) return candidate;
      dir = path.dirname(dir);
    }
  }
  return null;
}

const ASSETS: Record<string, string> = {
  'index.html': 'text/html; charset=utf-8',
  'wallboard.css': 'text/css; charset=utf-8',
  'wallboard.js': 'text/javascript; charset=utf-8',
};

// The page loads only its own script, style and same-origin data.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

function adminService(req: FastifyRequest): number {
  const user = req.user!;
  if (!user.admin) throw forbidden('the wallboard needs admin credentials');
  const raw = (req.query as Record<string, unknown> | undefined)?.['svc-id'];
  if (raw !== undefined && (typeof raw !== 'string' || !/^\d{1,15}$/.test(raw))) throw invalid('svc-id must be an integer');
  return scopeService(user, raw === undefined ? undefined : Number(raw));
}

export const wallboardRoutes: RouteRegistrar = (app, ctx) => {
  const dir = assetDir();
  if (!dir) ctx.logger.warn('public/wallboard not found: GET /wallboard answers 404');
  const files = new Map(dir ? Object.entries(ASSETS).map(([name, type]) => [name, { type, body: readFileSync(path.join(dir, name)) }]) : []);
  // Headers before the body: the hooks after send are synchronous, so nothing set after it is sent.
  const send = (reply: FastifyReply, name: string, headers: Record<string, string> = {}) => {
    const f = files.get(name);
    if (!f) throw notFound('the wallboard is not installed with this build (public/wallboard is missing)');
    return reply.type(f.type).header('cache-control', 'no-cache').header('x-content-type-options', 'nosniff').headers(headers).send(f.body);
  };

  app.get('/wallboard', { schema: { hide: true }, preValidation: app.basicAuth }, async (req, reply) => {
    adminService(req);
    return send(reply, 'index.html', { 'content-security-policy': CSP, 'referrer-policy': 'no-referrer' });
  });
  // Script and style hold no data: no credentials needed.
  app.get('/wallboard/wallboard.css', { schema: { hide: true } }, async (_req, reply) => send(reply, 'wallboard.css'));
  app.get('/wallboard/wallboard.js', { schema: { hide: true } }, async (_req, reply) => send(reply, 'wallboard.js'));

  app.get('/wallboard/state', { schema: { hide: true }, preValidation: app.basicAuth }, async (req, reply) => {
    const svcId = adminService(req);
    return reply.type('application/json; charset=utf-8').header('cache-control', 'no-store').send(JSON.stringify(await wallboard(ctx, svcId)));
  });
};
