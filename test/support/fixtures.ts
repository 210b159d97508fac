/** A richer provisioning document than the contract's example: three agents, a second tenant. */
import { exampleDoc } from './server.js';

export function teamDoc() {
  const doc = exampleDoc();
  const svc = doc.services[0];
  svc.agents.push(
    { id: 1002, name: 'Bala', number: '9100001002', sip: 'bala', countryCode: '91', skills: [{ skillId: 1, level: 3 }] },
    { id: 1003, name: 'Chitra', number: '9100001003', sip: 'chitra', countryCode: '91', skills: [] },
  );
  svc.queues.push({ id: 2, name: 'Sales' });
  doc.services.push({
    id: 202,
    name: 'Globex Sales',
    customer: 'globex',
    timezone: 'UTC',
    dids: ['8000000202'],
    skills: [],
    queues: [{ id: 1, name: 'Main' }],
    webhook: null,
    socketKey: 'k-202-secret',
    blocked: [],
    customers: [],
    agents: [{ id: 2001, name: 'Gita', number: '9200002001', sip: 'gita', countryCode: '1', skills: [] }],
  });
  doc.users.push(
    { id: 3, username: 'bala', password: 's3cret-bala', name: 'Bala', agentId: 1002, services: [101] },
    { id: 4, username: 'globex-admin', password: 's3cret-globex', name: 'Globex Admin', admin: true, services: [202] },
  );
  return doc;
}

export const ADMIN: [string, string] = ['acme-admin', 's3cret-admin'];
export const ASHA: [string, string] = ['asha', 's3cret-asha'];
export const BALA: [string, string] = ['bala', 's3cret-bala'];
export const GLOBEX: [string, string] = ['globex-admin', 's3cret-globex'];
