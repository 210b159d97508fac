import type { RouteRegistrar } from '../route.js';
import { pingRoutes } from './ping.js';
import { loginRoutes } from './login.js';
import { userRoutes } from './user.js';
import { provisioningRoutes } from './ops-provisioning.js';
import { agentRoutes } from './agents.js';
import { dashboardRoutes } from './dashboard.js';
import { callRoutes } from './calls.js';
import { historyRoutes } from './history.js';
import { simulatorRoutes } from './ops-simulator.js';
import { recordingRoutes } from './recordings.js';
import { messagingRoutes } from './messaging.js';
import { campaignOpsRoutes } from './ops-campaigns.js';
import { deliveriesRoutes } from './ops-deliveries.js';
import { subscriberRoutes } from './subscriber.js';
import { dialerRoutes } from './dialer.js';
import { healthRoutes } from './ops-health.js';
import { eventRoutes } from './events.js';
import { wallboardRoutes } from './wallboard.js';
import { analyticsRoutes } from './analytics.js';
import { queueRoutes } from './queues.js';

export type { RouteRegistrar };

/** Every resource's routes; a new resource file adds itself here. */
export const routes: RouteRegistrar[] = [
  pingRoutes,
  loginRoutes,
  userRoutes,
  agentRoutes,
  dashboardRoutes,
  callRoutes,
  historyRoutes,
  messagingRoutes,
  dialerRoutes,
  recordingRoutes,
  provisioningRoutes,
  simulatorRoutes,
  campaignOpsRoutes,
  deliveriesRoutes,
  subscriberRoutes,
  healthRoutes,
  eventRoutes,
  wallboardRoutes,
  analyticsRoutes,
  queueRoutes,
];
