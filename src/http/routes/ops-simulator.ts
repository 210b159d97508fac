/** Operator: the simulated switch's inbound calls and hangups, and metering (CONTRACT section 3). */
import type { RouteRegistrar } from '../route.js';
import { defineRoute } from '../route.js';
import { TRUE, json, obj, arrayOf, int, uuid, smsSent } from '../answers.js';
import { runCallCommand } from '../../commands/call/run.js';
import { invalid, notFound } from '../../domain/errors.js';
import { getCall, meteringOf } from '../../queries/calls.js';
import { getService } from '../../queries/services.js';
import { serviceOfDid, startInbound } from '../../commands/call/inbound.js';
import { needsMedia } from '../media-features.js';
import { readOutbox } from '../../gateways/sms/simulator.js';



export const simulatorRoutes: RouteRegistrar = (app, ctx) => {
  defineRoute(app, ctx, {
    method: 'POST',
    url: '/ops/v1/simulator/inbound',
    summary: 'A customer calls a DID',
    tags: ['operator'],
    auth: 'operator',
    response: json(obj({ xnid: uuid }), 'the id of the inbound call'),
    params: {
      did: { type: 'phone', required: true },
      from: { type: 'phone', required: true },
      ivr: { type: 'string', maxLength: 32, description: 'digits the caller keys in the IVR' },
    },
    handler: async ({ p }) => {
      needsMedia(ctx, "the simulator's inbound calls");
      if (p.ivr !== undefined && !/^[0-9*#]*$/.test(p.ivr)) throw invalid('ivr must be keypad digits');
      const service = await serviceOfDid(ctx, p.did);
      if (!service) throw notFound(`no service has DID ${p.did}`);
      const { xnid, position } = await startInbound(ctx, service, { did: p.did, from: p.from, ivr: p.ivr ?? '' });
      await ctx.sync.waitFor(position);
      return { xnid };
    },
  });

  defineRoute(app, ctx, {
    method: 'POST',
    url: '/ops/v1/simulator/hangup',
    summary: 'A party of a call hangs up',
    tags: ['operator'],
    auth: 'operator',
    response: TRUE,
    params: {
      xnid: { type: 'uuid', required: true },
      party: { type: 'string', required: true, enum: ['customer', 'agent'] },
    },
    handler: async ({ p }) => {
      needsMedia(ctx, "the simulator's hangups");
      if (!(await getCall(ctx, p.xnid))) throw notFound(`call ${p.xnid} not found`);
      await runCallCommand(ctx, p.xnid, { type: 'RequestSimulatedHangup', party: p.party as 'customer' | 'agent', time: ctx.now() });
      return true;
    },
  });

  defineRoute(app, ctx, {
    method: 'GET',
    url: '/ops/v1/metering',
    summary: "A service's call counts: inbound, outbound, spam",
    tags: ['operator'],
    auth: 'operator',
    response: json(obj({ inbound: int, outbound: int, spam: int }), 'call counts'),
    params: { 'svc-id': { type: 'integer', required: true, min: 1 } },
    handler: async ({ p }) => {
      if (!(await getService(ctx, p['svc-id']))) throw notFound(`service ${p['svc-id']} not found`);
      const m = await meteringOf(ctx, p['svc-id']);
      return { inbound: m?.inbound ?? 0, outbound: m?.outbound ?? 0, spam: m?.spam ?? 0 };
    },
  });

  defineRoute(app, ctx, {
    method: 'GET',
    url: '/ops/v1/simulator/sms',
    summary: "The simulated SMS provider's outbox",
    tags: ['operator'],
    auth: 'operator',
    response: json(arrayOf(smsSent)),
    params: { number: { type: 'phone' } },
    handler: async ({ p }) => {
      const sent = await readOutbox(ctx.reads, p.number);
      return sent.map((m) => ({ id: m.id, svcId: m.svcId, number: m.number, message: m.message, time: m.time }));
    },
  });
};
