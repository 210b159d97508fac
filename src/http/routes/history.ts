/** Call history and CRM: agent-recent-calls, customer-recent-calls, customer-details. */
import { normalizePhone } from '../../domain/phone.js';
import type { JsonSchema, RouteRegistrar } from '../route.js';
import { defineRoute } from '../route.js';
import { json, arrayOf, callSummary, customerBasic, customerDetailed } from '../answers.js';
import { scopeService } from '../scope.js';
import { invalid, notFound } from '../../domain/errors.js';
import { getService } from '../../queries/services.js';
import { customerByNumber } from '../../queries/customers.js';
import { summaries } from '../../queries/calls.js';

/** One of the two answers and nothing else: every field present, no other (so `oneOf` tells them apart). */
const closed = (schema: JsonSchema): JsonSchema => ({ ...schema, required: Object.keys(schema.properties as object), additionalProperties: false });

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const recentParams = {
  recent_txn_id: { type: 'list', required: true, maxItems: 100, description: 'comma-separated call ids (at most 100)' },
  'svc-id': { type: 'integer', required: true, min: 1 },
} as const;



export const historyRoutes: RouteRegistrar = (app, ctx) => {
  for (const [url, summary] of [
    ['/api/v1/agent-recent-calls', "Summaries of an agent's recent calls (ids from the agent record's call_txn_id)"],
    ['/api/v1/customer-recent-calls', "Summaries of a customer's recent calls (ids from the customer's recent_txn_id)"],
  ] as const) {
    defineRoute(app, ctx, {
      method: 'GET',
      url,
      summary,
      tags: ['history'],
      auth: 'user',
      response: json(arrayOf(callSummary), 'the summaries of the calls found, in the order asked; unknown ids are left out'),
      params: recentParams,
      handler: async ({ p, user }) => {
        const svcId = scopeService(user, p['svc-id'], 'svc-id', true);
        for (const id of p.recent_txn_id) if (!UUID_RE.test(id)) throw invalid(`recent_txn_id: "${id}" is not a call id`);
        return summaries(ctx, svcId, p.recent_txn_id);
      },
    });
  }

  defineRoute(app, ctx, {
    method: 'GET',
    url: '/api/v1/customer-details',
    summary: 'A customer record; with detailed=true also its recent calls and CRM fields',
    tags: ['history'],
    auth: 'user',
    response: json({ oneOf: [closed(customerBasic), closed(customerDetailed)] }, 'basic details, or with detailed=true the recent calls and CRM fields'),
    params: {
      'customer-number': { type: 'phone', required: true },
      'svc-id': { type: 'integer', required: true, min: 1 },
      detailed: { type: 'boolean' },
    },
    handler: async ({ p, user }) => {
      const svcId = scopeService(user, p['svc-id'], 'svc-id', true);
      const number = p['customer-number'];
      const doc = await customerByNumber(ctx, svcId, number);
      if (!doc) throw notFound(`no customer with number ${number} in service ${svcId}`);
      const basic = { number: doc.number, note: doc.note, address: doc.address, name: doc.name };
      if (!p.detailed) return basic;
      const service = await getService(ctx, svcId);
      const blocked = service?.blocked.some((b) => normalizePhone(b) === normalizePhone(doc.number)) ?? false;
      return {
        crc: await summaries(ctx, svcId, doc.recentTxnIds),
        crm: {
          id: doc.id,
          svc_id: svcId,
          recent_txn_id: doc.recentTxnIds.join(','),
          dnd: doc.dnd,
          name: doc.name,
          country_code: doc.countryCode,
          number: doc.number,
          address: doc.address,
          email: doc.email,
          block: blocked ? true : null,
          block_reason: blocked ? 'blocklist' : null,
          blocked_by: blocked ? 'operator' : null,
          blocked_date: null,
          update_time: doc.updateTime,
        },
      };
    },
  });
};
