/** Every read model the projector maintains. */
import type { Projection } from './projection.js';
import { servicesProjection } from './services.js';
import { usersProjection, usernamesProjection } from './users.js';
import { customersProjection } from './customers.js';
import { subscribersProjection } from './subscribers.js';

export const projections: Projection<any>[] = [servicesProjection, usersProjection, usernamesProjection, customersProjection, subscribersProjection];
