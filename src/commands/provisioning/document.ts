/** The provisioning document of CONTRACT section 3: schema, and checks a schema cannot express. */
import { Ajv, type ErrorObject } from 'ajv';
import { invalid } from '../../domain/errors.js';
import { callingHoursProblem, type CallingHours } from '../../domain/calling-hours.js';

export interface ProvisioningDocument {
  services: Array<{
    id: number;
    name: string;
    customer: string;
    timezone?: string;
    dids?: string[];
    skills?: Array<{ id: number; name: string }>;
    queues?: Array<{ id: number; name: string; digits?: string; skillId?: number; priority?: number; overflowS?: number; maxWaitS?: number; serviceLevelTarget?: number }>;
    webhook?: { url: string; secret: string } | null;
    socketKey?: string | null;
    blocked?: string[];
    callingHours?: CallingHours | null;
    customers?: Array<{ number: string; name?: string; address?: string; note?: string; email?: string | null; dnd?: boolean; priority?: number }>;
    agents?: Array<{
      id: number;
      name: string;
      number: string;
      sip?: string;
      /** The password of the agent's SIP phone (CONTRACT 16); stored for the registrar only, never read back. */
      sipPassword?: string;
      countryCode?: string;
      skills?: Array<{ skillId: number; level?: number }>;
    }>;
  }>;
  users: Array<{
    id: number;
    username: string;
    password: string;
    name?: string;
    email?: string | null;
    number?: string | null;
    admin?: boolean;
    agentId?: number | null;
    services: number[];
  }>;
}

const id = { type: 'integer', minimum: 1, maximum: 2147483647 };
const str = (max: number, min = 0) => ({ type: 'string', minLength: min, maxLength: max });
const phone = { type: 'string', pattern: '^\\+?[0-9]{6,15}$' };

const schema = {
  type: 'object',
  required: ['services'],
  properties: {
    services: {
      type: 'array',
      maxItems: 1000,
      items: {
        type: 'object',
        required: ['id', 'name', 'customer'],
        properties: {
          id,
          name: str(200, 1),
          customer: { type: 'string', minLength: 1, maxLength: 100, pattern: '^[A-Za-z0-9._-]+$' },
          timezone: str(64, 1),
          dids: { type: 'array', maxItems: 1000, items: phone },
          skills: {
            type: 'array',
            items: { type: 'object', required: ['id', 'name'], properties: { id, name: str(100, 1) } },
          },
          queues: {
            type: 'array',
            items: {
              type: 'object',
              required: ['id', 'name'],
              // Routing (CONTRACT section 17).
              properties: {
                id,
                name: str(100, 1),
                digits: { type: 'string', pattern: '^[0-9*#]{1,32}$' },
                skillId: id,
                priority: { type: 'integer', minimum: -1000000, maximum: 1000000 },
                overflowS: { type: 'integer', minimum: 0, maximum: 86400 },
                maxWaitS: { type: 'integer', minimum: 1, maximum: 86400 },
                serviceLevelTarget: { type: 'number', minimum: 0, maximum: 100 },
              },
            },
          },
          webhook: {
            anyOf: [
              { type: 'null' },
              {
                type: 'object',
                required: ['url', 'secret'],
                properties: { url: { type: 'string', pattern: '^https?://', maxLength: 2000 }, secret: str(500, 1) },
              },
            ],
          },
          // Letters, digits, `-` and `_` (CONTRACT section 14): `:` and `@` frame the socket's first message.
          socketKey: { anyOf: [{ type: 'null' }, { type: 'string', minLength: 1, maxLength: 200, pattern: '^[A-Za-z0-9_-]+$' }] },
          blocked: { type: 'array', maxItems: 100000, items: phone },
          // The times themselves are checked below, with a message that says what a valid one is.
          callingHours: {
            anyOf: [
              { type: 'null' },
              { type: 'object', required: ['from', 'to'], properties: { from: { type: 'string' }, to: { type: 'string' } } },
            ],
          },
          customers: {
            type: 'array',
            maxItems: 100000,
            items: {
              type: 'object',
              required: ['number'],
              properties: {
                number: phone,
                name: str(200),
                address: str(500),
                note: str(2000),
                email: { anyOf: [{ type: 'null' }, str(320)] },
                dnd: { type: 'boolean' },
                priority: { type: 'integer', minimum: -1000000, maximum: 1000000 },
              },
            },
          },
          agents: {
            type: 'array',
            maxItems: 10000,
            items: {
              type: 'object',
              required: ['id', 'name', 'number'],
              properties: {
                id,
                name: str(100, 1),
                number: phone,
                sip: str(100, 1),
                sipPassword: str(128, 8),
                countryCode: { type: 'string', pattern: '^[0-9]{1,4}$' },
                skills: {
                  type: 'array',
                  items: {
                    type: 'object',
                    required: ['skillId'],
                    properties: { skillId: id, level: { type: 'integer', minimum: 0, maximum: 100 } },
                  },
                },
              },
            },
          },
        },
      },
    },
    users: {
      type: 'array',
      maxItems: 10000,
      items: {
        type: 'object',
        required: ['id', 'username', 'password', 'services'],
        properties: {
          id,
          username: { type: 'string', minLength: 1, maxLength: 100, pattern: '^[^:\\s]+$' },
          password: str(1000, 1),
          name: str(200),
          email: { anyOf: [{ type: 'null' }, str(320)] },
          number: { anyOf: [{ type: 'null' }, phone] },
          admin: { type: 'boolean' },
          agentId: { anyOf: [{ type: 'null' }, id] },
          services: { type: 'array', minItems: 1, items: id },
        },
      },
    },
  },
} as const;

const ajv = new Ajv({ allErrors: false, strict: false });
const validateSchema = ajv.compile(schema);

function fieldPath(instancePath: string): string {
  // "/services/0/agents/1/number" -> "services[0].agents[1].number"
  return instancePath
    .split('/')
    .filter(Boolean)
    .map((p, i) => (/^\d+$/.test(p) ? `[${p}]` : i === 0 ? p : `.${p}`))
    .join('');
}

function describe(err: ErrorObject): string {
  const at = fieldPath(err.instancePath) || 'document';
  if (err.keyword === 'required') return `${at === 'document' ? '' : `${at}.`}${(err.params as { missingProperty: string }).missingProperty} is required`;
  if (err.keyword === 'pattern') return `${at} has an invalid format`;
  return `${at} ${err.message ?? 'is invalid'}`;
}

/**
 * The error worth reporting. A nullable field (`anyOf: [null, value]`) fails with one error per
 * branch plus the anyOf itself; "must be null" would mislead, the value branch names the fault.
 */
function pickError(errors: ErrorObject[]): ErrorObject {
  const useful = errors.filter((e) => e.keyword !== 'anyOf' && !(e.keyword === 'type' && (e.params as { type?: unknown }).type === 'null'));
  const pool = useful.length > 0 ? useful : errors;
  return pool.reduce((best, e) => (e.instancePath.length > best.instancePath.length ? e : best));
}

export function isValidTimezone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

/** Known state the document is checked against (records provisioned before). */
export interface ExistingState {
  serviceCustomer(svcId: number): string | undefined;
  agentExists(svcId: number, agentId: number): boolean;
  userIdByUsername(username: string): number | undefined;
}

/** Validates the whole document; throws INVALID_PARAMETER naming the first bad field. */
export function validateProvisioning(input: unknown, existing: ExistingState): ProvisioningDocument {
  if (!validateSchema(input)) throw invalid(`provisioning document: ${describe(pickError(validateSchema.errors!))}`);
  const doc = input as unknown as ProvisioningDocument;
  doc.users ??= [];
  const seenSvc = new Set<number>();
  const docCustomer = new Map<number, string>();
  doc.services.forEach((s, i) => {
    const at = `services[${i}]`;
    if (seenSvc.has(s.id)) throw invalid(`${at}.id ${s.id} appears twice`);
    seenSvc.add(s.id);
    const before = existing.serviceCustomer(s.id);
    if (before !== undefined && before !== s.customer) {
      throw invalid(`${at}.customer: service ${s.id} belongs to customer "${before}"`);
    }
    docCustomer.set(s.id, s.customer);
    if (s.timezone !== undefined && !isValidTimezone(s.timezone)) throw invalid(`${at}.timezone "${s.timezone}" is not a known time zone`);
    if (s.callingHours) {
      const problem = callingHoursProblem(s.callingHours);
      if (problem) throw invalid(`${at}.callingHours.${problem}`);
    }
    const unique = <T>(items: T[] | undefined, key: (t: T) => unknown, what: string) => {
      const seen = new Set<unknown>();
      (items ?? []).forEach((item, j) => {
        const k = key(item);
        if (seen.has(k)) throw invalid(`${at}.${what}[${j}] duplicates ${String(k)}`);
        seen.add(k);
      });
    };
    unique(s.skills, (x) => x.id, 'skills');
    unique(s.queues, (x) => x.id, 'queues');
    unique(s.agents, (x) => x.id, 'agents');
    unique(s.agents, (x) => x.sip ?? `agent-${x.id}`, 'agents');
    unique(s.customers, (x) => x.number, 'customers');
    const skillIds = new Set((s.skills ?? []).map((k) => k.id));
    (s.queues ?? []).forEach((q, j) => {
      if (q.skillId !== undefined && !skillIds.has(q.skillId)) throw invalid(`${at}.queues[${j}].skillId ${q.skillId} is not a skill of service ${s.id}`);
    });
    unique((s.queues ?? []).filter((q) => q.digits !== undefined), (x) => x.digits, 'queues digits');
    (s.agents ?? []).forEach((a, j) =>
      (a.skills ?? []).forEach((k, n) => {
        if (!skillIds.has(k.skillId)) throw invalid(`${at}.agents[${j}].skills[${n}].skillId ${k.skillId} is not a skill of service ${s.id}`);
      }),
    );
    if (s.webhook) {
      try {
        new URL(s.webhook.url);
      } catch {
        throw invalid(`${at}.webhook.url is not a URL`);
      }
    }
  });
  const seenUser = new Set<number>();
  const seenName = new Set<string>();
  doc.users.forEach((u, i) => {
    const at = `users[${i}]`;
    if (seenUser.has(u.id)) throw invalid(`${at}.id ${u.id} appears twice`);
    seenUser.add(u.id);
    if (seenName.has(u.username)) throw invalid(`${at}.username "${u.username}" appears twice`);
    seenName.add(u.username);
    const owner = existing.userIdByUsername(u.username);
    if (owner !== undefined && owner !== u.id) throw invalid(`${at}.username "${u.username}" is taken by another user`);
    let customer: string | undefined;
    u.services.forEach((svcId, n) => {
      const c = docCustomer.get(svcId) ?? existing.serviceCustomer(svcId);
      if (c === undefined) throw invalid(`${at}.services[${n}]: service ${svcId} is not provisioned`);
      if (customer !== undefined && c !== customer) throw invalid(`${at}.services: services of one user must belong to one customer`);
      customer = c;
    });
    if (u.email && !/^[^@\s]+@[^@\s]+$/.test(u.email)) throw invalid(`${at}.email is not an e-mail address`);
    if (u.agentId != null) {
      const inDoc = doc.services.some((s) => u.services.includes(s.id) && (s.agents ?? []).some((a) => a.id === u.agentId));
      const before = u.services.some((svcId) => existing.agentExists(svcId, u.agentId!));
      if (!inDoc && !before) throw invalid(`${at}.agentId ${u.agentId} is not an agent of the user's services`);
    }
  });
  return doc;
}
