/**
 * Who a request acts as, once its credentials are checked: the user, the services it may act on
 * and the agent it is (if any). Commands and queries scope by it; the HTTP layer produces it.
 */
import type { UserProvisionedData } from './events.js';

/** The provisioned user's fields that scope a request, by `id` (the event's `userId`). */
export interface AuthUser extends Pick<UserProvisionedData, 'username' | 'name' | 'admin' | 'agentId' | 'services' | 'customer'> {
  id: number;
}
