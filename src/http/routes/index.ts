import type { FastifyInstance } from 'fastify';
import type { Context } from '../../context.js';
import { pingRoutes } from './ping.js';
import { loginRoutes } from './login.js';
import { userRoutes } from './user.js';
import { provisioningRoutes } from './ops-provisioning.js';
import { subscriberRoutes } from './subscriber.js';

export type RouteRegistrar = (app: FastifyInstance, ctx: Context) => void;

/** Every resource's routes; a new resource file adds itself here. */
export const routes: RouteRegistrar[] = [pingRoutes, loginRoutes, userRoutes, provisioningRoutes, subscriberRoutes];
