/** A contact centre's provisioning for the routing tests (CONTRACT section 17). */
export const ROUTING_ADMIN: [string, string] = ['rco-admin', 's3cret-rco-admin'];
export const VIP = '9876500555';

/** A contact centre: a general queue, an English queue with a skill and overflow, a priority queue. */
export function routingDoc(extra: { webhook?: { url: string; secret: string } | null } = {}) {
  return {
    services: [
      {
        id: 301,
        name: 'Routing Co',
        customer: 'rco',
        timezone: 'UTC',
        dids: ['8000000301'],
        skills: [{ id: 1, name: 'English' }, { id: 2, name: 'Hindi' }],
        queues: [
          { id: 1, name: 'General' },
          { id: 2, name: 'English', digits: '1', skillId: 1, overflowS: 2 },
          { id: 3, name: 'Priority', digits: '9', priority: 10 },
        ],
        webhook: extra.webhook ?? null,
        customers: [{ number: VIP, name: 'Vimala', priority: 5 }],
        agents: [
          { id: 3001, name: 'Anu', number: '9300003001', sip: 'anu', skills: [{ skillId: 1, level: 2 }] },
          { id: 3002, name: 'Babu', number: '9300003002', sip: 'babu', skills: [{ skillId: 1, level: 8 }, { skillId: 2, level: 1 }] },
          { id: 3003, name: 'Chetan', number: '9300003003', sip: 'chetan', skills: [] },
        ],
      },
    ],
    users: [
      { id: 31, username: ROUTING_ADMIN[0], password: ROUTING_ADMIN[1], admin: true, services: [301] },
      { id: 32, username: 'anu', password: 's3cret-anu', agentId: 3001, services: [301] },
    ],
  };
}
