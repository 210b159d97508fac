/**
 * What the routes answer, as JSON Schema for the OpenAPI document (the spec's resources and the
 * contract's operator answers). route.ts renders the answers; these describe them.
 */
import type { Answer, JsonSchema } from './route.js';

const int = { type: 'integer' } as const;
const str = { type: 'string' } as const;
const bool = { type: 'boolean' } as const;
const nullable = (s: JsonSchema): JsonSchema => ({ ...s, nullable: true });
const obj = (properties: Record<string, JsonSchema>, description?: string): JsonSchema => ({
  type: 'object',
  ...(description ? { description } : {}),
  properties,
});
const arrayOf = (items: JsonSchema): JsonSchema => ({ type: 'array', items });
const uuid = { type: 'string', format: 'uuid' } as const;

export const textAnswer = (text: string, example?: string): Answer => ({ text, example });
export const json = (schema: JsonSchema, description?: string): Answer => ({ json: schema, description });

export const TRUE: Answer = json({ type: 'boolean', enum: [true] }, 'true');
export const SUCCESS: Answer = textAnswer('Success', 'Success');

/** GET /api/v1/queues (CONTRACT section 17). */
export const queuesAnswer: JsonSchema = arrayOf(obj({
  queueId: int,
  name: str,
  waiting: arrayOf(obj({
    xnid: str,
    number: str,
    position: { type: 'integer', description: "the caller's place in the queue, 1 = next" },
    waitSeconds: int,
    priority: { type: 'integer', description: "the caller's customer priority" },
  })),
  longestWaitSeconds: int,
  agentsFree: { type: 'integer', description: 'free agents who could take a caller joining the queue now' },
  expectedWaitSeconds: { type: 'number', nullable: true, description: 'estimated wait of a caller joining now; null without a basis' },
}, 'a queue now'));

export const agentRecordSchema = obj({
  id: int,
  number: str,
  number1: nullable(str),
  name: str,
  status: { type: 'integer', description: 'agent state (spec: States and transitions)' },
  sip: str,
  time: { type: 'integer', description: 'epoch milliseconds of the last state change' },
  active: bool,
  country_code: str,
  svc_id: int,
  user_id: nullable(int),
  call_txn_id: { type: 'string', description: 'comma-separated call ids' },
  bind_count: int,
  customer_bound_trunk: nullable(str),
}, 'agent record');

export const actionResult = obj({ isError: { type: 'boolean', enum: [false] }, callTxnId: uuid }, 'action result');

export const callSummary = obj({
  duration: { type: 'string', description: 'seconds' },
  receivedBy: nullable(str),
  note: str,
  disposition: { type: 'string', description: 'uppercase, e.g. MISSED' },
  xnid: uuid,
  recording: nullable({ type: 'string', description: 'signed recording URL' }),
  time: { type: 'string', description: 'YYYY-MM-DDHH:MM:SS in the service timezone' },
  callType: { type: 'string', description: 'INBOUND or OUTBOUND' },
  ivrData: str,
  callback: { type: 'boolean', description: 'present (true) when the caller asked for a callback while waiting' },
  'callback-of': { type: 'string', description: 'present on a callback: the id of the call that asked for it' },
}, 'call summary');

export const customerBasic = obj({ number: str, note: str, address: str, name: str }, 'customer details (basic)');
export const customerDetailed = obj({
  crc: arrayOf(callSummary),
  crm: obj({
    id: int,
    svc_id: int,
    recent_txn_id: { type: 'string', description: 'comma-separated call ids, newest first' },
    dnd: bool,
    name: str,
    country_code: str,
    number: str,
    address: str,
    email: nullable(str),
    block: nullable(bool),
    block_reason: nullable(str),
    blocked_by: nullable(str),
    blocked_date: nullable(str),
    update_time: int,
  }),
}, 'customer details (detailed=true)');

export const loginInfoSchema = obj({ agentId: nullable(int), isAdmin: bool, serviceId: int }, 'login info');

export const userRecord = obj({
  id: int,
  name: str,
  password: { type: 'string', description: 'SHA-256 hex digest of the stored hash' },
  email: nullable(str),
  number: nullable(str),
  active: bool,
  username: str,
  verified: bool,
  login_id: str,
}, 'user record');

export const subscriberRecord = obj({
  id: int,
  force: bool,
  url: str,
  registered: bool,
  is_registered: bool,
  agent_id: int,
  svc_id: int,
  auth_key: str,
  device_id: str,
  channel_type: str,
  register_time: int,
  updated_time: int,
  event_mask: { type: 'integer', description: 'the six 0/1 digits of CustomerRing, CustomerUp, CustomerHangup, AgentRing, AgentUp, AgentHangup read as a decimal integer (000010 is 10)' },
  custom_event: nullable(str),
}, 'subscriber record');

export const dashboardAnswer = obj({
  isSupervisor: bool,
  userName: str,
  serviceName: str,
  svcId: int,
  agents: arrayOf(agentRecordSchema),
  svcSkills: arrayOf(obj({ id: int, name: str, index: int, svc_id: int })),
  dids: arrayOf(str),
  agentsData: arrayOf(obj({
    skills: arrayOf(obj({ id: int, agent_id: int, skill_id: int, skill_level: int })),
    number: str,
    name: str,
    id: int,
    sip: str,
    status: str,
  })),
  callStats: obj({ totalCalls: int, inIvr: int, ibCalls: int, obCalls: int }),
  customersInQueue: obj({ data: { type: 'object', additionalProperties: true }, dataCount: str }),
  agentStats: obj({ freeAgents: int, busyAgents: int }),
}, 'dashboard');

const idToName = { type: 'object', additionalProperties: { type: 'string' } } as const;
export const transferDetails = obj({ svcid: int, queueid: nullable(int), queues: idToName, services: idToName, agents: idToName }, 'transfer details');

export const deliverySchema = obj({
  id: str,
  kind: { type: 'string', enum: ['webhook', 'subscriber'] },
  svcId: int,
  url: str,
  callid: nullable({ type: 'string', description: 'webhook deliveries' }),
  eventId: nullable({ type: 'string', description: 'subscriber deliveries' }),
  status: { type: 'string', enum: ['pending', 'delivered', 'failed'] },
  attempts: arrayOf(obj({ at: int, statusCode: nullable(int), error: nullable(str) })),
}, 'delivery');

export const campaignProgress = obj({
  svcId: int,
  campaignId: int,
  endTime: int,
  active: bool,
  total: int,
  dialled: int,
  answered: int,
  missed: int,
  pending: int,
  skipped: int,
  /** Contacts never dialled: the number is dnd or blocked (CONTRACT section 15). */
  dnc: int,
  dropped: int,
  uploads: int,
}, 'campaign progress');

export const smsSent = obj({ id: str, svcId: int, number: str, message: str, time: int }, 'an SMS the simulated gateway sent');

export { obj, arrayOf, int, str, bool, uuid, nullable };
