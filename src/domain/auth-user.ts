/**
 * Who a request acts as, once its credentials are checked: the user, the services it may act on
 * and the agent it is (if any). Commands and queries scope by it; the HTTP layer produces it.
 */
export interface AuthUser {
  id: number;
  username: string;
  name: string;
  admin: boolean;
  agentId: number | null;
  services: number[];
  customer: string;
}
