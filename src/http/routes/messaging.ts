/** OTP (send and validate) and click2call (CONTRACT sections 3 and 8). */
import type { RouteRegistrar } from '../route.js';
import { defineRoute, text } from '../route.js';
import { TRUE, json, textAnswer, actionResult } from '../answers.js';
import { scopeService } from '../scope.js';
import { issueOtp, verifyOtp } from '../../commands/otp/service.js';
import { streams } from '../../domain/streams.js';
import { outboundRequest } from '../call-request.js';
import { outboundCallStarted } from '../../commands/call/place.js';
import { requestSms } from '../../commands/sms/request.js';
import { idFromKey } from '../idempotency.js';

export const messagingRoutes: RouteRegistrar = (app, ctx) => {
  defineRoute(app, ctx, {
    method: 'POST',
    url: '/api/v1/send-sms',
    summary: 'Send an SMS; answers its id at once, sending runs as a job',
    tags: ['messaging'],
    auth: 'user',
    response: textAnswer('the SMS id (a UUID)', '6f1c2a43-79b8-4a40-9a65-0d3ab7f2c001'),
    params: {
      number: { type: 'phone', required: true },
      message: { type: 'string', required: true, minLength: 1, maxLength: 1600 },
      'service-id': { type: 'integer', required: true, min: 1 },
      'country-code': { type: 'string', maxLength: 8 },
      'call-txn-id': { type: 'string', maxLength: 100, description: 'call transaction id of an associated call' },
      tries: { type: 'integer', min: 1, max: 5 },
    },
    handler: async ({ p, user, idempotency }) => {
      const svcId = scopeService(user, p['service-id'], 'service-id', true);
      const { id, position } = await requestSms(ctx, {
        // A retried request (same Idempotency-Key) names the same SMS: requested, and sent, once.
        id: idempotency ? idFromKey(idempotency, 'sms') : undefined,
        svcId,
        number: p.number,
        message: p.message,
        countryCode: p['country-code'],
        callTxnId: p['call-txn-id'],
        tries: p.tries,
        userId: user.id,
      });
      await ctx.sync.waitFor(position);
      return text(id);
    },
  });

  defineRoute(app, ctx, {
    method: 'GET',
    url: '/api/v1/otp',
    summary: 'Send a one-time password by SMS; answers the code',
    tags: ['messaging'],
    auth: 'user',
    response: textAnswer('the OTP code: 6 digits', '482913'),
    params: {
      number: { type: 'phone', required: true },
      keyword: { type: 'string', maxLength: 50, description: 'purpose of the code; default Click2Call' },
      'service-id': { type: 'integer', min: 1 },
    },
    handler: async ({ p, user }) => {
      const svcId = scopeService(user, p['service-id'], 'service-id');
      const { code, position } = await issueOtp(ctx, svcId, p.number, p.keyword?.trim() || 'Click2Call', user.id);
      await ctx.sync.waitFor(position);
      return text(code);
    },
  });

  defineRoute(app, ctx, {
    method: 'POST',
    url: '/api/v1/otp',
    summary: 'Validate (and spend) a one-time password',
    tags: ['messaging'],
    auth: 'user',
    response: TRUE,
    params: {
      number: { type: 'phone', required: true },
      otp: { type: 'string', required: true, maxLength: 16, in: 'query', description: 'the code GET /otp answered; clients put it in the query string' },
      'service-id': { type: 'integer', min: 1 },
    },
    handler: async ({ p, user }) => {
      const svcId = scopeService(user, p['service-id'], 'service-id');
      await ctx.sync.waitFor(await verifyOtp(ctx, svcId, p.number, p.otp.trim(), 'validate'));
      return true;
    },
  });

  defineRoute(app, ctx, {
    method: 'POST',
    url: '/api/v1/click2call',
    summary: 'Spend a valid OTP and place the call POST /calls would, from the customer to a free agent',
    tags: ['messaging', 'calls'],
    auth: 'user',
    response: json(actionResult),
    params: {
      number: { type: 'phone', required: true },
      otp: { type: 'string', required: true, maxLength: 16, in: 'query', description: 'the code GET /otp answered; clients put it in the query string' },
      'service-id': { type: 'integer', min: 1 },
      'country-code': { type: 'string', maxLength: 8 },
    },
    handler: async ({ p, user }) => {
      // Checks that would refuse the call (scope, a busy named agent) come before the code is spent.
      const request = await outboundRequest(ctx, user, { number: p.number, serviceId: p['service-id'], countryCode: p['country-code'] });
      const started = await outboundCallStarted(ctx, { ...request, origin: 'click2call' });
      const position = await verifyOtp(ctx, request.svcId, p.number, p.otp.trim(), 'click2call', [
        { streamId: streams.call(started.xnid), events: [{ type: 'CallStarted', data: started }], expectedRevision: 'no_stream' },
      ]);
      await ctx.sync.waitFor(position);
      return { isError: false, callTxnId: started.xnid };
    },
  });
};
