/** Every read model the projector maintains. */
import type { Projection } from './projection.js';
import { servicesProjection } from './services.js';
import { usersProjection, usernamesProjection } from './users.js';
import { customersProjection } from './customers.js';
import { agentsProjection } from './agents.js';
import { smsProjection } from './sms.js';
import { campaignsProjection, campaignContactsProjection } from './campaigns.js';
import { callsProjection, callStatsProjection, inIvrProjection, meteringProjection, queueCallbacksProjection, queuedCallersProjection } from './calls.js';
import { deliveriesProjection } from './deliveries.js';
import { subscribersProjection } from './subscribers.js';
import { callOutcomesProjection } from './call-outcomes.js';
import { activeCallsProjection } from './active-calls.js';
import { queueAlertsProjection } from './queue-alerts.js';

export const projections: Projection<any>[] = [
  servicesProjection,
  usersProjection,
  usernamesProjection,
  customersProjection,
  agentsProjection,
  callsProjection,
  callStatsProjection,
  inIvrProjection,
  queuedCallersProjection,
  meteringProjection,
  smsProjection,
  campaignsProjection,
  campaignContactsProjection,
  deliveriesProjection,
  subscribersProjection,
  callOutcomesProjection,
  activeCallsProjection,
  queueCallbacksProjection,
  queueAlertsProjection,
];
