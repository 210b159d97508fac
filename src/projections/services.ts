/** Read model `services`: a service's provisioned configuration, by svcId. */
import type { ServiceProvisionedData } from '../domain/events.js';
import { projection, type Projection } from './projection.js';

export type ServiceDoc = ServiceProvisionedData & Record<string, unknown>;

export const servicesProjection: Projection<ServiceDoc> = projection({
  name: 'services',
  canHandle: ['ServiceProvisioned'],
  keys: (e) => [String(e.data.svcId)],
  evolve: (_doc, e) => ({ ...e.data }),
});
