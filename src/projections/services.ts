/** Read model `services`: a service's provisioned configuration, by svcId. */
import type { ServiceProvisionedData } from '../domain/events.js';
import type { Projection } from './projection.js';

export type ServiceDoc = ServiceProvisionedData & Record<string, unknown>;

export const servicesProjection: Projection<ServiceDoc> = {
  name: 'services',
  keys: (e) => (e.type === 'ServiceProvisioned' ? [String((e.data as ServiceProvisionedData).svcId)] : []),
  evolve: (_doc, e) => ({ ...(e.data as ServiceProvisionedData) }),
};
